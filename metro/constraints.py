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
from statistics import NormalDist
from typing import Any

import numpy as np

from metro.metrics import MetricSpec, PriorDependentMetric, get_metric, spec_display_name
from metro.options import option

__all__ = [
    "DEFAULT_CONFIDENCE",
    "SENSES",
    "SLACK_TOL",
    "Constraint",
    "asks_confidence",
    "constraint_metric",
    "get_constraint",
    "get_constraints",
    "joint_log_certainties",
    "judged_confidence",
]

SENSES: tuple[str, ...] = ("at_least", "at_most")
# The confidence a constraint without one is judged at on held-out rows (for a new sample of one
# fold's size): the smallest margin measured to make the delivered floor hold on new data at
# least as often as threshold tuning's (bench/constrained_selection.py, docs/quality.md).
DEFAULT_CONFIDENCE = 0.55
# A constraint holds when its slack is at least -SLACK_TOL (round-off of count ratios).
SLACK_TOL = 1e-12
# Below this many expected trials in a new sample, the chance that a proportion's bound holds
# there is computed exactly (Constraint.log_certainties), not by the normal approximation, which
# takes a precision judged on two predicted positives for a coin toss.
_EXACT_TRIALS = 50.0
# Computed chances of holding on a new sample, per (sense, bound, zero_division, rows, new rows):
# {(k, m): log probability} (Constraint._predicted_log_certainties).
_PREDICTED: dict[tuple[str, float, float, int, int], dict[tuple[float, float], float]] = {}


