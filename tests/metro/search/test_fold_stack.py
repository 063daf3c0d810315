"""The folds of a cross-validated grid trained as one stack (metro.search.fold_stack)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from metro.datasets import Dataset
from metro.experiment import prepare_repeat, run_experiment
from metro.metrics import get_metric
from metro.models import ModelSpec
from metro.search import SearchConfig, grid_search
from metro.search.fold_stack import FoldStackSolver, stacks_folds
from metro.surrogates import get_surrogate
from metro.trainer import TrainingConfig

MLP = ModelSpec("mlp", hidden=(8,))
CONFIG = TrainingConfig(device="cpu", epochs=6, batch_size=64, seed=0)
LOGISTIC = get_surrogate("logistic")


def _dataset(n: int = 400, seed: int = 0) -> Dataset:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6)).astype(np.float32)
    y = (X[:, 0] + 0.7 * X[:, 1] + rng.normal(size=n) > 1.2).astype(np.int64)
    return Dataset(
        X=X, y=y, feature_names=None, positive_label=1, negative_label=0, source="fold-stack"
    )


def _setup(dataset: Dataset, config: TrainingConfig = CONFIG):  # type: ignore[no-untyped-def]
    return prepare_repeat(
        dataset, metric=get_metric("f1"), surrogate=LOGISTIC, model=MLP, training=config,
        repeat=0,
    )  # fmt: skip


def test_a_fold_stack_judges_each_fold_on_its_own_rows_like_the_fold_solvers() -> None:
    setup = _setup(_dataset())
    stack = setup.solver("folds3")
    assert isinstance(stack, FoldStackSolver) and stack.n_folds == 3
    lambdas = np.array([-0.6, -0.4, -0.2])
    cands = stack.solve(lambdas, shift="minimal")
    assert [c.fold for c in cands] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert [c.lam for c in cands] == [*lambdas] * 3
    for f in range(3):
        solver = setup.solver(f"fold{f}of3")
        assert solver.y_validation is not None
        for c in cands[3 * f : 3 * f + 3]:
            # the held-out rows are the fold solver's, and the cells are those of the model's
            # own scores there (and on its training rows)
            np.testing.assert_array_equal(c.validation_labels, solver.y_validation)
            model = c.model()
            scores = solver.held_out_scores(model)
            assert scores is not None
            np.testing.assert_allclose(c.validation_scores, scores, rtol=1e-5, atol=1e-6)
            positives = (scores >= 0).mean()
            assert c.validation_cells is not None
            assert c.validation_cells[0] + c.validation_cells[1] == pytest.approx(positives)


def test_held_out_labels_never_reach_their_folds_models() -> None:
    data = _dataset()
    setup = _setup(data)
    dev = setup.development
    folds = setup.fold_positions(3)
    lambdas = np.array([-0.5, -0.3])

    def solve(y: np.ndarray) -> list:  # type: ignore[type-arg]
        stack = FoldStackSolver(
            setup.spec, data.X[dev], y, folds, surrogate=LOGISTIC, model=MLP, config=CONFIG
        )
        return stack.solve(lambdas, shift="minimal")

    base = solve(data.y[dev])
    # Flip the labels of fold 0's held-out rows: fold 0's models must not move, the others do.
    y2 = data.y[dev].copy()
    y2[folds[0][1]] = 1 - y2[folds[0][1]]
    other = solve(y2)
    for i in range(2):  # fold 0
        for name, t in base[i].model().tensors().items():
            assert torch.equal(t, other[i].model().tensors()[name]), name
    moved = any(
        not torch.equal(t, other[2].model().tensors()[name])
        for name, t in base[2].model().tensors().items()
    )
    assert moved  # fold 1 trains on fold 0's held-out rows


def test_the_batch_grows_by_the_rows_of_the_other_folds() -> None:
    setup = _setup(_dataset(n=500), TrainingConfig(device="cpu", batch_size=100))
    stack = setup.solver("folds5")
    assert isinstance(stack, FoldStackSolver)
    assert stack.fit_config.batch_size == 125  # 400 development rows, 320 per fold
    mask = stack.row_mask(2)
    assert mask.shape == (400, 10) and (mask.sum(0) == 320).all()
    # every development row is held out by exactly one fold: its models skip it
    assert ((~mask[:, ::2]).sum(1) == 1).all()


def test_the_grid_chooses_from_a_fold_stack_as_from_the_fold_solvers() -> None:
    setup = _setup(_dataset())
    folds = [setup.solver(f"fold{k}of3") for k in range(3)]
    config = SearchConfig(n_lambdas=5, cv=3)
    stacked = grid_search(folds, config=config, fold_stack=setup.solver("folds3"))
    plain = grid_search(folds, config=config)
    assert stacked.n_folds == plain.n_folds == 3
    assert len(stacked.trace) == len(plain.trace) == 15
    assert sorted(s.fold for s in stacked.trace) == sorted(s.fold for s in plain.trace)
    assert [c.fold for c in stacked.fold_fits] == [0, 1, 2]
    # Different batches, same problem: the pooled held-out curves agree closely.
    curve = {p.lam: p.loss for p in stacked.selection_curve}
    for p in plain.selection_curve:
        assert abs(curve[p.lam] - p.loss) < 0.08


def test_run_experiment_stacks_folds_when_asked_and_scores_alike() -> None:
    data = _dataset(n=500, seed=1)
    kw = dict(
        metric=get_metric("f1"), surrogate=LOGISTIC, model=MLP,
        search=SearchConfig(n_lambdas=5, cv=3), training=CONFIG,
    )  # fmt: skip
    stacked = run_experiment(data, stack_folds=True, **kw)  # type: ignore[arg-type]
    plain = run_experiment(data, stack_folds=False, **kw)  # type: ignore[arg-type]
    test = {r.method: r.value for r in stacked.scores if r.split == "test"}
    test_plain = {r.method: r.value for r in plain.scores if r.split == "test"}
    assert abs(test["metro"] - test_plain["metro"]) < 0.1
    assert stacked.searches[0].n_folds == 3


def test_stacking_is_refused_where_it_cannot_apply() -> None:
    data = _dataset()
    with pytest.raises(ValueError, match="stack_folds needs the SGD optimizer"):
        run_experiment(
            data, metric=get_metric("f1"), surrogate=LOGISTIC, model=ModelSpec("linear"),
            search=SearchConfig(n_lambdas=3, cv=3), training=TrainingConfig(device="cpu"),
            stack_folds=True,
        )  # fmt: skip
    setup = _setup(data)
    with pytest.raises(ValueError, match="at least two folds"):
        FoldStackSolver(
            setup.spec, data.X, data.y, [setup.fold_positions(3)[0]], surrogate=LOGISTIC,
            model=MLP, config=CONFIG,
        )  # fmt: skip
    with pytest.raises(ValueError, match="takes no warm start"):
        stack = setup.solver("folds3")
        first = stack.solve(np.array([-0.5]), shift="minimal")[0]
        stack.solve(np.array([-0.4]), shift="minimal", warm_start=first)


def test_folds_stack_by_default_for_an_mlp_on_cuda_only(monkeypatch: pytest.MonkeyPatch) -> None:
    import metro.search.fold_stack as fold_stack

    assert not stacks_folds(MLP, TrainingConfig(device="cpu"))
    assert not stacks_folds(ModelSpec("linear"), TrainingConfig(device="cpu"))
    # As resolved on a CUDA machine: an mlp stacks; a cnn3 (measured slower stacked) and a
    # linear model (L-BFGS) do not.
    monkeypatch.setattr(fold_stack, "resolve_device", lambda device: torch.device("cuda"))
    assert stacks_folds(MLP, TrainingConfig(device="cuda"))
    assert not stacks_folds(ModelSpec("cnn3"), TrainingConfig(device="cuda"))
    assert not stacks_folds(ModelSpec("linear"), TrainingConfig(device="cuda"))
    assert not stacks_folds(MLP, TrainingConfig(device="cuda", optimizer="lbfgs"))


@pytest.mark.gpu
def test_on_cuda_the_folds_stack_by_default_and_score_like_fold_by_fold() -> None:
    data = _dataset(n=2000, seed=2)
    training = TrainingConfig(device="cuda", epochs=20, batch_size=256, seed=0)
    assert stacks_folds(MLP, training)
    kw = dict(
        metric=get_metric("f1"), surrogate=LOGISTIC, model=MLP,
        search=SearchConfig(n_lambdas=9, cv=5), training=training,
    )  # fmt: skip
    auto = run_experiment(data, **kw)  # type: ignore[arg-type]
    plain = run_experiment(data, stack_folds=False, **kw)  # type: ignore[arg-type]
    assert auto.searches[0].n_folds == 5 and len(auto.traces[0]) >= 45
    test = {r.method: r.value for r in auto.scores if r.split == "test"}
    test_plain = {r.method: r.value for r in plain.scores if r.split == "test"}
    assert abs(test["metro"] - test_plain["metro"]) < 0.05
