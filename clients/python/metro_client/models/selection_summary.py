from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.selection_split import SelectionSplit, check_selection_split

T = TypeVar("T", bound="SelectionSummary")


@_attrs_define
class SelectionSummary:
    """METRO's selection_score over the repeats: the quantity its searches chose by."""

    split: SelectionSplit
    n_folds: int | None
    n: int
    mean: float
    std: float | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        split: str = self.split

        n_folds: int | None
        n_folds = self.n_folds

        n = self.n

        mean = self.mean

        std: float | None
        std = self.std

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "split": split,
                "n_folds": n_folds,
                "n": n,
                "mean": mean,
                "std": std,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        split = check_selection_split(d.pop("split"))

        def _parse_n_folds(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        n_folds = _parse_n_folds(d.pop("n_folds"))

        n = d.pop("n")

        mean = d.pop("mean")

        def _parse_std(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        std = _parse_std(d.pop("std"))

        selection_summary = cls(
            split=split,
            n_folds=n_folds,
            n=n,
            mean=mean,
            std=std,
        )

        selection_summary.additional_properties = d
        return selection_summary

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
