"""The folds of a cross-validated grid trained as one stack.

A grid over K lambdas with F folds is F * K independent models. Fitted fold by fold, each fold is
one stacked fit of K models on its training rows, F fits in a row; on a GPU a fit of K small
models leaves most of the card idle (:func:`stacks_folds` says where stacking is the default).
:class:`FoldStackSolver` fits all F * K at once on the development rows, model (f, k) seeing
only fold f's training rows (the trainer's ``row_mask``), and judges each on its own fold's
held-out rows, so that the grid gets the candidates its per-fold solvers would give (up to the
differences below), from one fit.

What differs from the per-fold fits, by design:

* each step draws its batch from every development row; a model's loss is the mean over the
  rows of its own fold in that batch. The batch is enlarged by the development rows over the
  fold's training rows (5 folds: 1,024 -> 1,280), so a model still sees about ``batch_size`` of
  its rows per step and makes as many steps per epoch as the per-fold fit;
* the input standardization is computed on every development row (features only; the held-out
  labels never reach a model of their fold);
* the rows of the other folds cost compute: (F / (F - 1)) times the work, in exchange for one
  launch of F * K models instead of F launches of K.

Only the SGD optimizer takes row masks; the L-BFGS fits of linear models stay fold by fold.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from metro.constraints import Constraint
from metro.costs import cost_tables
from metro.device import resolve_device
from metro.metrics import MetricSpec
from metro.models import ModelSpec, StackedModel
from metro.search.base import Candidate, cells_from_predictions
from metro.search.solver import StackHandle, constraint_penalties, multiplier_tuples
from metro.surrogates import Surrogate
from metro.trainer import (
    FitResult,
    TrainingConfig,
    TrainingEvent,
    fit_cost_sensitive,
    predict_scores,
)
from metro.trainer.config import MAX_BATCH_SIZE

__all__ = ["FoldStackSolver", "stacks_folds"]


def stacks_folds(model: ModelSpec, config: TrainingConfig) -> bool:
    """Whether a cross-validated grid trains its folds as one stack by default: an mlp trained
    with SGD on a CUDA device. Measured on an H200 (docs/benchmarks.md, bench/fold_stack.py):
    the 5-fold, 21-lambda grid of an mlp on 50,000 rows took 2.3 s stacked against 7.8 s fold
    by fold, since a stack of 21 small models leaves the card idle; the cnn3 grid on 10,000
    images took 16.2 s against 13.4 s, since 21 grouped convolutions already keep it busy and
    the stack computes every model on the other folds' rows too. On a CPU every row is paid
    for, so stacking only adds work."""
    return (
        model.kind == "mlp"
        and config.resolve_optimizer(model) == "sgd"
        and resolve_device(config.device).type == "cuda"
    )


class FoldStackSolver:
    """Fits a grid's lambdas for every fold at once.

    ``X``, ``y`` are the development rows; ``folds`` holds each fold's (training, held-out)
    positions into them. :meth:`solve` returns F * K candidates, fold-major (fold f's K lambdas,
    in order, then fold f + 1's), each with its ``fold`` set, judged on its fold's rows as
    :class:`metro.search.solver.TrainerSolver` would judge it.
    """

    def __init__(
        self,
        spec: MetricSpec,
        X: np.ndarray,
        y: np.ndarray,
        folds: Sequence[tuple[np.ndarray, np.ndarray]],
        *,
        surrogate: Surrogate,
        model: ModelSpec,
        config: TrainingConfig,
        on_event: Callable[[TrainingEvent], None] | None = None,
        constraints: Sequence[Constraint] = (),
    ) -> None:
        if len(folds) < 2:
            raise ValueError("a fold stack needs at least two folds")
        if config.resolve_optimizer(model) != "sgd":
            raise ValueError("a fold stack trains with SGD; L-BFGS fits take no row masks")
        self.spec = spec
        self.X = X
        self.y = np.asarray(y)
        n = self.y.shape[0]
        self.folds = [
            (np.asarray(tr, dtype=np.intp), np.asarray(va, dtype=np.intp)) for tr, va in folds
        ]
        for tr, va in self.folds:
            if tr.size == 0 or va.size == 0 or np.intersect1d(tr, va).size:
                raise ValueError("every fold needs training and held-out rows, disjoint")
            if tr.min() < 0 or max(tr.max(), va.max()) >= n:
                raise ValueError("a fold's positions must index the development rows")
        self.surrogate = surrogate
        self.model_spec = model
        self.constraints = tuple(constraints)
        self.on_event = on_event
        # The batch grows by the rows of the other folds, so each model still sees about
        # config.batch_size of its own rows per step (module docstring).
        mean_rows = float(np.mean([tr.size for tr, _ in self.folds]))
        batch = min(MAX_BATCH_SIZE, math.ceil(config.batch_size * n / mean_rows))
        self.config = config
        self.fit_config = replace(config, batch_size=batch)
        self._stacks: dict[int, StackedModel] = {}

    @property
    def n_folds(self) -> int:
        return len(self.folds)

    def row_mask(self, n_lambdas: int) -> np.ndarray:
        """[n, F * K] booleans: model f * K + k trains on fold f's training rows."""
        mask = np.zeros((self.y.shape[0], self.n_folds * n_lambdas), dtype=bool)
        for f, (tr, _) in enumerate(self.folds):
            mask[tr, f * n_lambdas : (f + 1) * n_lambdas] = True
        return mask

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
        """One fit of F * len(lambdas) models (fold-major), without judging them."""
        if warm_start is not None:
            raise ValueError("a fold stack fits a grid; it takes no warm start")
        lambdas = np.atleast_1d(np.asarray(lambdas, dtype=np.float64))
        penalties = constraint_penalties(self.constraints, lambdas, multipliers)
        costs = cost_tables(self.spec, lambdas, shift=shift, penalties=penalties)
        return fit_cost_sensitive(
            self.X,
            self.y,
            np.tile(costs, (self.n_folds, 1, 1)),
            model=self.model_spec,
            surrogate=self.surrogate,
            config=self.fit_config,
            callback=on_event if on_event is not None else self.on_event,
            resume_from=resume_from,
            checkpoint_every=checkpoint_every,
            row_mask=self.row_mask(lambdas.size),
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
        """Candidates for a stack :meth:`fit` made (here, or elsewhere and loaded): model
        f * K + k is fold f's fit at ``lambdas[k]``."""
        lambdas = np.atleast_1d(np.asarray(lambdas, dtype=np.float64))
        K, F = lambdas.size, self.n_folds
        if model.n_models != F * K or len(surrogate_loss) != F * K:
            raise ValueError(
                f"{F} folds of {K} lambdas but a stack of {model.n_models} models and "
                f"{len(surrogate_loss)} surrogate losses"
            )
        mus = multiplier_tuples(multipliers, K)
        key = len(self._stacks)
        self._stacks[key] = model
        # One pass over the development rows scores every model; each fold reads its own.
        scores = predict_scores(model, self.X, device=str(resolve_device(self.config.device)))
        out: list[Candidate] = []
        for f, (tr, va) in enumerate(self.folds):
            cols = slice(f * K, (f + 1) * K)
            train_cells = cells_from_predictions(self.y[tr], scores[tr, cols] >= 0)
            val_scores = scores[va, cols]
            val_cells = cells_from_predictions(self.y[va], val_scores >= 0)
            for k, lam in enumerate(lambdas):
                loss = float(surrogate_loss[f * K + k])
                out.append(
                    Candidate(
                        lam=float(lam), shift=shift, train_cells=train_cells[k],
                        validation_cells=val_cells[k], surrogate_loss=loss,
                        handle=StackHandle(self, key, f * K + k), fold=f,
                        diverged=not np.isfinite(loss),
                        validation_scores=val_scores[:, k], validation_labels=self.y[va],
                        multipliers=mus[k],
                    )
                )  # fmt: skip
        return out

    def stack(self, key: int) -> StackedModel:
        """The ``key``-th stack this solver fitted or adopted."""
        return self._stacks[key]
