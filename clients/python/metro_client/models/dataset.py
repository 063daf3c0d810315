from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="Dataset")


@_attrs_define
class Dataset:
    id: UUID
    uri: str
    filename: str
    format_: str
    size_bytes: int
    sha256: str
    n_rows: int | None
    n_columns: int | None
    columns: list[str] | None
    label_column: None | str
    """ The label column the upload was checked with (its label_column), if any """
    labels: list[bool | float | int | str] | None
    """ That column's two classes, [negative, positive] as read with the upload's positive_label (or the default); a
    job on this column is checked against them. A column of three classes or more (for a job with metric.average):
    its classes, in the order an averaged job's class_index counts them """
    created_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = str(self.id)

        uri = self.uri

        filename = self.filename

        format_ = self.format_

        size_bytes = self.size_bytes

        sha256 = self.sha256

        n_rows: int | None
        n_rows = self.n_rows

        n_columns: int | None
        n_columns = self.n_columns

        columns: list[str] | None
        if isinstance(self.columns, list):
            columns = self.columns

        else:
            columns = self.columns

        label_column: None | str
        label_column = self.label_column

        labels: list[bool | float | int | str] | None
        if isinstance(self.labels, list):
            labels = []
            for labels_type_0_item_data in self.labels:
                labels_type_0_item: bool | float | int | str
                labels_type_0_item = labels_type_0_item_data
                labels.append(labels_type_0_item)

        else:
            labels = self.labels

        created_at = self.created_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "uri": uri,
                "filename": filename,
                "format": format_,
                "size_bytes": size_bytes,
                "sha256": sha256,
                "n_rows": n_rows,
                "n_columns": n_columns,
                "columns": columns,
                "label_column": label_column,
                "labels": labels,
                "created_at": created_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = UUID(d.pop("id"))

        uri = d.pop("uri")

        filename = d.pop("filename")

        format_ = d.pop("format")

        size_bytes = d.pop("size_bytes")

        sha256 = d.pop("sha256")

        def _parse_n_rows(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        n_rows = _parse_n_rows(d.pop("n_rows"))

        def _parse_n_columns(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        n_columns = _parse_n_columns(d.pop("n_columns"))

        def _parse_columns(data: object) -> list[str] | None:
            if data is None:
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                columns_type_0 = cast(list[str], data)

                return columns_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None, data)

        columns = _parse_columns(d.pop("columns"))

        def _parse_label_column(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        label_column = _parse_label_column(d.pop("label_column"))

        def _parse_labels(data: object) -> list[bool | float | int | str] | None:
            if data is None:
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                labels_type_0 = []
                _labels_type_0 = data
                for labels_type_0_item_data in _labels_type_0:

                    def _parse_labels_type_0_item(data: object) -> bool | float | int | str:
                        return cast(bool | float | int | str, data)

                    labels_type_0_item = _parse_labels_type_0_item(labels_type_0_item_data)

                    labels_type_0.append(labels_type_0_item)

                return labels_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[bool | float | int | str] | None, data)

        labels = _parse_labels(d.pop("labels"))

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        dataset = cls(
            id=id,
            uri=uri,
            filename=filename,
            format_=format_,
            size_bytes=size_bytes,
            sha256=sha256,
            n_rows=n_rows,
            n_columns=n_columns,
            columns=columns,
            label_column=label_column,
            labels=labels,
            created_at=created_at,
        )

        dataset.additional_properties = d
        return dataset

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
