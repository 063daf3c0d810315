"""Every class's fits of one fold in one stacked fit: the L x K stacking of an averaged fit.

:mod:`metro.multiclass` runs one binary METRO search per class (or label). With the folds
shared by every class (stratified on the class, or on each row's rarest label), the classes'
grids are the same lambdas on the same training rows and differ only by their targets. A
:class:`ClassStack` trains them together: the first class whose search asks a fold for its grid
gets every class's models for that fold from one call of
:func:`metro.trainer.fit_cost_sensitive`, ``C x K`` models, each pricing the rows by its own
class's target through row groups (a row's group is its class, or its pattern of labels; a
model of class c prices group g as positive when g is, or holds, c). Each class's own solver
then judges its slice (:meth:`TrainerSolver.adopt`), exactly as if it had fitted it alone; the
other classes' searches find their fits waiting.

What is stacked: a fold's whole grid, without a warm start or constraints (the unconstrained
grid, the default). Anything else (the refit at a class's own chosen lambda, bisection and
Dinkelbach's one-at-a-time steps) is fitted by the class's own solver, as before. Each model of
the stack sees the same rows in the same order as it would alone (the same seed), so the fits
are the same up to floating-point round-off; on a GPU the ``C x K`` models of a fold fill the
card where ``K`` did not.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from metro.costs import cost_tables
from metro.device import resolve_device
from metro.models import ModelSpec
from metro.search.base import Candidate
from metro.search.solver import TrainerSolver
from metro.trainer import TrainingConfig, fit_cost_sensitive

__all__ = ["ClassStack", "ClassStackSolver", "row_groups", "stacks_classes"]


def stacks_classes(model: ModelSpec, config: TrainingConfig) -> bool:
    """Whether an averaged fit stacks its classes by default: a network trained with SGD on a
    CUDA device, where a fold's K models of one class leave the card idle and C x K fill it
    (the reason fold stacking pays there, :func:`metro.search.fold_stack.stacks_folds`). Not
    yet timed on a card. On a CPU every model-row is paid for either way: measured there (one
    run each, 2 cores, 7 lambdas x 5 folds), one stack took 0.76x (digits, 10 classes), 0.56x
    (a 4-label set), 1.4x (iris, linear L-BFGS) and 1.6x (iris, a small mlp) the time of the
    classes one after another: the stacked L-BFGS runs until its slowest model stops, and a
    linear stack of several classes cannot skip a cost term per row group."""
    return (
        model.kind != "linear"
        and config.resolve_optimizer(model) == "sgd"
        and resolve_device(config.device).type == "cuda"
    )


def row_groups(targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's group and each group's membership: ``(groups [n], members [G, C] of 0/1)``.
    ``targets`` is ``[n, C]`` of 0/1 (a multi-class fit's one-hot classes, or a multi-label
    fit's labels); rows with the same targets share a group."""
    patterns, groups = np.unique(np.asarray(targets, dtype=np.int64), axis=0, return_inverse=True)
    return np.asarray(groups).ravel(), patterns


