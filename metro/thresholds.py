"""Choosing a decision threshold on a score to optimize a ratio metric."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from metro.constraints import SLACK_TOL, Constraint, asks_confidence, joint_log_certainties
from metro.metrics import MetricSpec

__all__ = [
    "ConstrainedThreshold",
    "best_constrained_threshold",
    "best_threshold",
    "cells_at_all_thresholds",
    "losses_at_all_thresholds",
    "reach",
]


def cells_at_all_thresholds(scores: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The confusion fractions for every distinct threshold of ``scores`` at once.

    Returns ``(thresholds, cells)``: predicting positive when ``score >= thresholds[j]`` gives the
    fractions ``cells[j]`` (tp, fp, fn, tn). Thresholds are the distinct scores plus +inf
    (nothing positive); sorting once and accumulating counts makes this O(n log n) instead of
    O(n^2).
    """
    s = np.asarray(scores, dtype=np.float64).ravel()
    t = np.asarray(y).astype(bool).ravel()
    if s.shape != t.shape:
        raise ValueError(f"scores has {s.size} values but y has {t.size}")
    if s.size == 0:
        raise ValueError("cannot choose a threshold on an empty sample")
    order = np.argsort(-s, kind="stable")
    s_sorted, t_sorted = s[order], t[order]
    # positions where the next score differs close a group of ties
    last_of_group = np.flatnonzero(np.r_[s_sorted[1:] != s_sorted[:-1], True])
    tp = np.cumsum(t_sorted)[last_of_group]
    fp = (last_of_group + 1) - tp
    n, pos = s.size, int(t.sum())
    tp = np.r_[0, tp]
    fp = np.r_[0, fp]
    cells = np.stack([tp, fp, pos - tp, (n - pos) - fp], axis=1).astype(np.float64) / n
    thresholds = np.r_[np.inf, s_sorted[last_of_group]]
    return thresholds, cells


def _losses(spec: MetricSpec, cells: np.ndarray) -> np.ndarray:
    return spec.losses_of_cells(cells)


def losses_at_all_thresholds(
    spec: MetricSpec, scores: np.ndarray, y: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The metric's loss for every distinct threshold of ``scores`` at once: ``(thresholds,
    losses)``, as in :func:`cells_at_all_thresholds`."""
    thresholds, cells = cells_at_all_thresholds(scores, y)
    return thresholds, _losses(spec, cells)


def best_threshold(spec: MetricSpec, scores: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """The threshold minimizing the loss on (scores, y), and that loss.

    The threshold is placed halfway between the chosen score and the next lower one, so that
    scores of new data falling between the two observed values are treated like the lower
    neighbour's side consistently and small score shifts do not flip the decision at the boundary.
    """
    thresholds, losses = losses_at_all_thresholds(spec, scores, y)
    j = int(np.argmin(losses))
    return _place(thresholds, j), float(losses[j])


@dataclass(frozen=True)
class ConstrainedThreshold:
    """The threshold chosen under constraints: its loss, each constraint's slack (>= 0 where it
    holds, see :meth:`metro.constraints.Constraint.slack`), whether all of them hold, the log of
    the probability that they all hold (the sum of each one's
    :meth:`metro.constraints.Constraint.log_certainties`: how close an infeasible choice came),
    and whether an infeasible choice is ranked by that probability (``by_certainty``, where the
    constraints asked for a confidence) or by its shortfall in the metrics' units."""

    threshold: float
    loss: float
    slacks: tuple[float, ...]
    feasible: bool
    log_certainty: float = 0.0
    by_certainty: bool = False
    # Each constraint's largest slack over the thresholds that flag some row and meet the
    # others (-inf where none): how far its bound could have been tightened (> 0) or must be
    # loosened (< 0) for it to be met with the others (:func:`reach`).
    reach: tuple[float, ...] = ()

    @property
    def shortfall(self) -> float:
        """The summed amount by which the constraints are missed (0 when feasible)."""
        return float(-sum(min(s, 0.0) for s in self.slacks))

    @property
    def rank(self) -> tuple[int, float, float, float]:
        """Sorts choices best first: the feasible ones by loss, then the infeasible ones by
        shortfall and loss, or with ``by_certainty`` first by how likely their constraints are
        to hold (:attr:`log_certainty`, highest first). A constraint with a ``confidence`` asks
        that it hold on new data with that probability; where no choice can be certified, the
        one delivered is then the one most likely to hold, not the one whose estimate misses by
        the fewest points: those are often many rows just under a floor, which miss it on new
        data nearly every time (docs/quality.md). Without a confidence the floor is asked of the
        estimate, and the nearest estimate is the fallback."""
        if self.feasible:
            return (0, self.loss, 0.0, 0.0)
        if self.by_certainty:
            return (1, -self.log_certainty, self.shortfall, self.loss)
        return (1, self.shortfall, self.loss, 0.0)


