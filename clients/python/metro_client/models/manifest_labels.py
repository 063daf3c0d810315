from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="ManifestLabels")


@_attrs_define
class ManifestLabels:
    positive: bool | float | int | str
    """ The label h(x) >= 0 predicts """
    negative: bool | float | int | str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        positive: bool | float | int | str
        positive = self.positive

        negative: bool | float | int | str
        negative = self.negative

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "positive": positive,
                "negative": negative,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_positive(data: object) -> bool | float | int | str:
            return cast(bool | float | int | str, data)

        positive = _parse_positive(d.pop("positive"))

        def _parse_negative(data: object) -> bool | float | int | str:
            return cast(bool | float | int | str, data)

        negative = _parse_negative(d.pop("negative"))

        manifest_labels = cls(
            positive=positive,
            negative=negative,
        )

        manifest_labels.additional_properties = d
        return manifest_labels

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
