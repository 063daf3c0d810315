from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.choice_warning_code import ChoiceWarningCode, check_choice_warning_code

T = TypeVar("T", bound="ChoiceWarning")


@_attrs_define
class ChoiceWarning:
    """Something about a repeat's choice to look at before trusting it."""

    code: ChoiceWarningCode
    """ lambda_at_grid_edge: the trained lambda is the first or last grid point where that end is search.lambda_min
    or lambda_max (the best may lie beyond); predicts_one_class: the chosen classifier predicts one class on the
    held-out rows, or the delivered model one class on the rows it was refit on (a multi-class model: never this
    class, which the held-out argmax predicted); few_true_positives: its score rests on fewer than 5 true positives;
    constraints_not_met: no fit met every constraint on the held-out rows, and the one that missed them by the least
    (with a confidence asked for: the one most likely to meet them on new data) was kept; no_supported_choice: no
    choice rests on enough held-out evidence (5 true positives, a tenth of the positives predicted positive), not
    even the plain-ERM fallback delivered instead: the data cannot support a choice; no_signal: a paired bootstrap
    over the held-out rows does not find the chosen classifier better than predicting every row one class with
    probability 0.95: its lead may be chance; id_like_feature (on the delivered model's choice): a feature holds a
    different integer on every row, filling a range or named as an id (txn_id, customerId), as an id or a row number
    does, and the model may read the rows' order from it (dataset.ignore_columns leaves it out); offsets_not_tuned
    (a micro-averaged multi-label job's label): its out-of-fold margins could not be rebuilt from the folds, so the
    labels' offsets were not tuned together and each keeps its own threshold; constraint_uncertain: a constraint the
    choice met (a proportion: precision, recall, false-positive rate) rests on so few held-out rows that a new
    sample of one fold's size meets it with a probability below the confidence it was judged at (computed exactly;
    the message gives it) """
    message: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        code: str = self.code

        message = self.message

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "code": code,
                "message": message,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        code = check_choice_warning_code(d.pop("code"))

        message = d.pop("message")

        choice_warning = cls(
            code=code,
            message=message,
        )

        choice_warning.additional_properties = d
        return choice_warning

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
