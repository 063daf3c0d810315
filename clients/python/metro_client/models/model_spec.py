from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.model_kind import ModelKind, check_model_kind
from ..types import UNSET, Unset

T = TypeVar("T", bound="ModelSpec")


@_attrs_define
class ModelSpec:
    """Fields left out take the library's defaults."""

    kind: ModelKind | Unset = "linear"
    hidden: list[int] | None | Unset = UNSET
    """ mlp: the widths of its hidden layers (default [64]) """
    channels: list[int] | None | Unset = UNSET
    """ cnn3: the channels of its three conv layers (default [32, 64, 128]) """
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        kind: str | Unset = UNSET
        if not isinstance(self.kind, Unset):
            kind = self.kind

        hidden: list[int] | None | Unset
        if isinstance(self.hidden, Unset):
            hidden = UNSET
        elif isinstance(self.hidden, list):
            hidden = self.hidden

        else:
            hidden = self.hidden

        channels: list[int] | None | Unset
        if isinstance(self.channels, Unset):
            channels = UNSET
        elif isinstance(self.channels, list):
            channels = self.channels

        else:
            channels = self.channels

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if kind is not UNSET:
            field_dict["kind"] = kind
        if hidden is not UNSET:
            field_dict["hidden"] = hidden
        if channels is not UNSET:
            field_dict["channels"] = channels

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        _kind = d.pop("kind", UNSET)
        kind: ModelKind | Unset
        if isinstance(_kind, Unset):
            kind = UNSET
        else:
            kind = check_model_kind(_kind)

        def _parse_hidden(data: object) -> list[int] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                hidden_type_0 = cast(list[int], data)

                return hidden_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[int] | None | Unset, data)

        hidden = _parse_hidden(d.pop("hidden", UNSET))

        def _parse_channels(data: object) -> list[int] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                channels_type_0 = cast(list[int], data)

                return channels_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[int] | None | Unset, data)

        channels = _parse_channels(d.pop("channels", UNSET))

        model_spec = cls(
            kind=kind,
            hidden=hidden,
            channels=channels,
        )

        model_spec.additional_properties = d
        return model_spec

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
