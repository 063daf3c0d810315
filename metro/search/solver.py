"""The solver that fits real models: K lambdas become K cost tables trained in one pass."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from metro.constraints import Constraint
from metro.costs import cost_tables, penalty_cells
from metro.device import resolve_device
from metro.metrics import MetricSpec
from metro.models import ModelSpec, StackedModel
from metro.search.base import (
    Candidate,
    SearchResult,
    SearchWarning,
    WarningCode,
    cells_from_predictions,
)
from metro.surrogates import Surrogate
from metro.trainer import (
    FitResult,
    TrainingConfig,
    TrainingEvent,
    fit_cost_sensitive,
    predict_scores,
)
from metro.trainer.refine import refine_linear

__all__ = [
    "StackHandle",
    "TrainerSolver",
    "constraint_penalties",
    "delivered_model",
    "multiplier_tuples",
]


class StackSource(Protocol):
    """A solver that keeps the stacks it fitted, by key."""

    def stack(self, key: int) -> StackedModel: ...


@dataclass(frozen=True)
class StackHandle:
    """Model ``index`` of the stack a solver (a :class:`TrainerSolver`, or a
    :class:`metro.search.fold_stack.FoldStackSolver`) fitted as its ``key``-th fit."""

    solver: StackSource
    key: int
    index: int

    def model(self) -> StackedModel:
        return self.solver.stack(self.key).select([self.index])


class TrainerSolver:
    """Fits h_lambda with :func:`metro.trainer.fit_cost_sensitive` on a training part and judges
    each fit by its confusion cells there and on an optional validation part.

    Predictions are sign(h) with sign(0) = +1, as in the paper. Fitted stacks are kept so the
    chosen candidate's model can be taken out with :meth:`model`.
    """

    def __init__(
        self,
        spec: MetricSpec,
        X: np.ndarray,
        y: np.ndarray,
        *,
        surrogate: Surrogate,
        model: ModelSpec,
        config: TrainingConfig,
        X_validation: np.ndarray | None = None,
        y_validation: np.ndarray | None = None,
        on_event: Callable[[TrainingEvent], None] | None = None,
        constraints: Sequence[Constraint] = (),
    ) -> None:
        self.spec = spec
        self.constraints = tuple(constraints)
        self.X = X
        self.y = np.asarray(y)
        self.X_validation = X_validation
        self.y_validation = None if y_validation is None else np.asarray(y_validation)
        self.surrogate = surrogate
        self.model_spec = model
        self.config = config
        self.on_event = on_event
        self._stacks: dict[int, StackedModel] = {}

    def solve(
        self,
        lambdas: np.ndarray,
        *,
        shift: str,
        warm_start: Candidate | None = None,
        multipliers: np.ndarray | None = None,
    ) -> list[Candidate]:
        lambdas = np.atleast_1d(np.asarray(lambdas, dtype=np.float64))
        fit = self.fit(lambdas, shift=shift, warm_start=warm_start, multipliers=multipliers)
        return self.adopt(
            fit.model, lambdas, shift=shift, surrogate_loss=fit.surrogate_loss,
            multipliers=multipliers,
        )  # fmt: skip

    def fit(
        self,
        lambdas: np.ndarray,
        *,
        shift: str,
        warm_start: Candidate | None = None,
        resume_from: Mapping[str, Any] | None = None,
        checkpoint_every: int | None = None,
        on_event: Callable[[TrainingEvent], None] | None = None,
        multipliers: np.ndarray | None = None,
    ) -> FitResult:
        """The training half of :meth:`solve`: one stacked fit for ``lambdas`` (optionally
        resumed from, or checkpointing to, a trainer checkpoint), without judging it.
        ``on_event`` gets this fit's training events (default: the solver's ``on_event``)."""
        lambdas = np.atleast_1d(np.asarray(lambdas, dtype=np.float64))
        costs = cost_tables(
            self.spec, lambdas, shift=shift, penalties=self.penalties(lambdas, multipliers)
        )
        init: ModelSpec | StackedModel = self.model_spec
        if (
            warm_start is not None
            and warm_start.handle is not None
            and not warm_start.diverged
            and self.config.warm_start
        ):
            init = warm_start.model()
        return fit_cost_sensitive(
            self.X,
            self.y,
            costs,
            model=init,
            surrogate=self.surrogate,
            config=self.config,
            callback=on_event if on_event is not None else self.on_event,
            resume_from=resume_from,
            checkpoint_every=checkpoint_every,
        )

    def adopt(
        self,
        model: StackedModel,
        lambdas: np.ndarray,
        *,
        shift: str,
        surrogate_loss: Sequence[float] | np.ndarray,
        multipliers: np.ndarray | None = None,
    ) -> list[Candidate]:
        """The judging half of :meth:`solve`: candidates for a stack fitted for ``lambdas`` (by
        :meth:`fit`, here or in another process, and possibly saved and loaded in between)."""
        lambdas = np.atleast_1d(np.asarray(lambdas, dtype=np.float64))
        if model.n_models != lambdas.size or len(surrogate_loss) != lambdas.size:
            raise ValueError(
                f"{lambdas.size} lambdas but a stack of {model.n_models} models and "
                f"{len(surrogate_loss)} surrogate losses"
            )
        mus = multiplier_tuples(multipliers, lambdas.size)
        key = len(self._stacks)
        self._stacks[key] = model
        train_cells = self._cells(model, self.X, self.y)
        val_cells = val_scores = None
        if self.X_validation is not None and self.y_validation is not None:
            val_scores = self._scores(model, self.X_validation)
            val_cells = cells_from_predictions(self.y_validation, val_scores >= 0)
        return [
            Candidate(
                lam=float(lam),
                shift=shift,
                train_cells=train_cells[k],
                validation_cells=None if val_cells is None else val_cells[k],
                surrogate_loss=float(surrogate_loss[k]),
                handle=StackHandle(self, key, k),
                # fit_cost_sensitive reports a diverged model's loss as +inf.
                diverged=not np.isfinite(surrogate_loss[k]),
                validation_scores=None if val_scores is None else val_scores[:, k],
                validation_labels=self.y_validation,
                multipliers=mus[k],
            )
            for k, lam in enumerate(lambdas)
        ]

    def penalties(self, lambdas: np.ndarray, multipliers: np.ndarray | None) -> np.ndarray | None:
        """The Lagrangian term of the constraints on the cells for each lambda (None: none)."""
        return constraint_penalties(self.constraints, lambdas, multipliers)

    def model(self, candidate: Candidate) -> StackedModel:
        """The single model (a stack of one) fitted for ``candidate``."""
        return candidate.model()

    def refine(
        self, model: StackedModel, *, offset: float, temperature: float, sharpen: bool = True
    ) -> StackedModel:
        """``model`` refined on this solver's training rows (:func:`metro.trainer.refine
        .refine_linear`), with ``offset`` added to its scores first."""
        return refine_linear(
            model, self.X, self.y, self.spec, offset=offset, temperature=temperature,
            seed=self.config.seed, constraints=self.constraints,
            sharpen=sharpen,
        )  # fmt: skip

    def training_scores(self, model: StackedModel) -> np.ndarray:
        """h of a stack of one on this solver's training rows."""
        return self._scores(model, self.X)[:, 0]

    def held_out_scores(self, model: StackedModel) -> np.ndarray | None:
        """h of a stack of one on this solver's validation rows (None: it has none)."""
        if self.X_validation is None:
            return None
        return self._scores(model, self.X_validation)[:, 0]

    def stack(self, key: int) -> StackedModel:
        """The ``key``-th stack this solver fitted or adopted."""
        return self._stacks[key]

    def _scores(self, model: StackedModel, X: np.ndarray) -> np.ndarray:
        return predict_scores(model, X, device=str(resolve_device(self.config.device)))

    def _cells(self, model: StackedModel, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        return cells_from_predictions(y, self._scores(model, X) >= 0)


def constraint_penalties(
    constraints: Sequence[Constraint], lambdas: np.ndarray, multipliers: np.ndarray | None
) -> np.ndarray | None:
    """The Lagrangian term of ``constraints`` on the cells for each lambda, from one row of
    ``multipliers`` per lambda (None: no multipliers, no term)."""
    if multipliers is None:
        return None
    if not constraints:
        raise ValueError("multipliers were given to a solver without constraints")
    mu = np.atleast_2d(np.asarray(multipliers, dtype=np.float64))
    n_lambdas = np.atleast_1d(lambdas).size
    if mu.shape != (n_lambdas, len(constraints)):
        raise ValueError(
            f"multipliers must have shape [{n_lambdas}, {len(constraints)}], got {list(mu.shape)}"
        )
    return penalty_cells(np.stack([c.cells for c in constraints]), mu)


def multiplier_tuples(multipliers: np.ndarray | None, k: int) -> list[tuple[float, ...]]:
    """Each of ``k`` candidates' multipliers as a tuple (empty ones without constraints)."""
    if multipliers is None:
        return [()] * k
    return [tuple(float(m) for m in row) for row in np.atleast_2d(multipliers)]


def delivered_model(result: SearchResult) -> StackedModel:
    """The model a search delivers: the refined model when the refinement step was kept, else the
    refit at the chosen lambda (the chosen fit itself when there was no refit), with the search's
    tuned threshold folded into its last bias, so that
    h >= 0 is the decision wherever the model goes (predict, ONNX, safetensors, the endpoint)."""
    if result.refined_model is not None:
        return result.refined_model
    final = result.final if result.final is not None else result.best
    model = final.model()
    return model.shifted(-result.threshold) if result.threshold else model


def check_delivered(result: SearchResult, refit_solver: object | None) -> SearchResult:
    """``result`` with a warning where the delivered model predicts one class on the rows it was
    refit on although the choice predicted both on the held-out rows (or the other class on all
    of them). The threshold is chosen on the folds' pooled scores and carried over to the
    refit; where the choice sits at the tail of those scores (a few top rows, as an
    uncertifiable floor's fallback can), the refit's scores may all fall on one side of it.
    Only solvers that can score their rows are checked (:class:`metro.search.refine.Refiner`)."""
    from metro.search.refine import Refiner

    counts = result.selection_counts
    if refit_solver is None or result.final is None or counts is None:
        return result
    if not isinstance(refit_solver, Refiner):
        return result
    tp, fp, fn, tn = counts
    scores = refit_solver.training_scores(delivered_model(result))
    positive = int(np.count_nonzero(scores >= 0))
    if 0 < positive < scores.size:
        return result
    label = "negative" if positive == 0 else "positive"
    chose_one_class = tp + fp == 0 or fn + tn == 0
    if chose_one_class and (tp + fp == 0) == (positive == 0):
        return result  # the same class as the choice: already warned about (base.diagnose)
    choice = (
        f"every one of the held-out rows {'negative' if tp + fp == 0 else 'positive'}"
        if chose_one_class
        else f"{tp + fp} of the held-out rows positive"
    )
    result.warnings = [
        *result.warnings,
        SearchWarning(
            WarningCode.PREDICTS_ONE_CLASS,
            f"the delivered model predicts every one of the {scores.size} rows it was refit on "
            f"{label}, though the choice predicted {choice} (TP {tp}, FP {fp}, FN {fn}, "
            f"TN {tn}): the threshold chosen on the folds does not carry over to the refit; "
            + (
                "loosen a constraint, or give more data" if result.constraints else "give more data"
            ),
        ),
    ]
    return result