@dataclass(frozen=True, eq=False)
class Constraint:
    """``metric`` (a ratio, natural orientation) ``at_least`` / ``at_most`` ``bound``.

    With ``confidence`` (e.g. 0.9) a choice must meet the bound with that one-sided confidence on
    the rows it is judged on, not just on average: a one-sided confidence bound of the ratio
    (lower for ``at_least``, upper for ``at_most``) must clear it. Where the metric is a
    proportion of rows (its numerator counts a subset of the cells its denominator counts, each
    once: recall, precision, false-positive rate, specificity, accuracy) the bound is the exact
    Clopper-Pearson one of k successes in m trials (k and m the counts of the numerator's and
    the denominator's cells); it never covers less than asked, where the normal approximation
    did at small counts (a precision floor judged on 12 predicted positives). Any other ratio
    keeps the delta method's bound, the estimate minus z standard errors with
    sqrt(sum_c p_c (u_c - r v_c)^2 / n) / (v . p) over the cell fractions p of n rows. A floor
    chosen without confidence holds on new data only about half the time, since the best choice
    sits right at the bound.
    """

    metric: MetricSpec
    sense: str
    bound: float
    confidence: float | None = option(
        None,
        "In [0.5, 1): the bound must hold with this one-sided confidence on a new sample the "
        "size of one fold's held-out rows, not just on average; null: judged at "
        f"{DEFAULT_CONFIDENCE:g}",
        ge=0.5,
        lt=1.0,
    )

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
        low, high = self.score_range
        if not low - 1e-12 <= bound <= high + 1e-12:
            # recall >= 1.5 ran the whole search and ended in constraints_not_met
            never = (self.sense == "at_least") == (bound > high)
            raise ValueError(
                f"{self.sense} {bound:g} is outside the range of "
                f"{spec_display_name(self.metric)}, [{low:g}, {high:g}]: "
                + ("no classifier can meet it" if never else "every classifier meets it")
            )
        if self.confidence is not None:
            c = self.confidence
            if isinstance(c, bool) or not isinstance(c, int | float) or not 0.5 <= c < 1.0:
                raise ValueError(f"confidence must be a number in [0.5, 1), got {c!r}")
            object.__setattr__(self, "confidence", float(c))
            if c > 0.5 and self.at_range_end:
                raise ValueError(
                    f"{self.name} cannot be certified at confidence {c:g}: only a classifier "
                    "right on every row the metric counts meets it on new data, and no "
                    "held-out sample shows that with more than even odds; give a bound inside "
                    "(0, 1), or confidence 0.5 (judged on the held-out rows alone)"
                )

    @property
    def at_range_end(self) -> bool:
        """Whether the bound is a proportion's best value (recall >= 1, false-positive rate <=
        0): met on a new sample only by a classifier right on every row it counts, which a
        margin for the sample's noise can never certify (the Jeffreys centre of k = m is below
        1). Such a bound is judged on the held-out estimate (:func:`judged_confidence`)."""
        if not self.is_proportion:
            return False
        if self.sense == "at_least":
            return self.bound >= 1.0 - SLACK_TOL
        return self.bound <= SLACK_TOL

    @property
    def score_range(self) -> tuple[float, float]:
        """The lowest and highest values the metric takes (natural orientation)."""
        low, high = sorted(self.metric.score_from_loss(v) + 0.0 for v in self.metric.lambda_range)
        return float(low), float(high)

    @property
    def symbol(self) -> str:
        """``>=`` for at_least, ``<=`` for at_most."""
        return ">=" if self.sense == "at_least" else "<="

    @property
    def name(self) -> str:
        """``precision >= 0.7``; ``precision(zero_division=1) >= 0.7`` under the other
        convention for 0/0, which a floor's meaning depends on."""
        zero_division = self.metric.zero_division
        metric = self.metric.name + (f"(zero_division={zero_division:g})" if zero_division else "")
        return f"{metric} {self.symbol} {self.bound:g}"

    @property
    def missed_by_flagging_nothing(self) -> bool:
        """Whether flagging no row is 0/0 for this constraint's metric (its denominator weighs
        only tp and fp, as precision's) and its ``zero_division`` misses the bound: a floor that
        the classifier predicting nothing positive would meet under the other convention."""
        den = self.metric.denominator_cells  # (tp, fp, fn, tn)
        if den[2] != 0 or den[3] != 0:
            return False
        empty = self.metric.zero_division
        return not (empty >= self.bound if self.sense == "at_least" else empty <= self.bound)

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

    def slacks(
        self, cells: np.ndarray, n: int | None = None, *, new_fraction: float | None = None
    ) -> np.ndarray:
        """:meth:`slack` for every row of ``cells`` ([M, 4]) at once; with ``n`` (the rows the
        fractions come from) and a ``confidence``, the slack of the confidence bound instead:
        of the ratio itself (exact for proportions) or, with ``new_fraction``, of its value on a
        new sample ``new_fraction`` times as large (:meth:`prediction_bounds`)."""
        if new_fraction is not None and not (
            isinstance(new_fraction, int | float)
            and not isinstance(new_fraction, bool)
            and 0.0 < new_fraction < math.inf
        ):
            raise ValueError(f"new_fraction must be a positive number, got {new_fraction!r}")
        c = np.atleast_2d(np.asarray(cells, dtype=np.float64))
        value, zero = self.metric.scores_and_zeros(c)
        safe = np.where(zero, 1.0, c @ self.metric.denominator_cells)
        if self.confidence is not None and n is not None and new_fraction is not None:
            value = self.prediction_bounds(c, int(n), new_fraction)
        elif self.confidence is not None and n is not None:
            if self.is_proportion:
                value = self._exact_bound(c, int(n))
            else:
                z = NormalDist().inv_cdf(self.confidence)
                d = (
                    self.score_numerator_cells[None, :]
                    - value[:, None] * (self.metric.denominator_cells[None, :])
                )
                se = np.sqrt((c * d**2).sum(axis=1) / max(int(n), 1)) / safe
                value = value - z * se if self.sense == "at_least" else value + z * se
        return value - self.bound if self.sense == "at_least" else self.bound - value

    @property
    def is_proportion(self) -> bool:
        """Whether the metric is k / m with k and m counts of rows: numerator and denominator
        weigh each cell 0 or 1, and the numerator's cells are among the denominator's."""
        u, v = self.score_numerator_cells, self.metric.denominator_cells
        binary = bool(np.isin(u, (0.0, 1.0)).all() and np.isin(v, (0.0, 1.0)).all())
        return binary and bool((u <= v).all()) and bool(u.any())

    def _exact_bound(self, fractions: np.ndarray, n: int) -> np.ndarray:
        """The one-sided Clopper-Pearson bound at ``confidence`` of each row of cell fractions
        of ``n`` rows: the lower one for at_least, the upper one for at_most. No trials (m = 0)
        bound nothing: 0 below, 1 above."""
        from scipy.stats import beta

        counts = np.rint(fractions * max(n, 0))
        k = counts @ self.score_numerator_cells
        m = counts @ self.metric.denominator_cells
        c = float(self.confidence) if self.confidence is not None else 0.5
        with np.errstate(invalid="ignore", divide="ignore"):
            if self.sense == "at_least":
                bound = beta.ppf(1.0 - c, k, m - k + 1.0)
                return np.where(k <= 0, 0.0, np.nan_to_num(bound, nan=0.0))
            bound = beta.ppf(c, k + 1.0, m - k)
            return np.where(k >= m, 1.0, np.nan_to_num(bound, nan=1.0))

    def prediction_bounds(self, fractions: np.ndarray, n: int, new_fraction: float) -> np.ndarray:
        """For each row of cell fractions of ``n`` rows: the value the ratio stays above
        (at_least; below for at_most) with probability ``confidence`` on a new sample
        ``new_fraction`` times as large, drawn like the first. The new sample's value differs
        from this one's by both samples' noise, so the standard error is the estimate's times
        sqrt(1 + 1 / new_fraction); the bound is the estimate minus (plus) z of them. For a
        proportion k / m the standard error is sqrt(q (1 - q) / m) with q = (k + 1/2) / (m + 1)
        (the Jeffreys centre, so that k = m or k = 0 still leaves a margin); any other ratio
        takes the delta method's (see the class docstring). A proportion with no trials (m = 0)
        scores ``zero_division``: the new sample's trials are binomial at the rate m / n, none, so
        it has none either, as :meth:`log_certainties` takes it (a classifier that flags no
        held-out row meets a precision floor exactly where the user's convention says flagging
        nothing does). Any other ratio with a zero denominator bounds nothing."""
        c = np.atleast_2d(np.asarray(fractions, dtype=np.float64))
        z = NormalDist().inv_cdf(float(self.confidence if self.confidence is not None else 0.5))
        u, v = self.score_numerator_cells, self.metric.denominator_cells
        num, den = c @ u, c @ v
        value, zero = self.metric.scores_and_zeros(c)
        safe = np.where(zero, 1.0, den)
        if self.is_proportion:
            k, m = np.rint(num * max(n, 0)), np.rint(den * max(n, 0))
            q = (k + 0.5) / (m + 1.0)
            se = np.sqrt(q * (1.0 - q) / np.maximum(m, 1.0))
        else:
            d = u[None, :] - value[:, None] * v[None, :]
            se = np.sqrt((c * d**2).sum(axis=1) / max(int(n), 1)) / safe
        margin = z * se * math.sqrt(1.0 + 1.0 / float(new_fraction))
        bound = value - margin if self.sense == "at_least" else value + margin
        if self.is_proportion:
            return np.where(zero, value, bound)
        return np.where(zero, 0.0 if self.sense == "at_least" else 1.0, bound)

    def log_certainties(
        self, cells: np.ndarray, n: int | None = None, *, new_fraction: float | None = None
    ) -> np.ndarray:
        """For every row of ``cells`` ([M, 4]): the log of the probability that the constraint
        holds, on the population (with ``n``, the rows behind the fractions) or on a new sample
        ``new_fraction`` times as large. Where a choice cannot be certified, this says how close
        it came in probability, not in the metric's units: 9 of 10 predicted positives right is
        nearer to "precision at least 0.7" on new data than 330 of 500, though the latter's
        bound is the higher.

        On the population it is the confidence at which :meth:`slacks`' bound would just clear
        the bound (exact for proportions: a row is certified at c exactly where this is at least
        log c). On a new sample, a proportion k / m is predicted exactly where the new sample
        would hold few trials (fewer than ``_EXACT_TRIALS`` expected): its trials m' ~
        Binomial(n', m / n) and its successes beta-binomial at the Jeffreys posterior Beta(k +
        1/2, m - k + 1/2), a new sample with no trial scoring ``zero_division`` (so that a
        precision judged on 2 predicted positives, which a new sample most likely has none of,
        is not taken for a near miss); elsewhere, and for other ratios, it is the normal
        approximation of :meth:`prediction_bounds`. Without ``n``: 0 where the estimate holds,
        -inf where it does not."""
        from scipy.stats import beta, norm

        c = np.atleast_2d(np.asarray(cells, dtype=np.float64))
        u, v = self.score_numerator_cells, self.metric.denominator_cells
        num, den = c @ u, c @ v
        value, zero = self.metric.scores_and_zeros(c)
        safe = np.where(zero, 1.0, den)
        sign = 1.0 if self.sense == "at_least" else -1.0
        if n is None:
            return np.where(sign * (value - self.bound) >= -SLACK_TOL, 0.0, -np.inf)
        rows = max(int(n), 0)
        if new_fraction is None and self.is_proportion:
            k, m = np.rint(num * rows), np.rint(den * rows)
            with np.errstate(invalid="ignore", divide="ignore"):
                if self.sense == "at_least":
                    out = beta.logsf(self.bound, k, m - k + 1.0)
                    return np.where(k <= 0, -np.inf, np.nan_to_num(out, nan=-np.inf))
                out = beta.logcdf(self.bound, k + 1.0, m - k)
                return np.where(k >= m, -np.inf, np.nan_to_num(out, nan=-np.inf))
        if self.is_proportion:
            k, m = np.rint(num * rows), np.rint(den * rows)
            q = (k + 0.5) / (m + 1.0)
            se = np.sqrt(q * (1.0 - q) / np.maximum(m, 1.0))
        else:
            d = u[None, :] - value[:, None] * v[None, :]
            se = np.sqrt((c * d**2).sum(axis=1) / max(rows, 1)) / safe
        if new_fraction is not None:
            se = se * math.sqrt(1.0 + 1.0 / float(new_fraction))
        margin = sign * (value - self.bound)
        with np.errstate(invalid="ignore", divide="ignore"):
            z = np.where(se > 0, margin / np.where(se > 0, se, 1.0), np.sign(margin) * np.inf)
        out = np.where(margin == 0, np.log(0.5), norm.logcdf(z))
        out = np.where(zero, -np.inf, out)
        if new_fraction is not None and self.is_proportion and rows > 0:
            new_rows = max(1, round(rows * float(new_fraction)))
            few = m * new_rows / rows < _EXACT_TRIALS
            if few.any():
                out = out.copy()
                out[few] = self._predicted_log_certainties(k[few], m[few], rows, new_rows)
        return np.asarray(out)

    def _predicted_log_certainties(
        self, k: np.ndarray, m: np.ndarray, rows: int, new_rows: int
    ) -> np.ndarray:
        """log P(the constraint holds on a new sample of ``new_rows`` rows) for a proportion
        seen as k of m trials in ``rows`` rows (see :meth:`log_certainties`). A constrained
        search asks this of the same few (k, m) again and again (every fit's top rows), so the
        values are kept per (constraint, rows, new_rows)."""
        key = (self.sense, self.bound, float(self.metric.zero_division), rows, new_rows)
        known = _PREDICTED.setdefault(key, {})
        if len(_PREDICTED) > 64:  # a process judging many different samples: start afresh
            _PREDICTED.clear()
            known = _PREDICTED.setdefault(key, {})
        pairs, back = np.unique(np.stack([k, m], axis=1), axis=0, return_inverse=True)
        missing = sorted(
            (i for i, (ki, mi) in enumerate(pairs.tolist()) if (ki, mi) not in known),
            key=lambda i: pairs[i, 1],
        )
        # Smallest m first, in chunks: each chunk sums only as many new-sample trials as its
        # largest m can produce.
        for chunk in np.array_split(np.array(missing, dtype=int), max(1, len(missing) // 32)):
            if chunk.size:
                values = self._predict_pairs(pairs[chunk], rows, new_rows)
                known.update(zip(map(tuple, pairs[chunk].tolist()), values.tolist(), strict=True))
        out = np.array([known[(ki, mi)] for ki, mi in pairs.tolist()], dtype=np.float64)
        return out[np.ravel(back)]

    def _predict_pairs(self, pairs: np.ndarray, rows: int, new_rows: int) -> np.ndarray:
        """:meth:`_predicted_log_certainties` for each (k, m) row of ``pairs``, computed."""
        from scipy.special import gammaln
        from scipy.stats import binom

        ki, mi = pairs[:, :1], pairs[:, 1:]  # [P, 1] against trials [T]
        # The new sample's trials are Binomial(new_rows, m / rows): past 12 standard deviations
        # above the largest mean nothing is left to sum.
        mean = float(mi.max()) * new_rows / rows
        top = math.ceil(mean + 12.0 * math.sqrt(mean) + 20.0)
        trials = np.arange(0, min(new_rows, top) + 1)
        # Whether a new sample with no trial meets the bound (0/0 scores zero_division).
        empty = self.metric.zero_division
        empty_holds = empty >= self.bound if self.sense == "at_least" else empty <= self.bound
        weights = binom.pmf(trials[None, :], new_rows, np.minimum(mi / rows, 1.0))
        a, b = ki + 0.5, mi - ki + 0.5
        t = trials[None, :].astype(np.float64)
        if self.sense == "at_least":
            least = np.ceil(self.bound * t - 1e-9)
            counted = lambda hits: hits >= least  # noqa: E731
        else:
            most = np.floor(self.bound * t + 1e-9)
            counted = lambda hits: hits <= most  # noqa: E731
        # The beta-binomial's pmf over the hits of t trials, term by term from hits = 0 (scipy's
        # betabinom sums it again for every point, a hundred times slower here).
        log_pmf = gammaln(t + b) + gammaln(a + b) - gammaln(b) - gammaln(t + a + b)
        holds = np.where(counted(0.0), np.exp(log_pmf), 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            for hits in range(int(trials[-1])):
                step = np.log((t - hits) * (hits + a)) - np.log((hits + 1.0) * (t - hits - 1.0 + b))
                log_pmf = np.where(hits < t, log_pmf + step, -np.inf)
                holds += np.where(counted(hits + 1.0) & (hits + 1.0 <= t), np.exp(log_pmf), 0.0)
        holds = np.where(t == 0, 1.0 if empty_holds else 0.0, holds)
        total = np.sum(weights * holds, axis=1)
        with np.errstate(divide="ignore"):
            return np.log(np.clip(total, 0.0, 1.0))

    def holds(self, cells: np.ndarray) -> bool:
        return self.slack(cells) >= -SLACK_TOL

    def to_dict(self) -> dict[str, Any]:
        out = {"metric": self.metric.to_dict(), self.sense: self.bound}
        if self.confidence is not None:
            out["confidence"] = self.confidence
        return out


def asks_confidence(constraints: Sequence[Constraint]) -> bool:
    """Whether any of ``constraints`` asks to hold with a ``confidence``: then a choice that
    cannot be certified falls back to the one most likely to hold, not the nearest estimate
    (:attr:`metro.thresholds.ConstrainedThreshold.rank`)."""
    return any(c.confidence is not None for c in constraints)


def joint_log_certainties(
    constraints: Sequence[Constraint],
    cells: np.ndarray,
    n: int | None,
    *,
    new_fraction: float | None = None,
) -> np.ndarray:
    """For every row of ``cells``: the log probability that every constraint holds, the sum of
    each one's :meth:`Constraint.log_certainties`."""
    total = np.zeros(np.atleast_2d(cells).shape[0])
    for constraint in constraints:
        total += constraint.log_certainties(cells, n, new_fraction=new_fraction)
    return total


def judged_confidence(constraint: Constraint) -> float:
    """The confidence a constraint is judged at on held-out rows: its own, else
    :data:`DEFAULT_CONFIDENCE`, else (a bound at a proportion's best value, which no margin
    certifies: :attr:`Constraint.at_range_end`) 0.5, the held-out estimate itself."""
    if constraint.confidence is not None:
        return constraint.confidence
    return 0.5 if constraint.at_range_end else DEFAULT_CONFIDENCE


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
    unknown = set(spec) - {"metric", "params", "confidence", *SENSES}
    if unknown:
        raise ValueError(
            f"unknown constraint field(s) {sorted(unknown)}; "
            "expected metric, at_least or at_most, params and confidence"
        )
    senses = [s for s in SENSES if s in spec]
    if len(senses) != 1:
        raise ValueError("a constraint needs exactly one of at_least and at_most")
    if "metric" not in spec:
        raise ValueError("a constraint needs a metric (a preset name or alpha/beta)")
    metric = constraint_metric(spec["metric"], spec.get("params") or {})
    if isinstance(metric, PriorDependentMetric):
        metric = metric.resolve(y)
    bound = spec[senses[0]]
    if isinstance(bound, bool) or not isinstance(bound, int | float):
        raise ValueError(f"{senses[0]} must be a number, got {bound!r}")
    return Constraint(
        metric=metric, sense=senses[0], bound=float(bound), confidence=spec.get("confidence")
    )


def get_constraints(
    specs: Sequence[Constraint | Mapping[str, Any]] | None, y: Any = None
) -> tuple[Constraint, ...]:
    if specs is None:
        return ()
    if isinstance(specs, Mapping | str) or not isinstance(specs, Sequence):
        raise ValueError("constraints must be a list of constraints")
    return tuple(get_constraint(s, y) for s in specs)


def constraint_metric(
    value: Any, params: Mapping[str, Any] | None = None
) -> MetricSpec | PriorDependentMetric:
    """The metric of a constraint's ``"metric"`` field: a preset name (with ``params``) or
    ``{"alpha", "beta"}`` (optionally ``name``, ``greater_is_better``, ``zero_division``)."""
    params = params or {}
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
