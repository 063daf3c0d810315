from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="DatasetRef")


@_attrs_define
class DatasetRef:
    uri: str
    """ dataset://<id> (an upload), file:///... under a data root, builtin://name, s3://bucket/key or
    https://host/path """
    label_column: str | Unset = UNSET
    """ The column of the labels: two classes, or several with metric.average. Server default: "y" """
    label_columns: list[str] | None | Unset = UNSET
    """ Multi-label data: the 0/1 label columns, one per label, at least two (needs metric.average; label_column is
    then not read). Null: one label column. Server default: null """
    ignore_columns: list[str] | None | Unset = UNSET
    """ Columns of a CSV or Parquet table that are not features (an id, a note, a date, text): left out of training,
    whatever they hold. Null: every column but the label column(s) is a feature, and must be numeric. Server
    default: null """
    positive_label: bool | float | int | None | str | Unset = UNSET
    """ The label value of the positive class. When omitted it is inferred only where the labels say which class is
    positive (0/1, -1/+1, false/true, also as text); other labels need it. With an upload that recorded this
    column's labels, a value that is not one of them is a 422. Server default: null """

    def to_dict(self) -> dict[str, Any]:
        uri = self.uri

        label_column = self.label_column

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

        positive_label: bool | float | int | None | str | Unset
        if isinstance(self.positive_label, Unset):
            positive_label = UNSET
        else:
            positive_label = self.positive_label

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "uri": uri,
            }
        )
        if label_column is not UNSET:
            field_dict["label_column"] = label_column
        if label_columns is not UNSET:
            field_dict["label_columns"] = label_columns
        if ignore_columns is not UNSET:
            field_dict["ignore_columns"] = ignore_columns
        if positive_label is not UNSET:
            field_dict["positive_label"] = positive_label

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        uri = d.pop("uri")

        label_column = d.pop("label_column", UNSET)

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

        def _parse_positive_label(data: object) -> bool | float | int | None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | float | int | None | str | Unset, data)

        positive_label = _parse_positive_label(d.pop("positive_label", UNSET))

        dataset_ref = cls(
            uri=uri,
            label_column=label_column,
            label_columns=label_columns,
            ignore_columns=ignore_columns,
            positive_label=positive_label,
        )

        if d:  # the schema forbids other fields (the server's 422 extra_forbidden)
            raise ValueError("unknown field(s) of DatasetRef: " + ", ".join(sorted(map(str, d))))
        return dataset_ref
