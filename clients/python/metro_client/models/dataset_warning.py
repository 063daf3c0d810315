from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="DatasetWarning")


@_attrs_define
class DatasetWarning:
    """Something the upload's check found in the data that a job on it should not miss."""

    code: Literal["id_like_feature"]
    """ id_like_feature: a feature holds a different integer on every row, filling a range or named as an id
    (txn_id, customerId), as an id or a row number does; a model may read the rows' order from it (a job's
    dataset.ignore_columns, or the upload's, leaves it out) """
    message: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        code = self.code

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
        code = cast(Literal["id_like_feature"], d.pop("code"))
        if code != "id_like_feature":
            raise ValueError(f"code must match const 'id_like_feature', got '{code}'")

        message = d.pop("message")

        dataset_warning = cls(
            code=code,
            message=message,
        )

        dataset_warning.additional_properties = d
        return dataset_warning

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
