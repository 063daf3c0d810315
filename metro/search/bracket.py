"""The bracketing loop that bisection (Alg. 2) and Dinkelbach's iteration share.

Both fit one lambda at a time inside a bracket [a, b] around lambda*, move the bracket with
:func:`~metro.search.base.update_bracket`, and stop when |l^lambda| <= epsilon_m or the bracket
is narrower than epsilon. They differ only in the next lambda they propose, as scikit-learn's
``BaseSearchCV`` subclasses differ only in the candidates they generate.
"""

from __future__ import annotations

import time
from collections.abc import Callable

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

#: ``(candidate just fitted, its lambda, the updated bracket a, b) -> next lambda``, or None to
#: stop: the one thing a bracketing search decides.
Proposal = Callable[[Candidate, float, float, float], float | None]


def bracket_search(
    name: str,
    solver: LambdaSolver,
    propose: Proposal,
    *,
    config: SearchConfig,
    refit_solver: LambdaSolver | None,
    on_step: StepCallback | None,
) -> SearchResult:
    """Start at the bracket's midpoint, fit, update the bracket, and go on at ``propose``'s
    lambda, for each cost shift of ``config``; close with the candidates visited."""
    spec = solver.spec
    lo, hi = lambda_bounds(spec, config)
    recorder = TraceRecorder(spec, on_step)
    visited: list[Candidate] = []
    final_bracket = (lo, hi)
    for shift in shifts_for(config):
        a, b = lo, hi
        lam: float | None = (a + b) / 2.0
        previous: Candidate | None = None
        for _ in range(config.max_steps):
            assert lam is not None
            started = time.perf_counter()
            cand = solver.solve(np.array([lam]), shift=shift, warm_start=previous)[0]
            recorder.record([cand], time.perf_counter() - started, bracket=(a, b))
            visited.append(cand)
            previous = cand
            a, b, converged = update_bracket(spec, cand, a, b, config.epsilon_m)
            if converged or b - a <= config.epsilon:
                break
            lam = propose(cand, lam, a, b)
            if lam is None:
                break
        final_bracket = (a, b)
    return close_bracketing(
        name, spec, visited, final_bracket,
        config=config, recorder=recorder, refit_solver=refit_solver,
    )  # fmt: skip
