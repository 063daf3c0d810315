"""TrainerSolver: when a search's warm start is taken, and how a diverged fit comes back."""

from __future__ import annotations

import numpy as np

from metro.metrics import f_beta
from metro.models import ModelSpec
from metro.search.solver import TrainerSolver
from metro.surrogates import get_surrogate
from metro.trainer import TrainingConfig, predict_scores

SPEC = f_beta(1.0)
MLP = ModelSpec("mlp", hidden=(8,))


def _data(n: int = 240, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5)).astype(np.float32)
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0.4).astype(np.int64)
    return X, y


def _solver(model: ModelSpec, **config) -> TrainerSolver:
    X, y = _data()
    return TrainerSolver(
        SPEC, X, y, surrogate=get_surrogate("logistic"), model=model,
        config=TrainingConfig(device="cpu", epochs=4, batch_size=32, **config),
    )  # fmt: skip


def _scores(solver: TrainerSolver, cand) -> np.ndarray:
    return predict_scores(solver.model(cand), solver.X)[:, 0]


def test_sgd_takes_the_warm_start_by_default():
    solver = _solver(MLP)
    first = solver.solve(np.array([-0.7]), shift="minimal")[0]
    cold = solver.solve(np.array([-0.5]), shift="minimal")[0]
    warm = solver.solve(np.array([-0.5]), shift="minimal", warm_start=first)[0]
    assert not np.allclose(_scores(solver, warm), _scores(solver, cold), atol=1e-4)


def test_warm_start_false_starts_every_fit_fresh():
    solver = _solver(MLP, warm_start=False)
    first = solver.solve(np.array([-0.7]), shift="minimal")[0]
    cold = solver.solve(np.array([-0.5]), shift="minimal")[0]
    offered = solver.solve(np.array([-0.5]), shift="minimal", warm_start=first)[0]
    np.testing.assert_array_equal(_scores(solver, offered), _scores(solver, cold))


def test_lbfgs_takes_the_warm_start_and_saves_iterations():
    solver = _solver(ModelSpec("linear"))
    first = solver.solve(np.array([-0.5]), shift="minimal")[0]
    cold = solver.fit(np.array([-0.49]), shift="minimal")
    warm = solver.fit(np.array([-0.49]), shift="minimal", warm_start=first)
    assert warm.n_steps < cold.n_steps
    never = _solver(ModelSpec("linear"), warm_start=False)
    again = never.fit(np.array([-0.49]), shift="minimal", warm_start=first)
    assert again.n_steps == cold.n_steps


def test_a_diverged_fit_becomes_a_flagged_candidate():
    X, y = _data()
    solver = TrainerSolver(
        SPEC, X, y, surrogate=get_surrogate("exponential"), model=MLP,
        config=TrainingConfig(device="cpu", epochs=4, batch_size=16, lr=50.0),
    )  # fmt: skip
    cand = solver.solve(np.array([-0.5]), shift="minimal")[0]
    assert cand.diverged and cand.surrogate_loss == float("inf")
