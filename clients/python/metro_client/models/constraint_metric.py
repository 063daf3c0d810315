from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="ConstraintMetric")


@_attrs_define
class ConstraintMetric:
    """A constraint's metric as the ratio <alpha, phi> / <beta, phi> on the basis
    (h*y, y, h, 1), read in its natural orientation (``greater_is_better``).

    """

    alpha: list[float]
    beta: list[float]
    greater_is_better: bool | Unset = UNSET
    """ How the ratio reads: true for a score (F1, recall: larger is better, minimized as its negative), false for a
    loss. Server default: false """
    zero_division: float | Unset = UNSET
    """ The score when the ratio is 0/0 (precision with nothing predicted positive), as in sklearn.metrics. Server
    default: 0.0 """
    name: str | Unset = UNSET
    """ The metric's name in results and manifests. Server default: "custom" """

    def to_dict(self) -> dict[str, Any]:
        alpha = self.alpha

        beta = self.beta

        greater_is_better = self.greater_is_better

        zero_division = self.zero_division

        name = self.name

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "alpha": alpha,
                "beta": beta,
            }
        )
        if greater_is_better is not UNSET:
            field_dict["greater_is_better"] = greater_is_better
        if zero_division is not UNSET:
            field_dict["zero_division"] = zero_division
        if name is not UNSET:
            field_dict["name"] = name

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        alpha = cast(list[float], d.pop("alpha"))

        beta = cast(list[float], d.pop("beta"))

        greater_is_better = d.pop("greater_is_better", UNSET)

        zero_division = d.pop("zero_division", UNSET)

        name = d.pop("name", UNSET)

        constraint_metric = cls(
            alpha=alpha,
            beta=beta,
            greater_is_better=greater_is_better,
            zero_division=zero_division,
            name=name,
        )

        if d:  # the schema forbids other fields (the server's 422 extra_forbidden)
            raise ValueError("unknown field(s) of ConstraintMetric: " + ", ".join(sorted(map(str, d))))
        return constraint_metric
