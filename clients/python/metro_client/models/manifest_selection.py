from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.selection_split import SelectionSplit, check_selection_split

if TYPE_CHECKING:
    from ..models.confusion_counts import ConfusionCounts


T = TypeVar("T", bound="ManifestSelection")


@_attrs_define
class ManifestSelection:
    """How the delivered model was chosen: repeat 0's choice (see RepeatChoice)."""

    selection_score: float | None
    selection_split: SelectionSplit
    n_folds: int | None
    selection_counts: ConfusionCounts | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.confusion_counts import ConfusionCounts  # noqa: PLC0415

        selection_score: float | None
        selection_score = self.selection_score

        selection_split: str = self.selection_split

        n_folds: int | None
        n_folds = self.n_folds

        selection_counts: dict[str, Any] | None
        if isinstance(self.selection_counts, ConfusionCounts):
            selection_counts = self.selection_counts.to_dict()
        else:
            selection_counts = self.selection_counts

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "selection_score": selection_score,
                "selection_split": selection_split,
                "n_folds": n_folds,
                "selection_counts": selection_counts,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.confusion_counts import ConfusionCounts  # noqa: PLC0415

        d = dict(src_dict)

        def _parse_selection_score(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        selection_score = _parse_selection_score(d.pop("selection_score"))

        selection_split = check_selection_split(d.pop("selection_split"))

        def _parse_n_folds(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        n_folds = _parse_n_folds(d.pop("n_folds"))

        def _parse_selection_counts(data: object) -> ConfusionCounts | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError(f"got {type(data).__name__}")
                selection_counts_type_0 = ConfusionCounts.from_dict(data)

                return selection_counts_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ConfusionCounts | None, data)

        selection_counts = _parse_selection_counts(d.pop("selection_counts"))

        manifest_selection = cls(
            selection_score=selection_score,
            selection_split=selection_split,
            n_folds=n_folds,
            selection_counts=selection_counts,
        )

        manifest_selection.additional_properties = d
        return manifest_selection

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
