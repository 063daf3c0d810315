from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="PredictRequest")


@_attrs_define
class PredictRequest:
    """Either ``instances`` (rows in the model's feature order) or ``columns`` + ``data`` (rows
    whose values are reordered by name to the model's features).

    """

    instances: list[list[float]] | None | Unset = UNSET
    """ Rows of numbers in the model's feature order (the manifest's feature_names); not with columns and data """
    columns: list[str] | None | Unset = UNSET
    """ The feature names of data's values, in any order (every feature of the model, each once); with data, not
    with instances """
    data: list[list[float]] | None | Unset = UNSET
    """ Rows of numbers in the order of columns; with columns, not with instances """

    def to_dict(self) -> dict[str, Any]:
        instances: list[list[float]] | None | Unset
        if isinstance(self.instances, Unset):
            instances = UNSET
        elif isinstance(self.instances, list):
            instances = []
            for instances_type_0_item_data in self.instances:
                instances_type_0_item = instances_type_0_item_data

                instances.append(instances_type_0_item)

        else:
            instances = self.instances

        columns: list[str] | None | Unset
        if isinstance(self.columns, Unset):
            columns = UNSET
        elif isinstance(self.columns, list):
            columns = self.columns

        else:
            columns = self.columns

        data: list[list[float]] | None | Unset
        if isinstance(self.data, Unset):
            data = UNSET
        elif isinstance(self.data, list):
            data = []
            for data_type_0_item_data in self.data:
                data_type_0_item = data_type_0_item_data

                data.append(data_type_0_item)

        else:
            data = self.data

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if instances is not UNSET:
            field_dict["instances"] = instances
        if columns is not UNSET:
            field_dict["columns"] = columns
        if data is not UNSET:
            field_dict["data"] = data

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_instances(data: object) -> list[list[float]] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError(f"got {type(data).__name__}")
                instances_type_0 = []
                _instances_type_0 = data
                for instances_type_0_item_data in _instances_type_0:
                    instances_type_0_item = cast(list[float], instances_type_0_item_data)

                    instances_type_0.append(instances_type_0_item)

                return instances_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[list[float]] | None | Unset, data)

        instances = _parse_instances(d.pop("instances", UNSET))

        def _parse_columns(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError(f"got {type(data).__name__}")
                columns_type_0 = cast(list[str], data)

                return columns_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        columns = _parse_columns(d.pop("columns", UNSET))

        def _parse_data(data: object) -> list[list[float]] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError(f"got {type(data).__name__}")
                data_type_0 = []
                _data_type_0 = data
                for data_type_0_item_data in _data_type_0:
                    data_type_0_item = cast(list[float], data_type_0_item_data)

                    data_type_0.append(data_type_0_item)

                return data_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[list[float]] | None | Unset, data)

        data = _parse_data(d.pop("data", UNSET))

        predict_request = cls(
            instances=instances,
            columns=columns,
            data=data,
        )

        if d:  # the schema forbids other fields (the server's 422 extra_forbidden)
            raise ValueError("unknown field(s) of PredictRequest: " + ", ".join(sorted(map(str, d))))
        return predict_request
