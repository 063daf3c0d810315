"""Every class's fits of a fold in one stack (metro.search.class_stack): the trainer's row
groups, and an averaged fit that stacks its classes against one that does not."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.datasets import load_iris, make_multilabel_classification

from metro import MetroClassifier
from metro.costs import cost_tables
from metro.metrics import get_metric
from metro.models import ModelSpec
from metro.multiclass import fit_averaged
from metro.search.class_stack import ClassStack, row_groups, stacks_classes
from metro.trainer import TrainingConfig, fit_cost_sensitive

F1 = get_metric("f1").resolve(np.array([0, 1]))
LAMBDAS = np.array([-0.8, -0.5, -0.2])
MLP = ModelSpec("mlp", hidden=(8,))


def _one_vs_rest_costs(classes: int) -> np.ndarray:
    """[C x K, 2, C]: model (c, k) prices a row of class g as positive when g == c."""
    costs = cost_tables(F1, LAMBDAS)  # [K, pred, true]
    member = np.eye(classes, dtype=np.int64)
    return np.concatenate([costs[:, :, member[:, c]] for c in range(classes)], axis=0)


@pytest.mark.parametrize(
    ("model", "training"),
    [
        (ModelSpec("linear"), TrainingConfig(max_iter=50)),
        (MLP, TrainingConfig(epochs=5, batch_size=32)),
    ],
    ids=["linear-lbfgs", "mlp-sgd"],
)
def test_row_groups_train_each_model_on_its_own_target(model, training):
    X, y = load_iris(return_X_y=True)
    stacked = fit_cost_sensitive(
        X, y, _one_vs_rest_costs(3), model=model, surrogate="logistic", config=training
    )
    assert stacked.model.n_models == 9
    with torch.no_grad():
        together = stacked.model(torch.as_tensor(X, dtype=torch.float32)).numpy()
    for c in range(3):
        alone = fit_cost_sensitive(
            X, (y == c).astype(int), cost_tables(F1, LAMBDAS), model=model,
            surrogate="logistic", config=training,
        )  # fmt: skip
        with torch.no_grad():
            scores = alone.model(torch.as_tensor(X, dtype=torch.float32)).numpy()
        np.testing.assert_allclose(together[:, 3 * c : 3 * c + 3], scores, atol=2e-4, rtol=1e-3)
        np.testing.assert_allclose(
            stacked.surrogate_loss[3 * c : 3 * c + 3], alone.surrogate_loss, rtol=1e-4
        )


def test_row_groups_are_checked():
    X = np.zeros((4, 2))
    costs = _one_vs_rest_costs(3)
    with pytest.raises(ValueError, match="row groups 0 to 2"):
        fit_cost_sensitive(X, [0, 1, 2, 3], costs, model=ModelSpec("linear"), surrogate="logistic")
    with pytest.raises(ValueError, match=r"labels 0 \(negative\) and 1"):
        fit_cost_sensitive(X, [0, 1, 2, 1], cost_tables(F1, LAMBDAS),
                           model=ModelSpec("linear"), surrogate="logistic")  # fmt: skip
    with pytest.raises(ValueError, match=r"\[K, 2, G\]"):
        fit_cost_sensitive(X, [0, 1, 0, 1], np.ones((3, 2, 1)),
                           model=ModelSpec("linear"), surrogate="logistic")  # fmt: skip


def test_rows_with_the_same_targets_share_a_group():
    groups, members = row_groups(np.array([[1, 0], [0, 1], [1, 0], [1, 1], [0, 0]]))
    assert members.tolist() == [[0, 0], [0, 1], [1, 0], [1, 1]]
    assert groups.tolist() == [2, 1, 2, 3, 0]


def _count_own_fits(monkeypatch) -> dict[str, int]:
    """Counts the fits a class's own solver makes (TrainerSolver.fit), not the stack's."""
    from metro.search.solver import TrainerSolver

    count = {"n": 0}
    original = TrainerSolver.fit

    def counted(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        count["n"] += 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(TrainerSolver, "fit", counted)
    return count


@pytest.mark.parametrize("kind", ["multiclass", "multilabel", "mlp"])
def test_an_averaged_fit_stacking_its_classes_chooses_as_one_that_does_not(kind, monkeypatch):
    params: dict = {"n_lambdas": 5, "refine": "off", "random_state": 0, "average": "macro"}
    if kind == "multilabel":
        X, y = make_multilabel_classification(n_samples=300, n_classes=3, random_state=0)
    else:
        X, y = load_iris(return_X_y=True)
    if kind == "mlp":
        params.update(model="mlp", model_params={"hidden": (8,)},
                      training={"epochs": 10, "batch_size": 32})  # fmt: skip
    else:
        params["training"] = {"max_iter": 60}
    fits = _count_own_fits(monkeypatch)
    stacked = fit_averaged(MetroClassifier(**params), X, y, stack_classes=True)
    own_stacked = fits["n"]
    alone = fit_averaged(MetroClassifier(**params), X, y, stack_classes=False)
    n_classes = len(stacked.estimators_)
    # one stack per fold holds every class; each class then fits only its refit on its own
    assert stacked.stacked_fits_ == 5 and alone.stacked_fits_ == 0
    assert own_stacked == n_classes and fits["n"] - own_stacked == n_classes * (5 + 1)
    np.testing.assert_array_equal(stacked.lambdas_, alone.lambdas_)
    np.testing.assert_allclose(
        stacked.decision_function(X), alone.decision_function(X), atol=1e-3, rtol=1e-3
    )
    assert stacked.best_score_ == pytest.approx(alone.best_score_, abs=1e-9)
    # the trace: every class's steps, as when each class fits alone
    assert [len(e.trace_) for e in stacked.estimators_] == [
        len(e.trace_) for e in alone.estimators_
    ]


def test_a_class_stack_refuses_solvers_on_different_rows():
    from metro.search.solver import TrainerSolver
    from metro.surrogates import get_surrogate

    X, y = load_iris(return_X_y=True)
    stack = ClassStack(np.eye(3, dtype=int)[y])
    rows = np.arange(100)

    def solver(c: int, part: np.ndarray) -> TrainerSolver:
        target = (y[part] == c).astype(int)
        return TrainerSolver(F1, X[part], target, surrogate=get_surrogate("logistic"),
                             model=ModelSpec("linear"), config=TrainingConfig())  # fmt: skip

    stack.solver("fold0", 0, solver(0, rows), rows)
    with pytest.raises(ValueError, match="different rows"):
        stack.solver("fold0", 1, solver(1, rows[1:]), rows[1:])


def test_classes_stack_by_default_only_for_networks_trained_with_sgd_on_cuda(monkeypatch):
    import metro.search.class_stack as class_stack

    assert not stacks_classes(MLP, TrainingConfig(device="cpu"))
    # as resolved on a CUDA machine
    monkeypatch.setattr(class_stack, "resolve_device", lambda device: torch.device("cuda"))
    assert not stacks_classes(ModelSpec("linear"), TrainingConfig(device="cuda"))
    assert stacks_classes(MLP, TrainingConfig(device="cuda"))
    assert stacks_classes(ModelSpec("cnn3"), TrainingConfig(device="cuda"))
    assert not stacks_classes(MLP, TrainingConfig(device="cuda", optimizer="lbfgs"))


@pytest.mark.gpu
def test_on_cuda_an_averaged_network_fit_stacks_its_classes_and_chooses_as_alone():
    X, y = load_iris(return_X_y=True)
    params: dict = {"n_lambdas": 7, "refine": "off", "random_state": 0, "average": "macro",
                    "model": "mlp", "model_params": {"hidden": (16,)},
                    "training": {"epochs": 20, "batch_size": 32, "device": "cuda"}}  # fmt: skip
    auto = MetroClassifier(**params).fit(X, y)
    alone = fit_averaged(MetroClassifier(**params), X, y, stack_classes=False)
    assert auto.stacked_fits_ == 5
    assert auto.device_.startswith("cuda")
    assert abs(auto.score(X, y) - alone.score(X, y)) < 0.05


@pytest.mark.parametrize("stack_classes", [False, True])
def test_an_averaged_fits_solvers_go_through_its_wrapper(stack_classes):
    """fit_averaged(wrap_solver=...) sees every solver of every class (a recording worker's
    hook); with the classes stacked, the folds' grids are the stack's and only each class's
    refit reaches it. What the wrapper returns is what the search uses."""
    from metro.search.solver import TrainerSolver

    X, y = load_iris(return_X_y=True)
    params: dict = {"n_lambdas": 3, "refine": "off", "random_state": 0, "average": "macro",
                    "cv": 3, "training": {"max_iter": 40}}  # fmt: skip
    seen: list[tuple[int, str]] = []
    solved: list[tuple[int, str]] = []

    class Counting:
        def __init__(self, c: int, role: str, inner: TrainerSolver) -> None:
            self.c, self.role, self.inner = c, role, inner

        def solve(self, *args, **kwargs):
            solved.append((self.c, self.role))
            return self.inner.solve(*args, **kwargs)

        def __getattr__(self, name):
            return getattr(self.inner, name)

    def wrap(c: int, role: str, inner: TrainerSolver):
        assert isinstance(inner, TrainerSolver)
        seen.append((c, role))
        return Counting(c, role, inner)

    wrapped = fit_averaged(
        MetroClassifier(**params), X, y, stack_classes=stack_classes, wrap_solver=wrap
    )
    plain = fit_averaged(MetroClassifier(**params), X, y, stack_classes=stack_classes)
    folds = [f"fold{k}" for k in range(3)]
    roles = ["refit"] if stack_classes else [*folds, "refit"]
    assert sorted(seen) == sorted((c, r) for c in range(3) for r in roles)
    assert set(solved) == set(seen)  # each wrapped solver was the one asked to fit
    np.testing.assert_array_equal(wrapped.lambdas_, plain.lambdas_)
    np.testing.assert_array_equal(wrapped.decision_function(X), plain.decision_function(X))


@pytest.mark.parametrize("cv", [3, None])
def test_class_solver_builds_what_the_averaged_fit_builds(cv):
    """metro.multiclass.class_solver (what a helping worker fits from): for every class and
    role (three folds and the refit, or a holdout's "main" and the refit), the same rows,
    targets, metric and settings as the solver fit_averaged hands its search; and a fit of it
    equals the search's own fit."""
    from metro.multiclass import class_solver
    from metro.search.solver import TrainerSolver

    X, y = load_iris(return_X_y=True)
    params: dict = {"n_lambdas": 3, "refine": "off", "random_state": 4, "average": "macro",
                    "cv": cv, "training": {"max_iter": 30}}  # fmt: skip
    built: dict[tuple[int, str], TrainerSolver] = {}

    def keep(c: int, role: str, inner: TrainerSolver) -> TrainerSolver:
        built[(c, role)] = inner
        return inner

    fit_averaged(MetroClassifier(**params), X, y, wrap_solver=keep)
    roles = ["fold0", "fold1", "fold2", "refit"] if cv else ["main", "refit"]
    assert sorted(built) == sorted((c, r) for c in range(3) for r in roles)
    for (c, role), inner in built.items():
        again = class_solver(MetroClassifier(**params), X, y, class_index=c, role=role)
        np.testing.assert_array_equal(again.X, inner.X)
        np.testing.assert_array_equal(again.y, inner.y)
        if inner.X_validation is None:
            assert again.X_validation is None and again.y_validation is None
        else:
            np.testing.assert_array_equal(again.X_validation, inner.X_validation)
            np.testing.assert_array_equal(again.y_validation, inner.y_validation)
        assert again.spec == inner.spec and again.config == inner.config
        assert again.model_spec == inner.model_spec
    lambdas = np.array([-0.6, -0.3])
    a = built[(1, roles[0])].solve(lambdas, shift="minimal")
    b = class_solver(MetroClassifier(**params), X, y, class_index=1, role=roles[0]).solve(
        lambdas, shift="minimal"
    )
    np.testing.assert_array_equal([c.validation_cells for c in a], [c.validation_cells for c in b])
    with pytest.raises(ValueError, match="class 3 is not one of the 3"):
        class_solver(MetroClassifier(**params), X, y, class_index=3, role=roles[0])
    missing = "main" if cv else "fold0"
    with pytest.raises(ValueError, match=f"has no solver '{missing}'"):
        class_solver(MetroClassifier(**params), X, y, class_index=0, role=missing)
