"""Dinkelbach's iteration lambda_{k+1} = L_S(h_k), kept inside the bisection bracket."""

from __future__ import annotations

from metro.search.base import Candidate, LambdaSolver, SearchResult, StepCallback
from metro.search.bracket import bracket_search
from metro.search.config import SearchConfig

__all__ = ["dinkelbach_search", "next_lambda"]


def next_lambda(proposal: float, lam: float, a: float, b: float, epsilon: float) -> float | None:
    """Dinkelbach's next lambda after the fit at ``lam``: its ratio ``proposal`` = L_S(h) when it
    lies in the bracket (a, b] (the update lands on b whenever it tightened the bracket, so b
    itself is allowed), the bracket's midpoint when an inexact fit proposed a lambda outside it,
    and None (converged) when the proposal is within ``epsilon`` of ``lam``."""
    if not a < proposal <= b:
        return (a + b) / 2.0
    if abs(proposal - lam) <= epsilon:
        return None
    return proposal


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

    def propose(cand: Candidate, lam: float, a: float, b: float) -> float | None:
        return next_lambda(cand.train_loss(spec), lam, a, b, config.epsilon)

    return bracket_search(
        "dinkelbach", solver, propose,
        config=config, refit_solver=refit_solver, on_step=on_step,
    )  # fmt: skip
