from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="PresetParams")


@_attrs_define
class PresetParams:
    """A preset's parameters, e.g. ``{"beta": 2}`` for f_beta."""

    zero_division: float | Unset = UNSET
    """ The score when the ratio is 0/0, as sklearn.metrics' zero_division: precision when nothing is predicted
    positive, recall when no row is positive. 1 makes a precision floor one that flagging nothing meets (the false-
    discovery-rate convention; see docs/quality.md). Default: 0 """
    beta: float | Unset = UNSET
    """ How many times recall counts as much as precision: 2 for F2, 0.5 for F0.5 (f_beta only) """
    w_tp: float | Unset = UNSET
    """ The weight of the true positives (weighted_accuracy only). Default: 1 """
    w_tn: float | Unset = UNSET
    """ The weight of the true negatives (weighted_accuracy only). Default: 1 """
    w_fp: float | Unset = UNSET
    """ The weight of the false positives (weighted_accuracy only). Default: 1 """
    w_fn: float | Unset = UNSET
    """ The weight of the false negatives (weighted_accuracy only). Default: 1 """

    def to_dict(self) -> dict[str, Any]:
        zero_division = self.zero_division

        beta = self.beta

        w_tp = self.w_tp

        w_tn = self.w_tn

        w_fp = self.w_fp

        w_fn = self.w_fn

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if zero_division is not UNSET:
            field_dict["zero_division"] = zero_division
        if beta is not UNSET:
            field_dict["beta"] = beta
        if w_tp is not UNSET:
            field_dict["w_tp"] = w_tp
        if w_tn is not UNSET:
            field_dict["w_tn"] = w_tn
        if w_fp is not UNSET:
            field_dict["w_fp"] = w_fp
        if w_fn is not UNSET:
            field_dict["w_fn"] = w_fn

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        zero_division = d.pop("zero_division", UNSET)

        beta = d.pop("beta", UNSET)

        w_tp = d.pop("w_tp", UNSET)

        w_tn = d.pop("w_tn", UNSET)

        w_fp = d.pop("w_fp", UNSET)

        w_fn = d.pop("w_fn", UNSET)

        preset_params = cls(
            zero_division=zero_division,
            beta=beta,
            w_tp=w_tp,
            w_tn=w_tn,
            w_fp=w_fp,
            w_fn=w_fn,
        )

        if d:  # the schema forbids other fields (the server's 422 extra_forbidden)
            raise ValueError("unknown field(s) of PresetParams: " + ", ".join(sorted(map(str, d))))
        return preset_params
