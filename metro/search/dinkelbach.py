"""Dinkelbach's iteration lambda_{k+1} = L_S(h_k), kept inside the bisection bracket."""

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

__all__ = ["dinkelbach_search"]


def dinkelbach_search(
    solver: LambdaSolver,
    *,
    config: SearchConfig,
    refit_solver: LambdaSolver | None = None,
    on_step: StepCallback | None = None,
) -> SearchResult:
    """With an exact minimizer, lambda_{k+1} = L_S(h_k) decreases to lambda* superlinearly. Fits
    are inexact, so the iteration also keeps the bracket of Alg. 2 (L_S(h) bounds lambda* from
    above; a positive l^lambda bounds it from below) and falls back to the midpoint whenever the
    update would leave it — an inexact fit then costs a bisection step, never divergence.
    """
    spec = solver.spec
    lo, hi = lambda_bounds(spec, config)
    recorder = TraceRecorder(spec, on_step)
    visited: list[Candidate] = []
    final_bracket = (lo, hi)
    for shift in shifts_for(config):
        a, b = lo, hi
        lam = (a + b) / 2.0
        previous: Candidate | None = None
        for _ in range(config.max_steps):
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
            # The update lands on b whenever it tightened the bracket, so b itself is allowed.
            proposal = cand.train_loss(spec)
            if not a < proposal <= b:
                proposal = (a + b) / 2.0
            elif abs(proposal - lam) <= config.epsilon:
                break
            lam = proposal
        final_bracket = (a, b)
    return close_bracketing(
        "dinkelbach", spec, visited, final_bracket,
        config=config, recorder=recorder, refit_solver=refit_solver,
    )  # fmt: skip
