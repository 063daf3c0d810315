from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="ManifestFeatureRanges")


@_attrs_define
class ManifestFeatureRanges:
    """A tabular model's training ranges: each feature's least and greatest finite value over
    the rows the model was trained on, in the order of feature_names (null: no finite value).

    """

    min_: list[float | None]
    max_: list[float | None]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        min_ = []
        for min_item_data in self.min_:
            min_item: float | None
            min_item = min_item_data
            min_.append(min_item)

        max_ = []
        for max_item_data in self.max_:
            max_item: float | None
            max_item = max_item_data
            max_.append(max_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "min": min_,
                "max": max_,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        min_ = []
        _min_ = d.pop("min")
        for min_item_data in _min_:

            def _parse_min_item(data: object) -> float | None:
                if data is None:
                    return data
                return cast(float | None, data)

            min_item = _parse_min_item(min_item_data)

            min_.append(min_item)

        max_ = []
        _max_ = d.pop("max")
        for max_item_data in _max_:

            def _parse_max_item(data: object) -> float | None:
                if data is None:
                    return data
                return cast(float | None, data)

            max_item = _parse_max_item(max_item_data)

            max_.append(max_item)

        manifest_feature_ranges = cls(
            min_=min_,
            max_=max_,
        )

        manifest_feature_ranges.additional_properties = d
        return manifest_feature_ranges

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
