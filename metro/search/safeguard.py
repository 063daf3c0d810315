"""Selection that knows its own uncertainty: a fallback for choices the held-out rows cannot back.

Every choice of the grid (lambda, threshold, whether to keep the refinement) is made on held-out
confusion counts that can be tiny: with 50 positives in the training rows, a threshold that puts
3 true positives and no false positive above it wins F0.5 on the pooled folds and predicts almost
nothing on new rows. This module gives the search a **fallback** and the rules that use it.

* The fallback is the grid point whose cost table is closest to unweighted (the plain ERM of the
  logistic surrogate; the weights |L(+1, y) - L(-1, y)| of the two classes closest in ratio), with
  its decision threshold tuned on the same pooled held-out scores among the *supported*
  thresholds only. The grid has already fitted it: it costs one refit, and only when delivered.
* A choice is **supported** by its held-out counts (tp, fp, fn, tn) when it has at least
  :data:`metro.search.base.FEW_TRUE_POSITIVES` true positives and predicts at least
  :data:`MIN_PREDICTED_RATIO` of the held-out positives as positive.
* ``guard="fallback"``: an unsupported choice is replaced by the fallback. When the fallback is
  unsupported too (the held-out rows hold too few positives for any threshold), the fallback is
  delivered and the result carries the ``no_supported_choice`` warning. With
  ``guard_confidence=p`` the choice is kept where the paired bootstrap finds it better than the
  fallback with probability at least ``p`` (and at least ``shrink_confidence``, where set).
* ``shrink_confidence=p``: the choice is replaced by the fallback unless a paired bootstrap over
  the held-out rows finds it better with probability at least ``p``
  (:func:`win_probability`).
* ``refine_confidence=p`` (used by :mod:`metro.search.refine`): the refinement is kept only when
  the same paired bootstrap finds it better than the unrefined choice with probability ``p``.
* ``refine_signal=p`` (the same): the refinement is kept only when the bootstrap finds it better
  than the better constant classifier (:func:`constant_decisions`) with probability ``p``.
* Whatever the settings, a delivered choice that the bootstrap does not find better than the
  better constant classifier with probability :data:`NO_SIGNAL_LEVEL` carries the ``no_signal``
  warning (:func:`warn_without_signal`; without constraints). Delivering the constant instead
  was measured and not kept (docs/quality.md, "A constant where the rows show no signal").

The bootstrap resamples the pooled held-out rows (a multinomial over the eight joint cells of the
label and the two decisions: exact and cheap), with a fixed seed, so a search stays deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from metro.costs import cost_tables
from metro.metrics import MetricSpec, spec_display_name
from metro.search.base import (
    FEW_TRUE_POSITIVES,
    Candidate,
    LambdaSolver,
    SearchResult,
    SearchWarning,
    WarningCode,
    check_converged,
    diagnose,
)
from metro.search.config import NO_SIGNAL_LEVEL, SIGNAL_LEVEL, SearchConfig
from metro.thresholds import _losses, _place, cells_at_all_thresholds

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "MIN_PREDICTED_RATIO",
    "NO_SIGNAL_LEVEL",
    "SIGNAL_LEVEL",
    "Fallback",
    "Safeguard",
    "constant_decisions",
    "erm_like_index",
    "fallback_from",
    "held_out_decisions",
    "no_signal_warning",
    "safeguard_choice",
    "supported",
    "supported_threshold",
    "warn_without_signal",
    "win_probability",
]

# A choice predicting fewer positives than this share of the held-out positives is not backed by
# them (the case: 0.3% predicted against 4.6% true, a ratio of 0.07).
MIN_PREDICTED_RATIO = 0.1
BOOTSTRAP_RESAMPLES = 2000
_BOOTSTRAP_SEED = 0


def supported(counts: tuple[int, int, int, int] | None) -> bool:
    """Whether held-out counts (tp, fp, fn, tn) back a choice (see the module docstring);
    True without counts (nothing to judge by)."""
    if counts is None:
        return True
    tp, fp, fn, _ = counts
    return tp >= FEW_TRUE_POSITIVES and tp + fp >= MIN_PREDICTED_RATIO * (tp + fn)


def supported_threshold(
    spec: MetricSpec, scores: np.ndarray, y: np.ndarray
) -> tuple[float, float, bool]:
    """(threshold, loss, supported): the best threshold on (scores, y) among those whose counts
    are supported; when there is none, the best with at least one true positive; else the best."""
    thresholds, cells = cells_at_all_thresholds(scores, y)
    losses = _losses(spec, cells)
    counts = np.rint(cells * np.asarray(scores).size)
    tp, fp, fn = counts[:, 0], counts[:, 1], counts[:, 2]
    ok = (tp >= FEW_TRUE_POSITIVES) & (tp + fp >= MIN_PREDICTED_RATIO * (tp + fn))
    pool = ok if ok.any() else (tp >= 1)
    allowed = np.flatnonzero(pool) if pool.any() else np.arange(losses.size)
    j = int(allowed[np.argmin(losses[allowed])])
    return _place(thresholds, j), float(losses[j]), bool(ok[j])


def win_probability(
    spec: MetricSpec,
    y: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = _BOOTSTRAP_SEED,
) -> float:
    """The probability, over a paired bootstrap of the rows, that decisions ``a`` have a lower
    loss than decisions ``b`` on labels ``y`` (ties count one half)."""
    y = np.asarray(y).astype(bool)
    a = np.asarray(a).astype(bool)
    b = np.asarray(b).astype(bool)
    if not y.shape == a.shape == b.shape or y.size == 0:
        raise ValueError("y, a and b must be non-empty and of one length")
    joint = 4 * y.astype(np.int64) + 2 * a + b
    probabilities = np.bincount(joint, minlength=8) / y.size
    counts = np.random.default_rng(seed).multinomial(y.size, probabilities, size=resamples)
    draws = counts.astype(np.float64) / y.size
    # cells (tp, fp, fn, tn) of a and of b from the joint cells (y, a, b) = index 4y + 2a + b
    t = draws[:, 4:]  # y = 1: (a, b) = 00, 01, 10, 11
    f = draws[:, :4]
    cells_a = np.stack(
        [t[:, 2] + t[:, 3], f[:, 2] + f[:, 3], t[:, 0] + t[:, 1], f[:, 0] + f[:, 1]], 1
    )
    cells_b = np.stack(
        [t[:, 1] + t[:, 3], f[:, 1] + f[:, 3], t[:, 0] + t[:, 2], f[:, 0] + f[:, 2]], 1
    )
    loss_a, loss_b = _losses(spec, cells_a), _losses(spec, cells_b)
    return float(np.mean(loss_a < loss_b) + 0.5 * np.mean(loss_a == loss_b))


def constant_decisions(spec: MetricSpec, y: np.ndarray) -> np.ndarray:
    """The decisions of the better constant classifier on labels ``y``: every row positive or
    every row negative, whichever has the lower loss there (a tie, to rounding: positive)."""
    rate = float(np.mean(np.asarray(y).astype(bool)))
    cells = np.array([[rate, 1.0 - rate, 0.0, 0.0], [0.0, 0.0, rate, 1.0 - rate]])
    positive, negative = _losses(spec, cells)
    return np.full(np.asarray(y).shape, bool(positive <= negative + 1e-12))


def erm_like_index(spec: MetricSpec, lambdas: Sequence[float] | np.ndarray) -> int:
    """The index of the lambda whose cost table weighs the two classes most nearly alike (the
    fallback's; weights do not depend on the shift)."""
    tables = cost_tables(spec, np.asarray(lambdas, dtype=np.float64), normalize=False)
    w_pos = tables[:, 0, 1] - tables[:, 1, 1]  # predicting - on a positive, less predicting +
    w_neg = tables[:, 1, 0] - tables[:, 0, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = np.abs(np.log(w_pos / w_neg))
    gap = np.where(np.isfinite(gap) & (w_pos > 0) & (w_neg > 0), gap, np.inf)
    return int(np.argmin(gap))


@dataclass
class Fallback:
    """The fallback candidate: the ERM-like grid point's fits (one per fold, in fold order) and
    its supported threshold on their pooled held-out scores."""

    folds: list[Candidate]
    threshold: float
    loss: float
    counts: tuple[int, int, int, int]
    supported: bool

    @property
    def lam(self) -> float:
        return self.folds[0].lam


def fallback_from(spec: MetricSpec, folds: Sequence[Candidate]) -> Fallback | None:
    """The fallback from one lambda's fits (None: they kept no held-out scores, or diverged)."""
    if not folds or any(c.diverged for c in folds):
        return None
    if any(c.validation_scores is None or c.validation_labels is None for c in folds):
        return None
    scores = np.concatenate([np.asarray(c.validation_scores) for c in folds])
    labels = np.concatenate([np.asarray(c.validation_labels) for c in folds])
    threshold, loss, ok = supported_threshold(spec, scores, labels)
    decided = scores >= threshold
    yb = labels.astype(bool)
    counts = (
        int(np.sum(decided & yb)),
        int(np.sum(decided & ~yb)),
        int(np.sum(~decided & yb)),
        int(np.sum(~decided & ~yb)),
    )
    return Fallback(list(folds), threshold, loss, counts, ok)


def held_out_decisions(result: SearchResult) -> tuple[np.ndarray, np.ndarray] | None:
    """(labels, decisions) of the delivered choice on the pooled held-out rows, in fold order
    (the refined models' when the refinement was kept); None where they were not kept."""
    fits = result.fold_fits or [result.best]
    if any(c.validation_labels is None for c in fits):
        return None
    labels = np.concatenate([np.asarray(c.validation_labels) for c in fits])
    if result.held_out_scores is not None:  # refined (its threshold is then 0)
        return labels, result.held_out_scores >= result.threshold
    if any(c.validation_scores is None for c in fits):
        return None
    scores = np.concatenate([np.asarray(c.validation_scores) for c in fits])
    return labels, scores >= result.threshold


@dataclass(frozen=True)
class Safeguard:
    """What the safeguard did: why it replaced the choice by the fallback (None: it did not),
    the paired bootstrap's probability that the choice beats the fallback (None: not computed),
    and the fallback's lambda, threshold, held-out loss and counts."""

    reason: str | None  # "unsupported" or "within_noise"
    win_probability: float | None
    fallback_lambda: float
    fallback_threshold: float
    fallback_loss: float
    fallback_counts: tuple[int, int, int, int]
    fallback_supported: bool
    # The search's own choice, which the fallback replaced when it was used: its lambda and its
    # held-out loss (refined, where the refinement was kept).
    choice_lambda: float | None = None
    choice_loss: float | None = None

    @property
    def used(self) -> bool:
        return self.reason is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "used": self.used,
            "reason": self.reason,
            "win_probability": self.win_probability,
            "fallback_lambda": self.fallback_lambda,
            "fallback_threshold": self.fallback_threshold,
            "fallback_loss": self.fallback_loss if math.isfinite(self.fallback_loss) else None,
            "fallback_counts": list(self.fallback_counts),
            "fallback_supported": self.fallback_supported,
            "choice_lambda": self.choice_lambda,
            "choice_loss": self.choice_loss,
        }


def safeguard_choice(
    result: SearchResult,
    *,
    config: SearchConfig,
    spec: MetricSpec,
    refit_solver: LambdaSolver | None,
) -> SearchResult:
    """``result`` with the guard and the shrinkage of the module docstring applied (unchanged
    when both are off, or the search kept no fallback)."""
    fallback = result.fallback
    if fallback is None or (config.guard == "off" and config.shrink_confidence is None):
        return result
    reason: str | None = None
    probability: float | None = None
    same = fallback.folds[0] is result.best and math.isclose(fallback.threshold, result.threshold)
    if config.guard == "fallback" and not supported(result.selection_counts):
        reason = "unsupported"
        level = config.guard_confidence
        decided = None if level is None or same else held_out_decisions(result)
        if level is not None and decided is not None:
            # The fallback can flag 4 to 15 times the rows of the choice it replaces, and lose
            # 10 points with it on every split (docs/quality.md): weighed against it first.
            labels, choice = decided
            scores = np.concatenate([np.asarray(c.validation_scores) for c in fallback.folds])
            probability = win_probability(spec, labels, choice, scores >= fallback.threshold)
            # Never a lower bar than a supported choice meets under shrink_confidence.
            if probability >= max(level, config.shrink_confidence or 0.0):
                reason = None
    elif config.shrink_confidence is not None and not same:
        decided = held_out_decisions(result)
        if decided is not None:
            labels, choice = decided
            scores = np.concatenate([np.asarray(c.validation_scores) for c in fallback.folds])
            probability = win_probability(spec, labels, choice, scores >= fallback.threshold)
            if probability < config.shrink_confidence:
                reason = "within_noise"
    result.safeguard = Safeguard(
        reason=reason,
        win_probability=probability,
        fallback_lambda=fallback.lam,
        fallback_threshold=fallback.threshold,
        fallback_loss=fallback.loss,
        fallback_counts=fallback.counts,
        fallback_supported=fallback.supported,
        choice_lambda=result.best.lam,
        choice_loss=result.selection_loss,
    )
    if reason is None:
        return result
    result.best = fallback.folds[0]
    result.fold_fits = fallback.folds if len(fallback.folds) > 1 else []
    result.threshold = fallback.threshold
    result.selection_loss = fallback.loss
    result.selection_counts = fallback.counts
    result.refined_model = None
    result.held_out_scores = None
    if result.refinement is not None:  # it refined the choice the fallback replaces
        result.refinement = replace(
            result.refinement, temperature=None, scale=None, replaced_by_fallback=True
        )
    if refit_solver is not None:
        final = refit_solver.solve(
            np.array([fallback.lam]), shift=result.best.shift, warm_start=result.best
        )[0]
        check_converged([final], "the fallback's refit on all the data")
        result.final = final
        result.n_fits += 1
    else:
        result.final = None
    result.warnings = diagnose(result, spec)
    return result


def warn_without_signal(
    result: SearchResult, spec: MetricSpec, *, constrained: bool = False
) -> SearchResult:
    """``result`` with the ``no_signal`` warning where its delivered choice's pooled held-out
    decisions do not beat the better constant classifier with probability
    :data:`NO_SIGNAL_LEVEL` (a paired bootstrap over those rows); unchanged under constraints, or
    without held-out decisions."""
    decided = None if constrained else held_out_decisions(result)
    if decided is None:
        return result
    found = no_signal_warning(spec, *decided)
    if found is not None:
        result.warnings = [*result.warnings, found]
    return result


def no_signal_warning(
    spec: MetricSpec, labels: np.ndarray, choice: np.ndarray
) -> SearchWarning | None:
    """The ``no_signal`` warning of held-out decisions ``choice`` on ``labels`` (a binary
    target: a multi-class model's one-vs-rest decisions for a class), None where they beat the
    better constant classifier with probability :data:`NO_SIGNAL_LEVEL` or are that constant."""
    constant = constant_decisions(spec, labels)
    if np.array_equal(choice.astype(bool), constant):
        return None  # the choice is the constant: predicts_one_class says so already
    probability = win_probability(spec, labels, choice, constant)
    if probability >= NO_SIGNAL_LEVEL:
        return None
    everyone = "positive" if constant[0] else "negative"
    metric = spec_display_name(spec)  # F1, "Weighted accuracy (w_fn 20)": as the user names it
    den = spec.denominator_cells  # (tp, fp, fn, tn)
    if not constant[0] and spec.zero_division != 0 and den[2] == 0 and den[3] == 0:
        # Flagging nothing is 0/0 for this metric, scored by the user's convention: with 1, the
        # best score there is, which no classifier that flags rows can beat.
        why = (
            f"flagging no row divides 0 by 0, which zero_division {spec.zero_division:g} "
            f"scores {spec.zero_division:g}; as an objective that convention rewards flagging "
            "nothing, and zero_division 0 (scikit-learn's default) asks instead for the best "
            f"{metric} among classifiers that flag rows"
        )
    else:
        why = (
            "its lead over that may be chance, and the features may say little about this "
            "label: more rows, or other features, would tell"
        )
    return SearchWarning(
        WarningCode.NO_SIGNAL,
        f"the held-out rows cannot tell the chosen classifier from predicting every row "
        f"{everyone}: a paired bootstrap finds its {metric} better with probability "
        f"{probability:.3f}, below {NO_SIGNAL_LEVEL:g}; {why}",
    )
