"""TrainerSolver: when a search's warm start is taken, and how a diverged fit comes back."""

from __future__ import annotations

import numpy as np
import pytest

from metro.metrics import f_beta
from metro.models import ModelSpec
from metro.search import MetroFitWarning
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


def test_a_refit_that_predicts_one_class_where_the_choice_did_not_is_warned_about():
    """Three groups by one discrete feature: 15 rows with 13 positives, 600 with 410, 885 with
    88; precision at least 0.7 at 90% cannot be certified, and the choice is the top group's
    fold thresholds. On seed 0 the refit's score for that group falls below the threshold chosen
    on the folds, so the delivered model predicts no row positive: it says so. On every seed,
    a delivered model that predicts one class on its own rows, where the held-out choice
    predicted both, carries the warning."""
    import warnings

    from metro import MetroClassifier

    g = np.r_[np.full(15, 2), np.full(600, 1), np.full(885, 0)]
    y = np.r_[np.ones(13), np.zeros(2), np.ones(410), np.zeros(190), np.ones(88), np.zeros(797)]
    X = g[:, None].astype(float)
    floor = [{"metric": "precision", "at_least": 0.7, "confidence": 0.9}]
    seen = []
    for seed in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf = MetroClassifier(metric="f1", constraints=floor, random_state=seed)
            clf.fit(X, y.astype(int))
        one_class = len(set(clf.predict(X).tolist())) == 1
        tp, fp, fn, tn = clf.search_result_.selection_counts
        codes = [w.code.value for w in clf.warnings_]
        if one_class and tp + fp > 0 and fn + tn > 0:
            assert "predicts_one_class" in codes
            assert any("rows it was refit on" in w.message for w in clf.warnings_)
        seen.append(one_class)
    assert seen[0]  # the case this guards against does occur


def test_a_refit_that_predicts_the_other_class_than_a_one_class_choice_is_warned_about():
    """With no feature to learn from, the holdout's choice predicts every held-out row positive
    (the best constant classifier for F1); the refit on all the rows lands on the other side of
    the threshold carried over and predicts every row negative. The choice's one-class warning
    alone would describe a classifier the user does not get."""
    from metro import MetroClassifier

    X = np.ones((300, 3))
    y = (np.random.default_rng(0).random(300) < 0.2).astype(int)
    clf = MetroClassifier(metric="f1", cv=None, random_state=0)
    with pytest.warns(MetroFitWarning):
        clf.fit(X, y)
    tp, fp, fn, tn = clf.search_result_.selection_counts
    assert fn + tn == 0 < tp + fp  # the choice: every held-out row positive
    assert clf.predict(X).sum() == 0  # what is delivered: every row negative
    messages = [w.message for w in clf.warnings_]
    assert any(
        "predicts every one of the 300 rows it was refit on negative, though the choice "
        "predicted every one of the held-out rows positive" in m
        for m in messages
    ), messages
    assert not any("constraint" in m for m in messages)  # the job has none to loosen
