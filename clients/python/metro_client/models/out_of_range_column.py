from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="OutOfRangeColumn")


@_attrs_define
class OutOfRangeColumn:
    """A feature with values outside the range the model was trained on."""

    column: None | str
    """ The feature's name (null where the model was trained without names) """
    index: int
    """ The feature's position in the model's feature order """
    rows_outside: int
    """ How many of the request's rows are outside """
    training_min: float
    """ The least value of the rows it was trained on """
    training_max: float
    """ The greatest value of the rows it was trained on """
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        column: None | str
        column = self.column

        index = self.index

        rows_outside = self.rows_outside

        training_min = self.training_min

        training_max = self.training_max

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "column": column,
                "index": index,
                "rows_outside": rows_outside,
                "training_min": training_min,
                "training_max": training_max,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_column(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        column = _parse_column(d.pop("column"))

        index = d.pop("index")

        rows_outside = d.pop("rows_outside")

        training_min = d.pop("training_min")

        training_max = d.pop("training_max")

        out_of_range_column = cls(
            column=column,
            index=index,
            rows_outside=rows_outside,
            training_min=training_min,
            training_max=training_max,
        )

        out_of_range_column.additional_properties = d
        return out_of_range_column

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