class ClassStack:
    """The shared fits of one averaged fit: ``targets`` ``[n, C]`` (0/1) on the rows the
    classes' solvers were built on (their ``X`` is a subset of those rows: a fold's training
    part). Register each class's solver of each role with :meth:`solver`.

    The classes' searches run one after another, so when the first class asks a fold for its
    grid the others have not built their solvers yet: the stack builds theirs from the asking
    one (the same rows, model, surrogate and training; each class's own target), fits every
    class at once, and keeps each class's candidates until its own search asks for them."""

    def __init__(self, targets: np.ndarray) -> None:
        self.targets = np.asarray(targets, dtype=np.int64)
        self.groups, self.members = row_groups(self.targets)
        self.n_classes = int(self.members.shape[1])
        # role -> its (training rows, held-out rows); (role, shift, lambdas) -> class -> its
        # candidates, until that class's search takes them
        self._rows: dict[str, tuple[np.ndarray, np.ndarray | None]] = {}
        self._fitted: dict[tuple[Any, ...], dict[int, list[Candidate]]] = {}
        self.stacked_fits = 0  # fits that trained every class at once

    def solver(
        self,
        role: str,
        class_index: int,
        inner: TrainerSolver,
        rows: np.ndarray,
        held_out: np.ndarray | None = None,
    ) -> ClassStackSolver:
        """``inner`` (class ``class_index``'s solver of ``role``, training on ``rows`` and
        judging on ``held_out``) wrapped so that its grid is fitted with every class's."""
        rows = np.asarray(rows)
        known = self._rows.setdefault(role, (rows, held_out))
        if not np.array_equal(known[0], rows):
            raise ValueError(f"the classes' solvers of {role!r} train on different rows")
        return ClassStackSolver(self, role, class_index, inner)

    def fitted(
        self, role: str, class_index: int, inner: TrainerSolver, lambdas: np.ndarray, shift: str
    ) -> list[Candidate] | None:
        """Class ``class_index``'s candidates for this grid, from the fit of every class (made
        at the first class's request); None when the classes cannot share it (a fold whose
        training rows are all of one kind)."""
        if np.unique(self.groups[self._rows[role][0]]).size < 2:
            return None
        key = (role, shift, tuple(float(v) for v in lambdas))
        if key not in self._fitted:
            self._fitted[key] = self._fit(role, class_index, inner, lambdas, shift)
        return self._fitted[key].pop(class_index, None)

    def _solver_like(self, role: str, inner: TrainerSolver, class_index: int) -> TrainerSolver:
        """Class ``class_index``'s solver of ``role``, built from another class's ``inner``."""
        rows, held_out = self._rows[role]
        target = self.targets[:, class_index]
        return TrainerSolver(
            inner.spec, inner.X, target[rows], surrogate=inner.surrogate,
            model=inner.model_spec, config=inner.config, X_validation=inner.X_validation,
            y_validation=None if held_out is None else target[held_out],
            on_event=inner.on_event, constraints=inner.constraints,
        )  # fmt: skip

    def _fit(
        self, role: str, asking: int, inner: TrainerSolver, lambdas: np.ndarray, shift: str
    ) -> dict[int, list[Candidate]]:
        solvers = {
            c: inner if c == asking else self._solver_like(role, inner, c)
            for c in range(self.n_classes)
        }
        rows = self._rows[role][0]
        groups = self.groups[rows]
        present = np.unique(groups)
        local = np.searchsorted(present, groups)  # the groups that occur, numbered 0 .. G-1
        members = self.members[present]  # [G, C]
        k = lambdas.size
        tables = []
        for c in range(self.n_classes):
            costs = cost_tables(solvers[c].spec, lambdas, shift=shift)  # [K, pred, true]
            # group g is a positive row of class c when c is among its targets
            tables.append(costs[:, :, members[:, c]])  # [K, 2, G]
        fit = fit_cost_sensitive(
            inner.X, local, np.concatenate(tables, axis=0), model=inner.model_spec,
            surrogate=inner.surrogate, config=inner.config, callback=inner.on_event,
        )  # fmt: skip
        self.stacked_fits += 1
        out = {}
        for c in range(self.n_classes):
            part = list(range(c * k, (c + 1) * k))
            out[c] = solvers[c].adopt(
                fit.model.select(part), lambdas, shift=shift,
                surrogate_loss=np.asarray(fit.surrogate_loss)[part],
            )  # fmt: skip
        return out


class ClassStackSolver:
    """One class's solver of one role, whose grids are fitted with every class's
    (:class:`ClassStack`); everything else is its own solver's."""

    def __init__(self, stack: ClassStack, role: str, class_index: int, inner: TrainerSolver):
        self.stack = stack
        self.role = role
        self.class_index = class_index
        self.inner = inner
        self.spec = inner.spec

    def solve(
        self,
        lambdas: np.ndarray,
        *,
        shift: str,
        warm_start: Candidate | None = None,
        multipliers: np.ndarray | None = None,
    ) -> list[Candidate]:
        lambdas = np.atleast_1d(np.asarray(lambdas, dtype=np.float64))
        if warm_start is None and multipliers is None and lambdas.size > 1:
            shared = self.stack.fitted(self.role, self.class_index, self.inner, lambdas, shift)
            if shared is not None:
                return shared
        return self.inner.solve(
            lambdas, shift=shift, warm_start=warm_start, multipliers=multipliers
        )

    def __getattr__(self, name: str) -> Any:
        # refine, held_out_scores, model, ...: the class's own solver's
        return getattr(self.inner, name)