def best_constrained_threshold(
    spec: MetricSpec,
    constraints: Sequence[Constraint],
    scores: np.ndarray,
    y: np.ndarray,
    *,
    new_fraction: float | None = None,
    by_certainty: bool | None = None,
) -> ConstrainedThreshold:
    """The threshold with the lowest loss among those where every constraint holds on
    (scores, y); where none does, the one that misses them by the least summed shortfall (ties
    to the lower loss), or with ``by_certainty`` the one most likely to meet them (the highest
    :attr:`ConstrainedThreshold.log_certainty`, ties as before). ``by_certainty`` defaults to
    whether any constraint has a ``confidence``. An exact search over every distinct threshold,
    like :func:`best_threshold`. A constraint with a ``confidence`` must hold at its confidence
    bound: of the ratio itself, or with ``new_fraction`` on a new sample that many times the size
    of (scores, y) (:meth:`metro.constraints.Constraint.slacks`).
    """
    if by_certainty is None:
        by_certainty = asks_confidence(constraints)
    thresholds, cells = cells_at_all_thresholds(scores, y)
    losses = _losses(spec, cells)
    n = np.asarray(scores).size
    slacks = np.zeros((cells.shape[0], len(constraints)))
    for i, constraint in enumerate(constraints):
        slacks[:, i] = constraint.slacks(cells, n=n, new_fraction=new_fraction)
    feasible = np.all(slacks >= -SLACK_TOL, axis=1)
    shortfall = -np.minimum(slacks, 0.0).sum(axis=1)
    if feasible.any():
        candidates = np.flatnonzero(feasible)
        j = int(candidates[np.argmin(losses[candidates])])
    elif by_certainty:
        certainty = joint_log_certainties(constraints, cells, n, new_fraction=new_fraction)
        j = int(np.lexsort((losses, shortfall, -certainty))[0])
    else:
        j = int(np.lexsort((losses, shortfall))[0])
    return ConstrainedThreshold(
        threshold=_place(thresholds, j),
        loss=float(losses[j]),
        slacks=tuple(float(v) for v in slacks[j]),
        feasible=bool(feasible[j]),
        log_certainty=float(
            joint_log_certainties(constraints, cells[j : j + 1], n, new_fraction=new_fraction)[0]
        ),
        by_certainty=by_certainty,
        reach=reach(slacks, cells),
    )


def reach(slacks: np.ndarray, cells: np.ndarray) -> tuple[float, ...]:
    """Each column's largest value of ``slacks`` ([M, J], one row per row of ``cells``) over the
    rows whose classifier flags some row (tp + fp > 0) and meets every other column's bound,
    -inf where none does: how far each constraint's bound could move with the others held.
    Judged each on its own, two constraints that are met apart but never together were both
    "reached" beyond what was asked (recall 0.99, false-positive rate 0.004 against 0.7 and
    0.2), which left nothing to loosen. Flagging nothing is left out, since it meets a floor
    that counts 0/0 as met whatever the data (:attr:`ConstrainedThreshold.reach`)."""
    flags = np.atleast_2d(cells)[:, :2].sum(axis=1) > 0
    s = np.atleast_2d(slacks)
    out = []
    for j in range(s.shape[1]):
        others = np.delete(s, j, axis=1)
        rows = flags & np.all(others >= -SLACK_TOL, axis=1)
        out.append(float(s[rows, j].max()) if rows.any() else -np.inf)
    return tuple(out)


def _place(thresholds: np.ndarray, j: int) -> float:
    """Where to put threshold ``j`` between observed scores (see :func:`best_threshold`)."""
    chosen = thresholds[j]
    if np.isfinite(chosen) and j + 1 < thresholds.size:
        chosen = (chosen + thresholds[j + 1]) / 2.0
    elif np.isfinite(chosen):
        chosen = chosen - 1e-6 * max(1.0, abs(chosen))
    else:
        finite = thresholds[np.isfinite(thresholds)]
        chosen = float(finite.max()) + 1.0 if finite.size else 0.0
    return float(chosen)
