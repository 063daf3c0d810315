from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.dataset_warning import DatasetWarning


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
    label_columns: list[str] | None | Unset = UNSET
    """ Or the several 0/1 label columns the upload was checked with, as a multi-label job (dataset.label_columns)
    reads them """
    ignore_columns: list[str] | None | Unset = UNSET
    """ The columns the upload's check left out of the features (its ignore_columns); a job leaves out only those
    its own dataset.ignore_columns names """
    warnings: list[DatasetWarning] | Unset = UNSET
    """ What the upload's check (with a label column) found in the features; empty where it found nothing, or
    checked only the file's shape """
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

        label_columns: list[str] | None | Unset
        if isinstance(self.label_columns, Unset):
            label_columns = UNSET
        elif isinstance(self.label_columns, list):
            label_columns = self.label_columns

        else:
            label_columns = self.label_columns

        ignore_columns: list[str] | None | Unset
        if isinstance(self.ignore_columns, Unset):
            ignore_columns = UNSET
        elif isinstance(self.ignore_columns, list):
            ignore_columns = self.ignore_columns

        else:
            ignore_columns = self.ignore_columns

        warnings: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.warnings, Unset):
            warnings = []
            for warnings_item_data in self.warnings:
                warnings_item = warnings_item_data.to_dict()
                warnings.append(warnings_item)

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
        if label_columns is not UNSET:
            field_dict["label_columns"] = label_columns
        if ignore_columns is not UNSET:
            field_dict["ignore_columns"] = ignore_columns
        if warnings is not UNSET:
            field_dict["warnings"] = warnings

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.dataset_warning import DatasetWarning  # noqa: PLC0415

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
                    raise TypeError(f"got {type(data).__name__}")
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
                    raise TypeError(f"got {type(data).__name__}")
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

        def _parse_label_columns(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError(f"got {type(data).__name__}")
                label_columns_type_0 = cast(list[str], data)

                return label_columns_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        label_columns = _parse_label_columns(d.pop("label_columns", UNSET))

        def _parse_ignore_columns(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError(f"got {type(data).__name__}")
                ignore_columns_type_0 = cast(list[str], data)

                return ignore_columns_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        ignore_columns = _parse_ignore_columns(d.pop("ignore_columns", UNSET))

        _warnings = d.pop("warnings", UNSET)
        warnings: list[DatasetWarning] | Unset = UNSET
        if _warnings is not UNSET:
            warnings = []
            for warnings_item_data in _warnings:
                warnings_item = DatasetWarning.from_dict(warnings_item_data)

                warnings.append(warnings_item)

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
            label_columns=label_columns,
            ignore_columns=ignore_columns,
            warnings=warnings,
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
