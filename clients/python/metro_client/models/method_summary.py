from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.split import Split, check_split
from ..types import UNSET, Unset

T = TypeVar("T", bound="MethodSummary")


@_attrs_define
class MethodSummary:
    """Mean and sample standard deviation (n - 1) over repeats; std is null for one repeat."""

    method: str
    split: Split
    n: int
    mean: float
    std: float | None
    constraint_means: list[float | None] | None | Unset = UNSET
    """ Under constraints: each constraint's mean value over the repeats on this split; null without """
    constraints_held: int | None | Unset = UNSET
    """ Under constraints: in how many of the n repeats every constraint held on this split """
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        method = self.method

        split: str = self.split

        n = self.n

        mean = self.mean

        std: float | None
        std = self.std

        constraint_means: list[float | None] | None | Unset
        if isinstance(self.constraint_means, Unset):
            constraint_means = UNSET
        elif isinstance(self.constraint_means, list):
            constraint_means = []
            for constraint_means_type_0_item_data in self.constraint_means:
                constraint_means_type_0_item: float | None
                constraint_means_type_0_item = constraint_means_type_0_item_data
                constraint_means.append(constraint_means_type_0_item)

        else:
            constraint_means = self.constraint_means

        constraints_held: int | None | Unset
        if isinstance(self.constraints_held, Unset):
            constraints_held = UNSET
        else:
            constraints_held = self.constraints_held

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
        if constraint_means is not UNSET:
            field_dict["constraint_means"] = constraint_means
        if constraints_held is not UNSET:
            field_dict["constraints_held"] = constraints_held

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

        def _parse_constraint_means(data: object) -> list[float | None] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError(f"got {type(data).__name__}")
                constraint_means_type_0 = []
                _constraint_means_type_0 = data
                for constraint_means_type_0_item_data in _constraint_means_type_0:

                    def _parse_constraint_means_type_0_item(data: object) -> float | None:
                        if data is None:
                            return data
                        return cast(float | None, data)

                    constraint_means_type_0_item = _parse_constraint_means_type_0_item(
                        constraint_means_type_0_item_data
                    )

                    constraint_means_type_0.append(constraint_means_type_0_item)

                return constraint_means_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[float | None] | None | Unset, data)

        constraint_means = _parse_constraint_means(d.pop("constraint_means", UNSET))

        def _parse_constraints_held(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        constraints_held = _parse_constraints_held(d.pop("constraints_held", UNSET))

        method_summary = cls(
            method=method,
            split=split,
            n=n,
            mean=mean,
            std=std,
            constraint_means=constraint_means,
            constraints_held=constraints_held,
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
