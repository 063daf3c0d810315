from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.out_of_range_column import OutOfRangeColumn


T = TypeVar("T", bound="OutOfRangeNotice")


@_attrs_define
class OutOfRangeNotice:
    """The request's values outside the model's training ranges: a per-feature range check,
    not a test of distribution shift (rows inside every range can still be unlike the
    training data).

    """

    message: str
    """ What was found, in words """
    columns: list[OutOfRangeColumn]
    """ Up to 5 columns with values outside, those with the most rows first """
    n_columns: int
    """ Every column with a value outside (columns lists 5) """
    n_rows: int
    """ Rows with at least one value outside """
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        message = self.message

        columns = []
        for columns_item_data in self.columns:
            columns_item = columns_item_data.to_dict()
            columns.append(columns_item)

        n_columns = self.n_columns

        n_rows = self.n_rows

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "message": message,
                "columns": columns,
                "n_columns": n_columns,
                "n_rows": n_rows,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.out_of_range_column import OutOfRangeColumn  # noqa: PLC0415

        d = dict(src_dict)
        message = d.pop("message")

        columns = []
        _columns = d.pop("columns")
        for columns_item_data in _columns:
            columns_item = OutOfRangeColumn.from_dict(columns_item_data)

            columns.append(columns_item)

        n_columns = d.pop("n_columns")

        n_rows = d.pop("n_rows")

        out_of_range_notice = cls(
            message=message,
            columns=columns,
            n_columns=n_columns,
            n_rows=n_rows,
        )

        out_of_range_notice.additional_properties = d
        return out_of_range_notice

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
