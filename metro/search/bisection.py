"""Bisection on the sign of the empirical l^lambda (the paper's Alg. 2)."""

from __future__ import annotations

import numpy as np

from metro.search.base import Candidate, LambdaSolver, SearchResult, StepCallback
from metro.search.bracket import bracket_search
from metro.search.config import SearchConfig

__all__ = ["bisection_search", "max_bisection_steps"]


def max_bisection_steps(lo: float, hi: float, epsilon: float) -> int:
    """ceil(log2((hi - lo) / epsilon)): the halvings needed to bring [lo, hi] to width epsilon."""
    return max(1, int(np.ceil(np.log2((hi - lo) / epsilon))))


def _midpoint(_cand: Candidate, _lam: float, a: float, b: float) -> float:
    return (a + b) / 2.0


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
    return bracket_search(
        "bisection", solver, _midpoint,
        config=config, refit_solver=refit_solver, on_step=on_step,
    )  # fmt: skip
