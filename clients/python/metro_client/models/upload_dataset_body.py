from __future__ import annotations

from collections.abc import Mapping
from io import BytesIO
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from .. import types
from ..types import UNSET, File, Unset

T = TypeVar("T", bound="UploadDatasetBody")


@_attrs_define
class UploadDatasetBody:
    file: File
    """ The data file, its format told by its name's suffix: .csv, .csv.gz, .parquet (or .pq) or .npz; any other
    suffix is refused with a 415 """
    label_column: None | str | Unset = UNSET
    """ When given, the file is loaded as a job will load it and refused now if that would fail """
    positive_label: None | str | Unset = UNSET
    ignore_columns: list[str] | None | Unset = UNSET
    """ Columns that are not features (an id, a note, text), left out of the check with label_column as a job's
    dataset.ignore_columns leaves them out of training; one field per column """
    label_columns: list[str] | None | Unset = UNSET
    """ Instead of label_column: the several 0/1 label columns of a multi-label job (dataset.label_columns), one
    field per column; the file is loaded as such a job loads it and refused now if that would fail """
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        file = self.file.to_tuple()

        label_column: None | str | Unset
        if isinstance(self.label_column, Unset):
            label_column = UNSET
        else:
            label_column = self.label_column

        positive_label: None | str | Unset
        if isinstance(self.positive_label, Unset):
            positive_label = UNSET
        else:
            positive_label = self.positive_label

        ignore_columns: list[str] | None | Unset
        if isinstance(self.ignore_columns, Unset):
            ignore_columns = UNSET
        elif isinstance(self.ignore_columns, list):
            ignore_columns = self.ignore_columns

        else:
            ignore_columns = self.ignore_columns

        label_columns: list[str] | None | Unset
        if isinstance(self.label_columns, Unset):
            label_columns = UNSET
        elif isinstance(self.label_columns, list):
            label_columns = self.label_columns

        else:
            label_columns = self.label_columns

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "file": file,
            }
        )
        if label_column is not UNSET:
            field_dict["label_column"] = label_column
        if positive_label is not UNSET:
            field_dict["positive_label"] = positive_label
        if ignore_columns is not UNSET:
            field_dict["ignore_columns"] = ignore_columns
        if label_columns is not UNSET:
            field_dict["label_columns"] = label_columns

        return field_dict

    def to_multipart(self) -> types.RequestFiles:
        files: types.RequestFiles = []

        files.append(("file", self.file.to_tuple()))

        if not isinstance(self.label_column, Unset):
            if isinstance(self.label_column, str):
                files.append(("label_column", (None, str(self.label_column).encode(), "text/plain")))
            else:
                files.append(("label_column", (None, str(self.label_column).encode(), "text/plain")))

        if not isinstance(self.positive_label, Unset):
            if isinstance(self.positive_label, str):
                files.append(("positive_label", (None, str(self.positive_label).encode(), "text/plain")))
            else:
                files.append(("positive_label", (None, str(self.positive_label).encode(), "text/plain")))

        if not isinstance(self.ignore_columns, Unset):
            if isinstance(self.ignore_columns, list):
                for ignore_columns_type_0_item_element in self.ignore_columns:
                    files.append(
                        ("ignore_columns", (None, str(ignore_columns_type_0_item_element).encode(), "text/plain"))
                    )
            else:
                files.append(("ignore_columns", (None, str(self.ignore_columns).encode(), "text/plain")))

        if not isinstance(self.label_columns, Unset):
            if isinstance(self.label_columns, list):
                for label_columns_type_0_item_element in self.label_columns:
                    files.append(
                        ("label_columns", (None, str(label_columns_type_0_item_element).encode(), "text/plain"))
                    )
            else:
                files.append(("label_columns", (None, str(self.label_columns).encode(), "text/plain")))

        for prop_name, prop in self.additional_properties.items():
            files.append((prop_name, (None, str(prop).encode(), "text/plain")))

        return files

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        file = File(payload=BytesIO(d.pop("file")))

        def _parse_label_column(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        label_column = _parse_label_column(d.pop("label_column", UNSET))

        def _parse_positive_label(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        positive_label = _parse_positive_label(d.pop("positive_label", UNSET))

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

        upload_dataset_body = cls(
            file=file,
            label_column=label_column,
            positive_label=positive_label,
            ignore_columns=ignore_columns,
            label_columns=label_columns,
        )

        upload_dataset_body.additional_properties = d
        return upload_dataset_body

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
