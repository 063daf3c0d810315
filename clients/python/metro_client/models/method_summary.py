from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.split import Split, check_split

T = TypeVar("T", bound="MethodSummary")


@_attrs_define
class MethodSummary:
    """Mean and sample standard deviation (n - 1) over repeats; std is null for one repeat."""

    method: str
    split: Split
    n: int
    mean: float
    std: float | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        method = self.method

        split: str = self.split

        n = self.n

        mean = self.mean

        std: float | None
        std = self.std

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "method": method,
                "split": split,
                "n": n,
                "mean": mean,
                "std": std,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        method = d.pop("method")

        split = check_split(d.pop("split"))

        n = d.pop("n")

        mean = d.pop("mean")

        def _parse_std(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        std = _parse_std(d.pop("std"))

        method_summary = cls(
            method=method,
            split=split,
            n=n,
            mean=mean,
            std=std,
        )

        method_summary.additional_properties = d
        return method_summary

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
