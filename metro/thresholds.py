"""Choosing a decision threshold on a score to optimize a ratio metric."""

from __future__ import annotations

import numpy as np

from metro.metrics import MetricSpec

__all__ = ["best_threshold", "losses_at_all_thresholds"]


def losses_at_all_thresholds(
    spec: MetricSpec, scores: np.ndarray, y: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The metric's loss for every distinct threshold of ``scores`` at once.

    Returns ``(thresholds, losses)``: predicting positive when ``score >= thresholds[j]`` gives
    ``losses[j]``. Thresholds are the distinct scores plus +inf (nothing positive); sorting once and
    accumulating counts makes this O(n log n) instead of O(n^2).
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
    num = cells @ spec.numerator_cells
    den = cells @ spec.denominator_cells
    zero = np.abs(den) <= 1e-12
    fallback = -spec.zero_division if spec.greater_is_better else spec.zero_division
    losses = np.where(zero, fallback, num / np.where(zero, 1.0, den))
    return thresholds, losses


def best_threshold(spec: MetricSpec, scores: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """The threshold minimizing the loss on (scores, y), and that loss.

    The threshold is placed halfway between the chosen score and the next lower one, so that
    scores of new data falling between the two observed values are treated like the lower
    neighbour's side consistently and small score shifts do not flip the decision at the boundary.
    """
    thresholds, losses = losses_at_all_thresholds(spec, scores, y)
    j = int(np.argmin(losses))
    chosen = thresholds[j]
    if np.isfinite(chosen) and j + 1 < thresholds.size:
        chosen = (chosen + thresholds[j + 1]) / 2.0
    elif np.isfinite(chosen):
        chosen = chosen - 1e-6 * max(1.0, abs(chosen))
    else:
        finite = thresholds[np.isfinite(thresholds)]
        chosen = float(finite.max()) + 1.0 if finite.size else 0.0
    return float(chosen), float(losses[j])
