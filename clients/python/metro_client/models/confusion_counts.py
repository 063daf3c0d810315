from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="ConfusionCounts")


@_attrs_define
class ConfusionCounts:
    tp: int
    fp: int
    fn: int
    tn: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        tp = self.tp

        fp = self.fp

        fn = self.fn

        tn = self.tn

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "tp": tp,
                "fp": fp,
                "fn": fn,
                "tn": tn,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        tp = d.pop("tp")

        fp = d.pop("fp")

        fn = d.pop("fn")

        tn = d.pop("tn")

        confusion_counts = cls(
            tp=tp,
            fp=fp,
            fn=fn,
            tn=tn,
        )

        confusion_counts.additional_properties = d
        return confusion_counts

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
