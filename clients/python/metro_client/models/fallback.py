from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.fallback_reason import FallbackReason, check_fallback_reason
from ..types import UNSET, Unset

T = TypeVar("T", bound="Fallback")


@_attrs_define
class Fallback:
    """The safeguard's fallback delivered in place of the search's choice (docs/algorithms.md,
    "Selection under thin evidence"): plain ERM's lambda, its threshold tuned among the
    thresholds the held-out rows back.

    """

    reason: FallbackReason
    """ unsupported: the choice rested on too few held-out true positives or predicted positives; within_noise: the
    held-out rows could not tell it from the fallback with the job's search.shrink_confidence """
    choice_lambda: float | None
    """ The lambda the search had chosen """
    choice_score: float | None
    """ The search's choice's metric on selection_split (refined, where the refinement was kept), before the
    fallback replaced it """
    message: str
    """ Why the fallback was delivered, in the words the CLI and the dashboard show """
    win_probability: float | None | Unset = UNSET
    """ within_noise: the paired bootstrap's probability, over the held-out rows, that the choice beats the fallback
    (null: not computed) """
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        reason: str = self.reason

        choice_lambda: float | None
        choice_lambda = self.choice_lambda

        choice_score: float | None
        choice_score = self.choice_score

        message = self.message

        win_probability: float | None | Unset
        if isinstance(self.win_probability, Unset):
            win_probability = UNSET
        else:
            win_probability = self.win_probability

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "reason": reason,
                "choice_lambda": choice_lambda,
                "choice_score": choice_score,
                "message": message,
            }
        )
        if win_probability is not UNSET:
            field_dict["win_probability"] = win_probability

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        reason = check_fallback_reason(d.pop("reason"))

        def _parse_choice_lambda(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        choice_lambda = _parse_choice_lambda(d.pop("choice_lambda"))

        def _parse_choice_score(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        choice_score = _parse_choice_score(d.pop("choice_score"))

        message = d.pop("message")

        def _parse_win_probability(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        win_probability = _parse_win_probability(d.pop("win_probability", UNSET))

        fallback = cls(
            reason=reason,
            choice_lambda=choice_lambda,
            choice_score=choice_score,
            message=message,
            win_probability=win_probability,
        )

        fallback.additional_properties = d
        return fallback

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
