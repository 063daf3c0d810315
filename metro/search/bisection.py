"""Bisection on the sign of the empirical l^lambda (the paper's Alg. 2)."""

from __future__ import annotations

import time

import numpy as np

from metro.search.base import (
    Candidate,
    LambdaSolver,
    SearchResult,
    StepCallback,
    TraceRecorder,
    close_bracketing,
    lambda_bounds,
    shifts_for,
    update_bracket,
)
from metro.search.config import SearchConfig

__all__ = ["bisection_search", "max_bisection_steps"]


def max_bisection_steps(lo: float, hi: float, epsilon: float) -> int:
    """ceil(log2((hi - lo) / epsilon)): the halvings needed to bring [lo, hi] to width epsilon."""
    return max(1, int(np.ceil(np.log2((hi - lo) / epsilon))))


def bisection_search(
    solver: LambdaSolver,
    *,
    config: SearchConfig,
    refit_solver: LambdaSolver | None = None,
    on_step: StepCallback | None = None,
) -> SearchResult:
    """Halve [a, b] around lambda* using the sign of l^lambda(h_lambda) on the training sample.

    The bracket moves by :func:`~metro.search.base.update_bracket`; |l^lambda| <= epsilon_m stops
    early.
    """
    spec = solver.spec
    lo, hi = lambda_bounds(spec, config)
    recorder = TraceRecorder(spec, on_step)
    visited: list[Candidate] = []
    final_bracket = (lo, hi)
    for shift in shifts_for(config):
        a, b = lo, hi
        previous: Candidate | None = None
        for _ in range(config.max_steps):
            lam = (a + b) / 2.0
            started = time.perf_counter()
            cand = solver.solve(np.array([lam]), shift=shift, warm_start=previous)[0]
            recorder.record([cand], time.perf_counter() - started, bracket=(a, b))
            visited.append(cand)
            previous = cand
            a, b, converged = update_bracket(spec, cand, a, b, config.epsilon_m)
            if converged:
                break
            if b - a <= config.epsilon:
                break
        final_bracket = (a, b)
    return close_bracketing(
        "bisection", spec, visited, final_bracket,
        config=config, recorder=recorder, refit_solver=refit_solver,
    )  # fmt: skip
