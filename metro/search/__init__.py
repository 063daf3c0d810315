"""Lambda searches: grid with validation (Alg. 3), bisection (Alg. 2) and Dinkelbach.

Each search works on any :class:`LambdaSolver` (the trainer-backed one for real models, the exact
finite one for checking the theory) and records a trace of every lambda it fitted.
"""

from __future__ import annotations

from collections.abc import Sequence

from metro.constraints import Constraint
from metro.search.base import (
    Candidate,
    DivergedError,
    LambdaSolver,
    MetroFitWarning,
    SearchResult,
    SearchWarning,
    SelectionPoint,
    StepCallback,
    TraceStep,
    WarningCode,
    cells_from_predictions,
    lambda_bounds,
)
from metro.search.bisection import bisection_search, max_bisection_steps
from metro.search.config import STRATEGIES, SearchConfig
from metro.search.constrained import constrained_grid_search
from metro.search.dinkelbach import dinkelbach_search
from metro.search.finite import FiniteHypothesisSolver, threshold_predictions
from metro.search.grid import grid_lambdas, grid_search
from metro.search.refine import Refinement, Refiner, refine_choice
from metro.search.safeguard import Safeguard, safeguard_choice, warn_without_signal
from metro.search.solver import check_delivered

__all__ = [
    "STRATEGIES",
    "Candidate",
    "DivergedError",
    "FiniteHypothesisSolver",
    "LambdaSolver",
    "MetroFitWarning",
    "Refinement",
    "Refiner",
    "Safeguard",
    "SearchConfig",
    "SearchResult",
    "SearchWarning",
    "SelectionPoint",
    "StepCallback",
    "TraceStep",
    "WarningCode",
    "bisection_search",
    "cells_from_predictions",
    "check_constrainable",
    "constrained_grid_search",
    "dinkelbach_search",
    "grid_lambdas",
    "grid_search",
    "lambda_bounds",
    "max_bisection_steps",
    "run_search",
    "threshold_predictions",
]


def check_constrainable(config: SearchConfig) -> None:
    """Raise ValueError unless ``config`` can search under constraints (the grid strategy)."""
    if config.strategy != "grid":
        raise ValueError(
            f"constraints need the grid strategy; {config.strategy} follows the sign of "
            "l^lambda, which says nothing about a constraint"
        )


def run_search(
    solver: LambdaSolver,
    *,
    config: SearchConfig,
    fold_solvers: Sequence[LambdaSolver] | None = None,
    refit_solver: LambdaSolver | None = None,
    on_step: StepCallback | None = None,
    constraints: Sequence[Constraint] = (),
    fold_stack: LambdaSolver | None = None,
) -> SearchResult:
    """Run the configured search.

    With ``constraints`` (the solvers built with the same ones) the grid runs over lambda and
    the Lagrange multiplier and chooses under the constraints
    (:func:`metro.search.constrained.constrained_grid_search`); only the grid strategy takes them.

    When the metric's denominator does not depend on the predictions (beta1 = beta3 = 0, e.g.
    accuracy, recall, balanced accuracy), every lambda gives the same cost-sensitive problem up to
    a constant, so a single fit is exact and no search runs (strategy ``"exact"``).
    ``fold_solvers`` are used by the grid for cross-validation instead of ``solver``;
    ``fold_stack`` (:class:`metro.search.fold_stack.FoldStackSolver`) fits the unconstrained
    grid's folds all at once (the constrained grid fits them fold by fold).
    """
    spec = solver.spec
    judges = list(fold_solvers) if fold_solvers else [solver]
    if constraints:
        check_constrainable(config)
        result = constrained_grid_search(
            judges,
            config=config,
            constraints=constraints,
            refit_solver=refit_solver,
            on_step=on_step,
        )
    elif not spec.denominator_depends_on_predictions:
        lo, hi = lambda_bounds(spec, config)
        result = grid_search(
            judges,
            config=config,
            refit_solver=refit_solver,
            on_step=on_step,
            lambdas=grid_lambdas(lo, hi, 1),
            strategy="exact",
            fold_stack=fold_stack,
        )
    elif config.strategy == "grid":
        result = grid_search(
            judges, config=config, refit_solver=refit_solver, on_step=on_step,
            fold_stack=fold_stack,
        )  # fmt: skip
    elif fold_solvers:
        raise ValueError("cross-validation (cv) is only available with the grid strategy")
    elif config.strategy == "bisection":
        result = bisection_search(solver, config=config, refit_solver=refit_solver, on_step=on_step)
    else:
        result = dinkelbach_search(
            solver, config=config, refit_solver=refit_solver, on_step=on_step
        )
    result = refine_choice(
        result, solvers=judges, refit_solver=refit_solver, config=config, spec=spec,
        constraints=constraints,
    )  # fmt: skip
    result = safeguard_choice(result, config=config, spec=spec, refit_solver=refit_solver)
    result = warn_without_signal(result, spec, constrained=bool(constraints))
    return check_delivered(result, refit_solver)
