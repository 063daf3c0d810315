from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.model_kind import ModelKind, check_model_kind
from ..types import UNSET, Unset

T = TypeVar("T", bound="ModelSpec")


@_attrs_define
class ModelSpec:
    """The hypothesis set (metro.models.ModelSpec): its kind and the sizes that kind uses. Fields left out take the
    defaults shown.

    """

    kind: ModelKind | Unset = UNSET
    """ linear, mlp or cnn3 (in any case). Server default: "linear" """
    hidden: list[int] | Unset = UNSET
    """ mlp: the widths of its hidden layers. Server default: [64] """
    channels: list[int] | Unset = UNSET
    """ cnn3: the channels of its three conv layers. Server default: [32, 64, 128] """

    def to_dict(self) -> dict[str, Any]:
        kind: str | Unset = UNSET
        if not isinstance(self.kind, Unset):
            kind = self.kind

        hidden: list[int] | Unset = UNSET
        if not isinstance(self.hidden, Unset):
            hidden = self.hidden

        channels: list[int] | Unset = UNSET
        if not isinstance(self.channels, Unset):
            channels = self.channels

        field_dict: dict[str, Any] = {}

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

        hidden = cast(list[int], d.pop("hidden", UNSET))

        channels = cast(list[int], d.pop("channels", UNSET))

        model_spec = cls(
            kind=kind,
            hidden=hidden,
            channels=channels,
        )

        if d:  # the schema forbids other fields (the server's 422 extra_forbidden)
            raise ValueError("unknown field(s) of ModelSpec: " + ", ".join(sorted(map(str, d))))
        return model_spec
