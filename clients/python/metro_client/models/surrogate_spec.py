from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..models.surrogate_name import SurrogateName, check_surrogate_name
from ..types import UNSET, Unset

T = TypeVar("T", bound="SurrogateSpec")


@_attrs_define
class SurrogateSpec:
    """The surrogate loss Phi the cost-sensitive models are trained with, and its parameter (metro.surrogates)."""

    name: SurrogateName | Unset = UNSET
    """ The surrogate (case is ignored, and '-' read as '_'). Server default: "logistic" """
    k: float | Unset = UNSET
    """ The sigmoid's slope k in Phi(t) = 1 - tanh(k t) (sigmoid only). Default: 1 """
    rho: float | Unset = UNSET
    """ The margin's width rho in Phi(t) = clip(1 - t / rho, 0, 1) (rho_margin only). Default: 1 """

    def to_dict(self) -> dict[str, Any]:
        name: str | Unset = UNSET
        if not isinstance(self.name, Unset):
            name = self.name

        k = self.k

        rho = self.rho

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if name is not UNSET:
            field_dict["name"] = name
        if k is not UNSET:
            field_dict["k"] = k
        if rho is not UNSET:
            field_dict["rho"] = rho

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        _name = d.pop("name", UNSET)
        name: SurrogateName | Unset
        if isinstance(_name, Unset):
            name = UNSET
        else:
            name = check_surrogate_name(_name)

        k = d.pop("k", UNSET)

        rho = d.pop("rho", UNSET)

        surrogate_spec = cls(
            name=name,
            k=k,
            rho=rho,
        )

        if d:  # the schema forbids other fields (the server's 422 extra_forbidden)
            raise ValueError("unknown field(s) of SurrogateSpec: " + ", ".join(sorted(map(str, d))))
        return surrogate_spec
