"""Grid search under constraints: the best metric among the fits whose constraints hold.

Each (lambda, mu) of a grid is one cost-sensitive problem (:mod:`metro.constraints` derives the
Lagrangian's cell weights ``a - lambda d - mu sum_j g_j / |g_j|``), all lambdas of one mu trained
at once. Every fit is judged on the held-out part (pooled over the folds) at its threshold, chosen
exactly under the constraints when ``SearchConfig.threshold`` is "tuned"
(:func:`metro.thresholds.best_constrained_threshold`). The choice is the lowest held-out loss
among the (lambda, mu) whose constraints hold there; when none holds, the one that misses them by
the least, or where a constraint asked for a ``confidence`` the one most likely to meet them on
new data (:attr:`metro.thresholds.ConstrainedThreshold.rank`), and the result says so
(``constraints_satisfied`` False).

One multiplier scales every constraint (each normalized by its largest cell weight), so the grid
stays two-dimensional however many constraints there are.

Where it is judged on held-out rows, a constraint must hold on new data, not only on the rows
that chose: its ``confidence`` bound for a new sample as large as one fold's held-out part
(``new_fraction`` 1 / k of the pooled rows; :meth:`metro.constraints.Constraint.slacks`) must
clear the bound, and a constraint without ``confidence`` is judged at
:data:`DEFAULT_CONFIDENCE`. Choosing the best of many fits that barely meet a floor on the same
rows favours the ones whose rows flattered them; without a margin the delivered floor held on
new data less often than threshold tuning's (docs/quality.md). ``confidence: 0.5`` asks for no
margin (the estimate itself).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

import numpy as np

from metro.constraints import (
    DEFAULT_CONFIDENCE,
    SLACK_TOL,
    Constraint,
    asks_confidence,
    joint_log_certainties,
    judged_confidence,
)
from metro.metrics import MetricSpec
from metro.search.base import (
    Candidate,
    LambdaSolver,
    SearchResult,
    StepCallback,
    TraceRecorder,
    cells_from_predictions,
    diverged_error,
    held_out_counts,
    lambda_bounds,
    refit_chosen,
    shifts_for,
)
from metro.search.config import SearchConfig
from metro.search.grid import grid_lambdas
from metro.thresholds import ConstrainedThreshold, best_constrained_threshold, reach

__all__ = [
    "DEFAULT_CONFIDENCE",
    "constrained_grid_search",
    "judge_at_zero",
    "judge_constrained",
    "judged_constraints",
    "multiplier_rows",
]


def judged_constraints(constraints: Sequence[Constraint]) -> tuple[Constraint, ...]:
    """``constraints`` as the search judges them: each without a confidence at
    :func:`metro.constraints.judged_confidence` (:data:`DEFAULT_CONFIDENCE`, or 0.5 for a bound
    at a proportion's best value)."""
    return tuple(
        c if c.confidence is not None else dataclasses.replace(c, confidence=judged_confidence(c))
        for c in constraints
    )


def multiplier_rows(constraints: Sequence[Constraint], mu: float, k: int) -> np.ndarray:
    """[k, J] multipliers: ``mu`` for every constraint, divided by its largest cell weight."""
    scale = np.array([max(float(np.abs(c.cells).max()), 1e-12) for c in constraints])
    return np.tile(mu / scale, (k, 1))


def judge_constrained(
    spec: MetricSpec,
    constraints: Sequence[Constraint],
    folds: Sequence[Candidate],
    *,
    tune: bool,
    by_certainty: bool = False,
) -> ConstrainedThreshold:
    """How one (lambda, mu) fitted on each of ``folds`` does under the constraints: on the
    held-out scores pooled over the folds (the threshold chosen there when ``tune``, else 0), or
    on the training cells at threshold 0 when there is no held-out part. On held-out rows each
    constraint's confidence bound is for a new sample as large as one fold's held-out part.
    ``by_certainty``: how an infeasible choice ranks (:attr:`ConstrainedThreshold.rank`)."""
    if all(c.validation_scores is not None for c in folds):
        scores = np.concatenate([np.asarray(c.validation_scores) for c in folds])
        labels = np.concatenate([np.asarray(c.validation_labels) for c in folds])
        fraction = 1.0 / len(folds)
        if not tune:
            cells = _pooled_cells(scores >= 0, labels)
            return judge_at_zero(
                spec, constraints, cells, labels.size, new_fraction=fraction,
                by_certainty=by_certainty,
            )  # fmt: skip
        return best_constrained_threshold(
            spec, constraints, scores, labels, new_fraction=fraction, by_certainty=by_certainty
        )
    cells = np.mean([np.asarray(c.train_cells) for c in folds], axis=0)
    return judge_at_zero(spec, constraints, cells, None, by_certainty=by_certainty)


def constrained_grid_search(
    solvers: Sequence[LambdaSolver],
    *,
    config: SearchConfig,
    constraints: Sequence[Constraint],
    refit_solver: LambdaSolver | None = None,
    on_step: StepCallback | None = None,
) -> SearchResult:
    """Fit every (lambda, mu) of the grid in every fold and choose under ``constraints`` (see the
    module's docstring). The solvers must have been built with the same constraints."""
    if not solvers:
        raise ValueError("the constrained search needs at least one solver")
    if not constraints:
        raise ValueError("the constrained search needs at least one constraint")
    spec = solvers[0].spec
    lo, hi = lambda_bounds(spec, config)
    n_lambdas = config.n_lambdas if spec.denominator_depends_on_predictions else 1
    lambdas = grid_lambdas(lo, hi, n_lambdas)
    recorder = TraceRecorder(spec, on_step, constraints)
    tune = config.threshold == "tuned"
    judged = judged_constraints(constraints)
    # Where a constraint asked for a confidence and none can be certified, the fallback is the
    # choice most likely to meet them; without one, the nearest estimate (ConstrainedThreshold).
    by_certainty = asks_confidence(constraints)
    ranking: list[
        tuple[tuple[int, float, float, float], float, int, ConstrainedThreshold, list[Candidate]]
    ] = []
    everything: list[Candidate] = []
    # Each judged constraint's largest slack over every fit and threshold (ConstrainedThreshold.
    # reach): what the warning says a bound would have to be loosened to.
    reached = np.full(len(constraints), -np.inf)
    order = 0
    for shift in shifts_for(config):
        for mu in config.multipliers:
            rows = multiplier_rows(constraints, mu, lambdas.size)
            per_fold: list[list[Candidate]] = []
            for fold, solver in enumerate(solvers):
                started = time.perf_counter()
                candidates = solver.solve(lambdas, shift=shift, multipliers=rows)
                for cand in candidates:
                    cand.mu = float(mu)
                    if len(solvers) > 1:
                        cand.fold = fold
                recorder.record(candidates, time.perf_counter() - started)
                per_fold.append(candidates)
                everything += candidates
            for i in range(lambdas.size):
                folds = [fold[i] for fold in per_fold]
                order += 1
                if any(c.diverged for c in folds):
                    continue
                choice = judge_constrained(
                    spec, judged, folds, tune=tune, by_certainty=by_certainty
                )
                if choice.reach:
                    reached = np.maximum(reached, choice.reach)
                train_loss = float(np.mean([c.train_loss(spec) for c in folds]))
                ranking.append((choice.rank, train_loss, order, choice, folds))
    if not ranking:
        raise diverged_error(everything, "every fit of the constrained grid")
    *_, choice, chosen = min(ranking, key=lambda row: row[:3])
    result = SearchResult(
        strategy="constrained-grid", best=chosen[0], trace=recorder.steps,
        threshold=choice.threshold, selection_loss=choice.loss,
        fold_fits=chosen if len(solvers) > 1 else [],
        constraint_values=_values(constraints, chosen, choice),
        constraints_satisfied=choice.feasible,
        constraints=tuple(constraints),
        constraint_reach=tuple(
            _reached_bound(c, float(r)) for c, r in zip(judged, reached, strict=True)
        ),
        selection_counts=held_out_counts(chosen, choice.threshold),
        n_folds=len(solvers) if len(solvers) > 1 else None,
        grid=tuple(float(v) for v in lambdas) if lambdas.size > 1 else None,
    )  # fmt: skip
    return refit_chosen(result, refit_solver, recorder)


def _reached_bound(constraint: Constraint, slack: float) -> float:
    """The tightest bound of ``constraint`` that a fit flagging some row met at the confidence it
    was judged at, from the largest slack any reached (nan where no fit flagged a row), within
    the metric's range: a confidence bound below a proportion's 0 certifies no floor at all."""
    if not np.isfinite(slack):
        return float("nan")
    low, high = constraint.score_range
    reached = (
        constraint.bound + slack if constraint.sense == "at_least" else constraint.bound - slack
    )
    return float(min(max(reached, low), high))


def _values(
    constraints: Sequence[Constraint], chosen: Sequence[Candidate], choice: ConstrainedThreshold
) -> list[float]:
    """Each constraint's estimated value where the choice was made (never its confidence bound):
    on the pooled held-out counts, or on the training cells where the choice was judged there
    (:func:`judge_constrained`)."""
    counts = held_out_counts(chosen, choice.threshold)
    if counts is not None:
        cells = np.asarray(counts, dtype=np.float64) / max(sum(counts), 1)
    else:
        cells = np.mean([np.asarray(c.train_cells) for c in chosen], axis=0)
    return [c.value(cells) for c in constraints]


def _pooled_cells(predictions: np.ndarray, labels: np.ndarray) -> np.ndarray:
    return cells_from_predictions(labels, predictions[:, None])[0]


def judge_at_zero(
    spec: MetricSpec,
    constraints: Sequence[Constraint],
    cells: np.ndarray,
    n: int | None,
    *,
    new_fraction: float | None = None,
    by_certainty: bool = False,
) -> ConstrainedThreshold:
    """The loss and each constraint's slack (of its confidence bound when it has one and ``n``,
    the rows behind the fractions ``cells``, is given; with ``new_fraction``, for a new sample
    that many times as large) deciding by h >= 0; ``by_certainty`` as in
    :func:`metro.thresholds.best_constrained_threshold`."""
    slacks = tuple(float(c.slacks(cells, n, new_fraction=new_fraction)[0]) for c in constraints)
    certainty = float(joint_log_certainties(constraints, cells, n, new_fraction=new_fraction)[0])
    return ConstrainedThreshold(
        threshold=0.0,
        loss=float(spec.loss_from_fractions(cells)),
        slacks=slacks,
        feasible=all(s >= -SLACK_TOL for s in slacks),
        log_certainty=certainty,
        by_certainty=by_certainty,
        reach=reach(np.asarray([slacks]), np.asarray(cells)),
    )
