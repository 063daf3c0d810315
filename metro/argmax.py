"""The argmax of a multi-class model over its classes, with per-class offsets tuned for an
averaged metric (:mod:`metro.averaging`).

``argmax_c (m_c + b_c)`` on per-class margins (or log-probabilities) ``m``: the offsets ``b`` are
chosen by coordinate ascent (:func:`tune_offsets`), each step exact over every distinct decision
(:func:`_best_offset`). An offset on a log-probability is a weight on the probability, so this is
the weighted argmax of the plug-in literature. :mod:`metro.multiclass` tunes them on the pooled
out-of-fold margins of its fits.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from metro.averaging import averaged_score, check_average, class_cells
from metro.metrics import MetricSpec

__all__ = ["DECISION_RULES", "DEFAULT_DECISION", "predict_argmax", "tune_offsets"]

DECISION_RULES: tuple[str, ...] = ("tuned", "ovr")
DEFAULT_DECISION = "tuned"
MAX_ROUNDS = 20
N_STARTS = 8


def predict_argmax(margins: np.ndarray, offsets: np.ndarray | None = None) -> np.ndarray:
    """Class indices ``argmax_c (margins[:, c] + offsets[c])`` (ties: the first class)."""
    m = np.asarray(margins, dtype=np.float64)
    if offsets is not None:
        m = m + np.asarray(offsets, dtype=np.float64)
    return np.asarray(np.argmax(m, axis=1))


def _best_offset(
    scores: np.ndarray, y: np.ndarray, offsets: np.ndarray, c: int, spec: MetricSpec, average: str
) -> tuple[float, float]:
    """The offset of class ``c`` that maximizes the averaged metric with the others fixed, over
    every distinct decision (exact), and the metric there: (offset, score)."""
    n, n_classes = scores.shape
    shifted = scores + offsets
    others = shifted.copy()
    others[:, c] = -np.inf
    rival = np.argmax(others, axis=1)  # what each row gets when it is not given to c
    # Row i goes to c exactly when offsets[c] > t[i].
    t = others[np.arange(n), rival] - scores[:, c]
    order = np.argsort(t, kind="stable")
    t_sorted, y_sorted, r_sorted = t[order], y[order], rival[order]
    onehot_true = np.eye(n_classes, dtype=np.float64)[y_sorted]
    onehot_rival = np.eye(n_classes, dtype=np.float64)[r_sorted]
    base = class_cells(y, rival, n_classes)  # nobody given to c
    # after the first k sorted rows are given to c: cumulative changes, k = 0..n
    hit = np.r_[0.0, np.cumsum(y_sorted == c)]  # c gains a tp
    miss = np.r_[0.0, np.cumsum(y_sorted != c)]  # c gains a fp
    lost_tp = np.vstack([np.zeros(n_classes), np.cumsum(onehot_rival * onehot_true, axis=0)])
    lost_fp = np.vstack([np.zeros(n_classes), np.cumsum(onehot_rival * (1 - onehot_true), axis=0)])
    tp = base[:, 0] - lost_tp
    fp = base[:, 1] - lost_fp
    tp[:, c] = base[c, 0] + hit
    fp[:, c] = base[c, 1] + miss
    support = base[:, 0] + base[:, 2]
    fn = support - tp
    tn = n - tp - fp - fn
    cells = np.stack([tp, fp, fn, tn], axis=-1)  # [n + 1, C, 4]
    objective = np.asarray(averaged_score(spec, cells, average))
    # only cuts between distinct t values are reachable
    valid = np.r_[True, t_sorted[1:] > t_sorted[:-1], True]
    objective = np.where(valid, objective, -np.inf)
    k = int(np.argmax(objective))
    spread = max(1.0, float(t_sorted[-1] - t_sorted[0]))
    if k == 0:
        value = float(t_sorted[0]) - spread
    elif k == n:
        value = float(t_sorted[-1]) + spread
    else:
        value = 0.5 * float(t_sorted[k - 1] + t_sorted[k])
    return value, float(objective[k])


def tune_offsets(
    scores: Any,
    y: Any,
    *,
    spec: MetricSpec,
    average: str = "macro",
    n_starts: int = N_STARTS,
    max_rounds: int = MAX_ROUNDS,
) -> tuple[np.ndarray, float]:
    """Per-class offsets ``b`` for the rule ``argmax_c (scores[:, c] + b_c)`` that maximize the
    averaged metric of ``y`` (class indices), by coordinate ascent: each step sets one class's
    offset to its exact best with the others fixed (:func:`_best_offset`), taken only when it
    strictly improves; rounds over the classes stop when none does. The ascent starts from
    ``b = 0`` (the ``"ovr"`` rule) and from ``n_starts - 1`` random offsets (seeded, at the scale
    of the scores' spread), as it can stop at a local optimum; the best end point is kept (ties:
    the earliest start, so ``b = 0`` when nothing beats it). Returns (offsets, score)."""
    s = np.asarray(scores, dtype=np.float64)
    t = np.asarray(y, dtype=np.int64)
    if s.ndim != 2 or s.shape[0] != t.size or s.shape[1] < 2:
        raise ValueError(f"scores must be n x C with C >= 2 and n = len(y); got {s.shape}")
    if t.size == 0 or t.min() < 0 or t.max() >= s.shape[1]:
        raise ValueError("y must hold class indices in [0, C)")
    if not np.all(np.isfinite(s)):
        raise ValueError("scores must be finite")
    check_average(average)
    if n_starts < 1:
        raise ValueError("n_starts must be at least 1")
    n_classes = s.shape[1]
    rng = np.random.default_rng(0)
    scale = float(np.std(s)) or 1.0
    starts: list[np.ndarray] = [np.zeros(n_classes)] + [
        np.asarray(rng.normal(scale=scale, size=n_classes)) for _ in range(n_starts - 1)
    ]

    def score_of(b: np.ndarray) -> float:
        return float(averaged_score(spec, class_cells(t, predict_argmax(s, b), n_classes), average))

    found: tuple[float, np.ndarray] | None = None
    for b in starts:
        best = score_of(b)
        for _ in range(max_rounds):
            improved = False
            for c in range(n_classes):
                value, _ = _best_offset(s, t, b, c, spec, average)
                # Scored as predict_argmax decides: between two margins an ulp apart the cut's
                # midpoint can round onto one of them, and the step's own count was then a row
                # the rule does not move (a score claimed above what the offsets give).
                trial = b.copy()
                trial[c] = value
                score = score_of(trial)
                if score > best + 1e-12:
                    b, best, improved = trial, score, True
            if not improved:
                break
        if found is None or best > found[0] + 1e-12:
            found = (best, b)
    assert found is not None
    return found[1], found[0]
