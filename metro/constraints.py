"""Constraints on a second ratio metric: "recall at least 0.9", "false-positive rate at most 0.01".

A constraint bounds a ratio r(h) = (u . C) / (v . C) of the confusion cells C = (tp, fp, fn, tn)
(a preset or any alpha/beta, read in its natural orientation: recall itself, not minus recall).
With a positive denominator v . C > 0,

    r(h) >= b   <=>   g(C) = (u - b v) . C >= 0        (at_least)
    r(h) <= b   <=>   g(C) = (b v - u) . C >= 0        (at_most)

so every constraint is one linear inequality g(C) >= 0 in the cells. The Lagrangian of
"minimize the metric's ratio loss L = (a . C) / (d . C) subject to g_j(C) >= 0" at a given lambda
and multipliers mu_j >= 0 is

    (a - lambda d) . C - sum_j mu_j g_j(C),

again linear in the cells: a cost-sensitive problem of the same kind as the unconstrained
search's, with the cell weights ``a - lambda d - sum_j mu_j g_j`` (:func:`metro.costs.cost_tables`
takes the extra term as ``penalties``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from metro.metrics import MetricSpec, PriorDependentMetric, get_metric

__all__ = ["SENSES", "Constraint", "get_constraint", "get_constraints"]

SENSES: tuple[str, ...] = ("at_least", "at_most")
# A constraint holds when its slack is at least -_SLACK_TOL (round-off of count ratios).
_SLACK_TOL = 1e-12


@dataclass(frozen=True, eq=False)
class Constraint:
    """``metric`` (a ratio, natural orientation) ``at_least`` / ``at_most`` ``bound``."""

    metric: MetricSpec
    sense: str
    bound: float

    def __post_init__(self) -> None:
        if not isinstance(self.metric, MetricSpec):
            raise ValueError(
                f"a constraint's metric must be a MetricSpec, got {type(self.metric).__name__}"
            )
        if self.sense not in SENSES:
            raise ValueError(f"unknown constraint sense {self.sense!r}; use at_least or at_most")
        bound = float(self.bound)
        if not math.isfinite(bound):
            raise ValueError(f"a constraint's bound must be finite, got {self.bound!r}")
        object.__setattr__(self, "bound", bound)

    @property
    def name(self) -> str:
        word = ">=" if self.sense == "at_least" else "<="
        return f"{self.metric.name} {word} {self.bound:g}"

    @property
    def score_numerator_cells(self) -> np.ndarray:
        """The numerator u of the metric in its natural orientation, on (tp, fp, fn, tn)."""
        sign = -1.0 if self.metric.greater_is_better else 1.0
        return sign * self.metric.numerator_cells

    @property
    def cells(self) -> np.ndarray:
        """g on (tp, fp, fn, tn): the constraint holds where g . C >= 0 (denominator > 0)."""
        g = self.score_numerator_cells - self.bound * self.metric.denominator_cells
        return g if self.sense == "at_least" else -g

    def value(self, cells: np.ndarray) -> float:
        """The constrained metric on confusion fractions (``zero_division`` where 0/0)."""
        return self.metric.score_from_loss(self.metric.loss_from_fractions(cells))

    def slack(self, cells: np.ndarray) -> float:
        """How far the constraint is from binding: >= 0 where it holds, the shortfall (< 0)
        where it does not, in the metric's own units (recall 0.85 against at_least 0.9: -0.05)."""
        v = self.value(cells)
        return v - self.bound if self.sense == "at_least" else self.bound - v

    def slacks(self, cells: np.ndarray) -> np.ndarray:
        """:meth:`slack` for every row of ``cells`` ([M, 4]) at once."""
        c = np.atleast_2d(np.asarray(cells, dtype=np.float64))
        num = c @ self.score_numerator_cells
        den = c @ self.metric.denominator_cells
        zero = np.abs(den) <= 1e-12
        value = np.where(zero, self.metric.zero_division, num / np.where(zero, 1.0, den))
        return value - self.bound if self.sense == "at_least" else self.bound - value

    def holds(self, cells: np.ndarray) -> bool:
        return self.slack(cells) >= -_SLACK_TOL

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric.to_dict(), self.sense: self.bound}


def get_constraint(spec: Constraint | Mapping[str, Any], y: Any = None) -> Constraint:
    """A constraint from ``{"metric": <preset name or {"alpha", "beta"}>, "at_least": b}`` (or
    ``"at_most"``; preset parameters under ``"params"``). Prior-dependent metrics (balanced
    accuracy) resolve against the labels ``y``."""
    if isinstance(spec, Constraint):
        return spec
    if not isinstance(spec, Mapping):
        raise ValueError(
            "a constraint must be a mapping such as {'metric': 'recall', 'at_least': 0.9}"
        )
    unknown = set(spec) - {"metric", "params", *SENSES}
    if unknown:
        raise ValueError(
            f"unknown constraint field(s) {sorted(unknown)}; "
            "expected metric, at_least or at_most, and params"
        )
    senses = [s for s in SENSES if s in spec]
    if len(senses) != 1:
        raise ValueError("a constraint needs exactly one of at_least and at_most")
    if "metric" not in spec:
        raise ValueError("a constraint needs a metric (a preset name or alpha/beta)")
    metric = _metric(spec["metric"], spec.get("params") or {})
    if isinstance(metric, PriorDependentMetric):
        metric = metric.resolve(y)
    bound = spec[senses[0]]
    if isinstance(bound, bool) or not isinstance(bound, int | float):
        raise ValueError(f"{senses[0]} must be a number, got {bound!r}")
    return Constraint(metric=metric, sense=senses[0], bound=float(bound))


def get_constraints(
    specs: Sequence[Constraint | Mapping[str, Any]] | None, y: Any = None
) -> tuple[Constraint, ...]:
    if specs is None:
        return ()
    if isinstance(specs, Mapping | str) or not isinstance(specs, Sequence):
        raise ValueError("constraints must be a list of constraints")
    return tuple(get_constraint(s, y) for s in specs)


def _metric(value: Any, params: Mapping[str, Any]) -> MetricSpec | PriorDependentMetric:
    if isinstance(value, MetricSpec | PriorDependentMetric):
        return value
    if isinstance(value, str):
        return get_metric(value, **dict(params))
    if isinstance(value, Mapping) and {"alpha", "beta"} <= set(value):
        extra = set(value) - {"alpha", "beta", "name", "greater_is_better", "zero_division"}
        if extra:
            raise ValueError(f"unknown metric field(s) {sorted(extra)} in a constraint")
        return MetricSpec(
            alpha=np.asarray(value["alpha"], dtype=np.float64),
            beta=np.asarray(value["beta"], dtype=np.float64),
            name=str(value.get("name", "custom")),
            greater_is_better=bool(value.get("greater_is_better", False)),
            zero_division=float(value.get("zero_division", 0.0)),
        )
    raise ValueError(
        "a constraint's metric must be a preset name or {'alpha': [...], 'beta': [...]}"
    )
