"""Grid search over lambda with validation or cross-validation (the paper's Alg. 3)."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from metro.search.base import (
    Candidate,
    LambdaSolver,
    SearchResult,
    SelectionPoint,
    StepCallback,
    TraceRecorder,
    diverged_error,
    held_out_counts,
    judge,
    lambda_bounds,
    refit_chosen,
    shifts_for,
)
from metro.search.config import SearchConfig

__all__ = ["grid_lambdas", "grid_search"]


def grid_lambdas(lo: float, hi: float, n: int) -> np.ndarray:
    """``n`` evenly spaced values strictly inside [lo, hi] (spacing (hi - lo) / (n + 1)).

    The ends are left out on purpose: they are the losses of trivial predictions (every example
    in one cell), and there the cost-sensitive problem degenerates — for an F-measure at
    lambda_max = 0 a false positive costs nothing, so the fit predicts everything positive. Such
    a point is never the one chosen, yet it is the slowest of the grid to fit.
    """
    if n < 1:
        raise ValueError("a grid needs at least one lambda")
    # A span past float64's range (hi - lo = inf) gives inf and NaN points: refused here, before
    # anything is fitted or recorded at them (SearchConfig bounds lambda_min and lambda_max).
    with np.errstate(over="ignore", invalid="ignore"):
        lambdas = np.linspace(lo, hi, n + 2)[1:-1]
    if not np.all(np.isfinite(lambdas)):
        raise ValueError(f"the lambda grid over [{lo:g}, {hi:g}] is not finite")
    return lambdas


def grid_search(
    solvers: Sequence[LambdaSolver],
    *,
    config: SearchConfig,
    refit_solver: LambdaSolver | None = None,
    on_step: StepCallback | None = None,
    lambdas: np.ndarray | None = None,
    strategy: str = "grid",
    fold_stack: LambdaSolver | None = None,
) -> SearchResult:
    """Fit every lambda of the grid (all at once per fold), choose the one with the best held-out
    metric pooled over the folds, and optionally refit it on all the training data.

    ``solvers`` holds one solver per fold (a single one for a holdout split); each judges its
    candidates on its own validation part. ``fold_stack`` (with two folds or more) fits every
    fold's lambdas in one go instead (:class:`metro.search.fold_stack.FoldStackSolver`: its
    candidates carry their fold); the per-fold solvers then serve the steps after the choice.
    """
    if not solvers:
        raise ValueError("grid_search needs at least one solver")
    spec = solvers[0].spec
    if lambdas is None:
        lo, hi = lambda_bounds(spec, config)
        lambdas = grid_lambdas(lo, hi, config.n_lambdas)
    recorder = TraceRecorder(spec, on_step)
    by_shift: dict[str, list[list[Candidate]]] = {}
    for shift in shifts_for(config):
        if fold_stack is not None and len(solvers) > 1:
            by_shift[shift] = _fit_fold_stack(fold_stack, lambdas, shift, len(solvers), recorder)
            continue
        per_fold: list[list[Candidate]] = []
        for fold, solver in enumerate(solvers):
            started = time.perf_counter()
            candidates = solver.solve(lambdas, shift=shift)
            if len(solvers) > 1:
                for cand in candidates:
                    cand.fold = fold
            recorder.record(candidates, time.perf_counter() - started)
            per_fold.append(candidates)
        by_shift[shift] = per_fold

    # Rank each (shift, lambda) by its held-out loss pooled over the folds (at its tuned
    # threshold when config.threshold is "tuned"); ties go to the lower mean training loss, then
    # to the earlier grid point. Fold 0's fit represents it. (Surrogate losses at different
    # lambdas are on different cost tables: not comparable.) A lambda whose fit diverged in any
    # fold is out (its trace steps stay, loss null).
    tune = config.threshold == "tuned"
    ranking: list[tuple[float, float, int, float, Candidate, list[Candidate]]] = []
    order = 0
    for per_fold in by_shift.values():
        for i in range(len(lambdas)):
            folds = [fold[i] for fold in per_fold]
            if any(c.diverged for c in folds):
                order += 1
                continue
            loss, threshold = judge(spec, folds, tune=tune)
            train_loss = float(np.mean([c.train_loss(spec) for c in folds]))
            ranking.append((loss, train_loss, order, threshold, per_fold[0][i], folds))
            order += 1
    if not ranking:
        everything = [c for per_fold in by_shift.values() for fold in per_fold for c in fold]
        raise diverged_error(everything, "every fit of the grid")
    loss, _, _, threshold, best, chosen_folds = min(ranking, key=lambda row: row[:3])
    fallback = None
    if strategy == "grid" and tune:
        # The ERM-like grid point at a supported threshold (metro.search.safeguard), from the
        # shift the search used ("minimal" when it tried both: the weighted logistic loss).
        from metro.search.safeguard import erm_like_index, fallback_from

        per_fold = by_shift.get("minimal") or next(iter(by_shift.values()))
        i = erm_like_index(spec, lambdas)
        fallback = fallback_from(spec, [fold[i] for fold in per_fold])
    result = SearchResult(
        strategy=strategy, best=best, trace=recorder.steps, threshold=threshold,
        selection_loss=loss, selection_counts=held_out_counts(chosen_folds, threshold),
        fold_fits=chosen_folds if len(solvers) > 1 else [],
        n_folds=len(solvers) if len(solvers) > 1 else None,
        selection_curve=tuple(
            SelectionPoint(lam=float(c.lam), shift=c.shift, loss=float(row_loss))
            for row_loss, _, _, _, c, _ in ranking
        ),
        grid=tuple(sorted(float(v) for v in lambdas)) if strategy == "grid" else None,
        fallback=fallback,
    )  # fmt: skip
    return refit_chosen(result, refit_solver, recorder)


def _fit_fold_stack(
    fold_stack: LambdaSolver,
    lambdas: np.ndarray,
    shift: str,
    n_folds: int,
    recorder: TraceRecorder,
) -> list[list[Candidate]]:
    """Every fold's candidates from one stacked fit, regrouped by fold in grid order (a fit split
    into shards of lambdas comes back shard by shard); the fit's time is shared by the folds in
    the trace."""
    started = time.perf_counter()
    candidates = fold_stack.solve(lambdas, shift=shift)
    seconds = (time.perf_counter() - started) / n_folds
    per_fold: list[list[Candidate]] = [[] for _ in range(n_folds)]
    for cand in candidates:
        if cand.fold is None or not 0 <= cand.fold < n_folds:
            raise ValueError(f"a fold stack gave a candidate of fold {cand.fold!r}")
        per_fold[cand.fold].append(cand)
    for fold in per_fold:
        if [c.lam for c in fold] != [float(v) for v in lambdas]:
            raise ValueError("a fold stack did not fit every fold at every lambda, in order")
        recorder.record(fold, seconds)
    return per_fold
