"""The K-at-once cost-sensitive trainer: equivalence with separate fits, agreement with
scikit-learn, cost monotonicity, checkpoints, cancellation, augmentation and validation."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from metro.models import ModelSpec, StackedModel, build_model
from metro.surrogates import SURROGATES, cost_sensitive_loss, get_surrogate
from metro.trainer import (
    FitResult,
    TrainingCancelled,
    TrainingConfig,
    TrainingEvent,
    augment_images,
    fit_cost_sensitive,
    predict_scores,
)

LOGISTIC = get_surrogate("logistic")
CPU = {"device": "cpu"}
MLP = ModelSpec("mlp", hidden=(8,))
CNN = ModelSpec("cnn3", channels=(3, 4, 4))


def _tabular(n: int = 300, d: int = 4, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * rng.uniform(0.5, 5.0, size=d) + rng.normal(size=d) * 3
    w = rng.normal(size=d)
    z = (X - X.mean(0)) / X.std(0)
    y = (z @ w + rng.logistic(size=n) > 0.5).astype(np.int64)
    return X.astype(np.float32), y


def _images(n: int = 24, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2, 8, 8)).astype(np.float32)
    y = (X[:, 0, :4].mean(axis=(1, 2)) > 0).astype(np.int64)
    return X, y


def _table(fp: float, fn: float) -> np.ndarray:
    """Costs [pred, true]: a false positive costs ``fp``, a false negative ``fn``."""
    return np.array([[0.0, fn], [fp, 0.0]])


COSTS = np.stack([_table(1.0, 0.2), _table(1.0, 1.0), _table(0.3, 1.0)])


# -- configuration ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("optimizer", "adam"),
        ("max_iter", 0),
        ("max_iter", 2.5),
        ("max_iter", True),
        ("tol", -1.0),
        ("tol", math.nan),
        ("weight_decay", -1e-4),
        ("weight_decay", math.inf),
        ("lr", 0.0),
        ("lr", "0.1"),
        ("momentum", 1.0),
        ("momentum", -0.1),
        ("batch_size", 0),
        ("epochs", 0),
        ("augment", 1),
        ("device", "gpu"),
        ("device", "cuda:x"),
        ("device", "cuda:100"),
        ("device", "cuda:" + "9" * 20),
        ("mixed_precision", "yes"),
        ("seed", -1),
        ("warm_start", "sometimes"),
        ("warm_start", 1),
        ("weight_decay", "strong"),
        ("weight_decay", -1e-4),
    ],
)
def test_config_validation_names_the_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        TrainingConfig(**{field: value})


def test_config_round_trip_and_optimizer_choice() -> None:
    config = TrainingConfig(lr=1, epochs=3, device="cuda:1", seed=4)
    assert isinstance(config.lr, float)
    assert TrainingConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config
    with pytest.raises(ValueError, match="unknown training config field"):
        TrainingConfig.from_dict({"learning_rate": 0.1})
    assert TrainingConfig().resolve_optimizer(ModelSpec("linear")) == "lbfgs"
    assert TrainingConfig().resolve_optimizer(MLP) == "sgd"
    assert TrainingConfig(optimizer="sgd").resolve_optimizer(ModelSpec("linear")) == "sgd"
    assert TrainingConfig().warm_start is True


def test_auto_weight_decay_is_scikit_learns_c1_penalty() -> None:
    """LogisticRegression(C=1) minimizes sum_i logloss_i + |w|^2 / 2; this trainer's ERM
    objective is mean_i log2(1 + e^(-y h)) / 2 + wd / 2 |w|^2. Dividing the first by
    2 n ln 2 gives the second exactly when wd = 1 / (2 n ln 2)."""
    auto = TrainingConfig()
    assert auto.weight_decay == "auto"
    for n in (10, 1000, 10**6):
        assert auto.resolve_weight_decay(n, "lbfgs") == pytest.approx(1 / (2 * n * np.log(2)))
    assert auto.resolve_weight_decay(1000, "sgd") == 1e-4
    assert TrainingConfig(weight_decay=3e-3).resolve_weight_decay(10, "lbfgs") == 3e-3
    assert TrainingConfig.from_dict(auto.to_dict()) == auto


def test_auto_weight_decay_fits_what_scikit_learn_fits() -> None:
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 5)).astype(np.float32)
    y = (X[:, 0] + 0.5 * rng.normal(size=400) > 0).astype(np.int64)
    fit = fit_cost_sensitive(
        X, y, np.array([[[0.0, 0.5], [0.5, 0.0]]]), model=ModelSpec("linear"),
        surrogate=LOGISTIC, config=TrainingConfig(tol=1e-10, max_iter=500, **CPU),
    )  # fmt: skip
    Z = (X - X.mean(0)) / X.std(0)
    ours = predict_scores(fit.model, X)[:, 0]
    theirs = LogisticRegression(C=1.0, tol=1e-10, max_iter=5000).fit(Z, y).decision_function(Z)
    np.testing.assert_allclose(ours, theirs, atol=2e-3)


# -- validation ---------------------------------------------------------------------------------
def test_input_validation() -> None:
    X, y = _tabular(n=20)
    fit = dict(model=ModelSpec("linear"), surrogate=LOGISTIC, config=TrainingConfig(**CPU))
    cases = [
        ((X[:10], y, COSTS), "10 rows but y has 20"),
        ((X, y * 2 - 1, COSTS), "labels 0"),
        ((X, y[:, None], COSTS), "one-dimensional"),
        ((X, y, COSTS[:, :1]), r"\[K, 2, 2\]"),
        ((X, y, COSTS[:0]), r"\[K, 2, 2\]"),
        ((X, y, -COSTS), "non-negative"),
        ((X, y, COSTS * np.nan), "finite"),
        ((np.where(X > 2, np.nan, X), y, COSTS), "finite"),
        ((X[:, 0], y, COSTS), "shape"),
        ((X[:0], y[:0], COSTS), "at least one"),
        ((X.astype(str), y, COSTS), "real numbers"),
    ]
    for args, message in cases:
        with pytest.raises(ValueError, match=message):
            fit_cost_sensitive(*args, **fit)
    with pytest.raises(ValueError, match="checkpoint_every"):
        fit_cost_sensitive(X, y, COSTS, checkpoint_every=0, **fit)
    with pytest.raises(ValueError, match="unknown surrogate"):
        fit_cost_sensitive(X, y, COSTS, model=ModelSpec("linear"), surrogate="savage")
    with pytest.raises(ValueError, match="ModelSpec or a StackedModel"):
        fit_cost_sensitive(X, y, COSTS, model="linear", surrogate=LOGISTIC)  # type: ignore[arg-type]


def test_model_and_option_validation() -> None:
    X, y = _tabular(n=20)
    images, labels = _images(n=8)
    stack2 = build_model(ModelSpec("linear"), input_shape=(4,), n_models=2)
    with pytest.raises(ValueError, match="stacks 2 models but costs has 3"):
        fit_cost_sensitive(X, y, COSTS, model=stack2, surrogate=LOGISTIC)
    with pytest.raises(ValueError, match="inputs of shape"):
        fit_cost_sensitive(X[:, :3], y, COSTS, model=stack2, surrogate=LOGISTIC)
    with pytest.raises(ValueError, match=r"\(C, H, W\)"):
        fit_cost_sensitive(X, y, COSTS, model=CNN, surrogate=LOGISTIC)
    with pytest.raises(ValueError, match="augment needs image inputs"):
        fit_cost_sensitive(
            X, y, COSTS, model=MLP, surrogate=LOGISTIC, config=TrainingConfig(augment=True)
        )
    with pytest.raises(ValueError, match="augment needs the sgd optimizer"):
        fit_cost_sensitive(
            images, labels, COSTS, model=ModelSpec("linear"), surrogate=LOGISTIC,
            config=TrainingConfig(augment=True),
        )  # fmt: skip
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            fit_cost_sensitive(
                X, y, COSTS, model=MLP, surrogate=LOGISTIC, config=TrainingConfig(device="cuda")
            )


# -- the K-at-once property ---------------------------------------------------------------------
def test_linear_k_at_once_equals_separate_fits() -> None:
    X, y = _tabular(n=400)
    config = TrainingConfig(**CPU)
    stacked = fit_cost_sensitive(
        X, y, COSTS, model=ModelSpec("linear"), surrogate=LOGISTIC, config=config
    )
    assert stacked.model.n_models == 3 and not stacked.model.training
    scores = predict_scores(stacked.model, X)
    for k in range(3):
        alone = fit_cost_sensitive(
            X, y, COSTS[k : k + 1], model=ModelSpec("linear"), surrogate=LOGISTIC, config=config
        )
        np.testing.assert_allclose(
            scores[:, k], predict_scores(alone.model, X)[:, 0], rtol=1e-3, atol=1e-3
        )
        np.testing.assert_allclose(stacked.surrogate_loss[k], alone.surrogate_loss[0], rtol=1e-5)


@pytest.mark.parametrize("shift", ["minimal", "paper"])
def test_linear_fast_path_matches_the_generic_objective(shift: str) -> None:
    """The linear objective (label groups, factored costs, signed margins, H + t U line search)
    computes the same objective and gradient as the generic full-batch pass."""
    from metro.costs import cost_tables
    from metro.metrics import f1
    from metro.trainer.common import costs_by_label
    from metro.trainer.lbfgs import _Flat, _LinearObjective, _Objective

    X, y = _tabular(n=257)
    costs = np.concatenate([cost_tables(f1(), [-0.8, -0.3], shift=shift), COSTS])
    table = costs_by_label(torch.from_numpy(costs).float())
    labels = torch.from_numpy(y)
    for name in SURROGATES:
        surrogate = get_surrogate(name)
        objectives = []
        for kind in (_LinearObjective, _Objective):
            model = build_model(ModelSpec("linear"), input_shape=(4,), n_models=5, X_stats=X)
            Z = model.standardize(torch.from_numpy(X))
            objectives.append(
                kind(model=model, flat=_Flat(model), Z=Z, y=labels, table=table,
                     surrogate=surrogate, weight_decay=0.01)
            )  # fmt: skip
        theta = torch.randn(5, 5, generator=torch.Generator().manual_seed(0))
        direction = torch.randn(5, 5, generator=torch.Generator().manual_seed(1))
        (f1_, g1, l1), (f2, g2, l2) = (o.evaluate(theta) for o in objectives)
        torch.testing.assert_close(f1_, f2, rtol=1e-6, atol=1e-7)
        torch.testing.assert_close(l1, l2, rtol=1e-6, atol=1e-7)
        torch.testing.assert_close(g1, g2, rtol=1e-4, atol=1e-6)
        # A line search along the direction: trial, accept some models, finish.
        t = torch.tensor([1.0, 0.5, 0.25, 0.0, 2.0])
        ok = torch.tensor([True, True, False, False, True])
        results = []
        for o in objectives:
            o.start_line(theta, direction)
            f_t, _ = o.trial(t)
            o.accept(ok)
            step = torch.where(ok, t, 0.0)
            results.append((f_t, o.finish_line(step, theta + step[:, None] * direction)))
        torch.testing.assert_close(results[0][0], results[1][0], rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(results[0][1][ok], results[1][1][ok], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shift", ["minimal", "paper"])
def test_metric_cost_tables_k_at_once_equal_separate_fits(shift: str) -> None:
    from metro.costs import cost_tables
    from metro.metrics import f1

    X, y = _tabular(n=300, seed=3)
    costs = cost_tables(f1(), np.linspace(-0.9, -0.1, 4), shift=shift)
    config = TrainingConfig(**CPU)
    stacked = fit_cost_sensitive(
        X, y, costs, model=ModelSpec("linear"), surrogate=LOGISTIC, config=config
    )
    scores = predict_scores(stacked.model, X)
    for k in range(4):
        alone = fit_cost_sensitive(
            X, y, costs[k : k + 1], model=ModelSpec("linear"), surrogate=LOGISTIC, config=config
        )
        np.testing.assert_allclose(
            scores[:, k], predict_scores(alone.model, X)[:, 0], rtol=1e-3, atol=1e-3
        )


def test_mlp_sgd_k_at_once_equals_separate_fits() -> None:
    X, y = _tabular(n=200)
    config = TrainingConfig(epochs=3, batch_size=32, lr=0.05, **CPU)
    stacked = fit_cost_sensitive(X, y, COSTS, model=MLP, surrogate=LOGISTIC, config=config)
    assert stacked.n_steps == 3
    for k in range(3):
        alone = fit_cost_sensitive(
            X, y, COSTS[k : k + 1], model=MLP, surrogate=LOGISTIC, config=config
        )
        for name, t in alone.model.tensors().items():
            torch.testing.assert_close(
                stacked.model.select([k]).tensors()[name], t, rtol=1e-5, atol=1e-6
            )


def test_cnn_k_at_once_equals_separate_fits() -> None:
    X, y = _images()
    config = TrainingConfig(epochs=2, batch_size=8, augment=True, **CPU)
    stacked = fit_cost_sensitive(X, y, COSTS[:2], model=CNN, surrogate=LOGISTIC, config=config)
    alone = fit_cost_sensitive(X, y, COSTS[1:2], model=CNN, surrogate=LOGISTIC, config=config)
    np.testing.assert_allclose(
        predict_scores(stacked.model, X)[:, 1],
        predict_scores(alone.model, X)[:, 0],
        rtol=1e-5,
        atol=1e-6,
    )


# -- what the fits mean -------------------------------------------------------------------------
@pytest.mark.parametrize("model", [ModelSpec("linear"), MLP])
def test_costlier_false_negatives_predict_more_positives(model: ModelSpec) -> None:
    X, y = _tabular(n=400, seed=1)
    ratios = [0.1, 0.3, 1.0, 3.0, 10.0]  # cost of a false negative / cost of a false positive
    costs = np.stack([_table(1.0, r) / max(1.0, r) for r in ratios])
    fit = fit_cost_sensitive(
        X,
        y,
        costs,
        model=model,
        surrogate=LOGISTIC,
        config=TrainingConfig(epochs=20, batch_size=64, **CPU),
    )
    positive_rate = (predict_scores(fit.model, X) >= 0).mean(axis=0)
    assert np.all(np.diff(positive_rate) >= 0), positive_rate
    assert positive_rate[-1] - positive_rate[0] > 0.3, positive_rate


def test_logistic_fit_matches_sklearn() -> None:
    from sklearn.linear_model import LogisticRegression

    X, y = _tabular(n=500, d=5, seed=2)
    wd = 1e-3
    config = TrainingConfig(weight_decay=wd, tol=1e-10, max_iter=500, **CPU)
    fit = fit_cost_sensitive(
        X,
        y,
        np.array([_table(1.0, 1.0)]),
        model=ModelSpec("linear"),
        surrogate=LOGISTIC,
        config=config,
    )
    # Our objective is s * mean(log-loss) + wd/2 |w|^2, s = Phi(0) / ln 2 (1 for a natural-log
    # logistic, 1/ln 2 for base 2); sklearn's is C * sum(log-loss) + 1/2 |w|^2.
    s = float(LOGISTIC.phi(torch.zeros(1))) / math.log(2.0)
    Z = (X - X.mean(0)) / X.std(0)
    reference = LogisticRegression(C=s / (wd * len(y)), tol=1e-12, max_iter=10_000).fit(Z, y)
    ours = predict_scores(fit.model, X)[:, 0]
    expected = reference.decision_function(Z)
    np.testing.assert_allclose(ours, expected, rtol=1e-3, atol=2e-3 * np.abs(expected).max())


def test_weight_decay_spares_the_bias() -> None:
    X, y = _tabular(n=300)
    config = TrainingConfig(weight_decay=100.0, **CPU)
    fit = fit_cost_sensitive(
        X,
        y,
        np.array([_table(1.0, 1.0)]),
        model=ModelSpec("linear"),
        surrogate=LOGISTIC,
        config=config,
    )
    assert float(fit.model.weight.detach().abs().max()) < 1e-2
    p = y.mean()
    assert float(fit.model.bias.detach()[0]) == pytest.approx(math.log(p / (1 - p)), abs=0.02)


@pytest.mark.parametrize("name", SURROGATES)
def test_every_surrogate_trains_without_nan(name: str) -> None:
    surrogate = get_surrogate(name)
    X, y = _tabular(n=150)
    for model, extra in [(ModelSpec("linear"), {}), (MLP, {"epochs": 2, "batch_size": 32})]:
        fit = fit_cost_sensitive(
            X, y, COSTS, model=model, surrogate=surrogate, config=TrainingConfig(**extra, **CPU)
        )
        scores = predict_scores(fit.model, X)
        assert np.isfinite(scores).all() and np.isfinite(fit.surrogate_loss).all()
        assert all(torch.isfinite(t).all() for t in fit.model.tensors().values())


def test_a_blown_up_sgd_fit_is_flagged_and_spares_the_rest_of_its_stack() -> None:
    X, y = _tabular(n=200)
    surrogate = get_surrogate("exponential")
    config = TrainingConfig(epochs=5, batch_size=32, lr=0.05, **CPU)
    # The same costs scaled by 1e4 act as a learning rate 1e4 times larger: that model explodes.
    costs = np.stack([_table(1.0, 1.0), _table(1e4, 1e4)])
    both = fit_cost_sensitive(X, y, costs, model=MLP, surrogate=surrogate, config=config)
    assert both.diverged.tolist() == [False, True]
    assert math.isfinite(both.surrogate_loss[0]) and both.surrogate_loss[1] == math.inf
    alone = fit_cost_sensitive(X, y, costs[:1], model=MLP, surrogate=surrogate, config=config)
    assert not alone.diverged.any()
    np.testing.assert_allclose(
        predict_scores(both.model, X)[:, 0], predict_scores(alone.model, X)[:, 0], rtol=1e-5,
        atol=1e-5,
    )  # fmt: skip


def test_an_undertrained_sgd_fit_is_not_called_diverged() -> None:
    # One epoch of a network starts above the zero scorer's loss and ends a little lower: slow,
    # not blown up.
    X, y = _tabular(n=200)
    fit = fit_cost_sensitive(
        X, y, COSTS, model=MLP, surrogate="logistic",
        config=TrainingConfig(epochs=1, batch_size=64, lr=1e-3, **CPU),
    )  # fmt: skip
    assert not fit.diverged.any() and np.isfinite(fit.surrogate_loss).all()


def test_surrogate_loss_is_the_mean_training_loss() -> None:
    X, y = _tabular(n=200)
    for model in (ModelSpec("linear"), MLP):
        fit = fit_cost_sensitive(
            X, y, COSTS, model=model, surrogate=LOGISTIC, config=TrainingConfig(epochs=2, **CPU)
        )
        scores = torch.from_numpy(predict_scores(fit.model, X))
        c = torch.from_numpy(COSTS).float()[:, :, torch.from_numpy(y)]  # [K, pred, n]
        expected = cost_sensitive_loss(LOGISTIC, scores, c[:, 1].T, c[:, 0].T).mean(0)
        np.testing.assert_allclose(fit.surrogate_loss, expected.numpy(), rtol=1e-4)


def test_standardization_makes_linear_fits_affine_invariant() -> None:
    X, y = _tabular(n=300)
    # (Offsets in proportion to the scales, so that float32 keeps the data's information.)
    shifted = X * np.array([100.0, 0.01, -3.0, 1.0], dtype=np.float32) + [500.0, 0.1, 7.0, -2.0]
    # Weight decay is not scale-invariant on raw features: only the standardization inside the
    # model makes the two fits the same.
    config = TrainingConfig(weight_decay=1e-2, tol=1e-9, **CPU)
    a = fit_cost_sensitive(
        X, y, COSTS, model=ModelSpec("linear"), surrogate=LOGISTIC, config=config
    )
    b = fit_cost_sensitive(
        shifted, y, COSTS, model=ModelSpec("linear"), surrogate=LOGISTIC, config=config
    )
    np.testing.assert_allclose(
        predict_scores(b.model, shifted), predict_scores(a.model, X), rtol=1e-3, atol=1e-3
    )


# -- reproducibility and warm starts ------------------------------------------------------------
def test_same_seed_same_model_and_global_rng_untouched() -> None:
    X, y = _tabular(n=120)
    config = TrainingConfig(epochs=2, batch_size=16, seed=3, **CPU)
    state = torch.random.get_rng_state()
    a = fit_cost_sensitive(X, y, COSTS, model=MLP, surrogate=LOGISTIC, config=config)
    assert torch.equal(state, torch.random.get_rng_state())
    b = fit_cost_sensitive(X, y, COSTS, model=MLP, surrogate=LOGISTIC, config=config)
    c = fit_cost_sensitive(
        X,
        y,
        COSTS,
        model=MLP,
        surrogate=LOGISTIC,
        config=TrainingConfig(epochs=2, batch_size=16, seed=4, **CPU),
    )
    for name, t in a.model.tensors().items():
        assert torch.equal(t, b.model.tensors()[name]), name
    assert not torch.equal(a.model.out_weight, c.model.out_weight)


def test_warm_start_broadcasts_and_leaves_the_start_alone() -> None:
    X, y = _tabular(n=200)
    config = TrainingConfig(**CPU)
    first = fit_cost_sensitive(
        X, y, COSTS[1:2], model=ModelSpec("linear"), surrogate=LOGISTIC, config=config
    )
    before = first.model.tensors()
    warm = fit_cost_sensitive(X, y, COSTS, model=first.model, surrogate=LOGISTIC, config=config)
    cold = fit_cost_sensitive(
        X, y, COSTS, model=ModelSpec("linear"), surrogate=LOGISTIC, config=config
    )
    assert warm.model.n_models == 3
    assert all(torch.equal(t, first.model.tensors()[k]) for k, t in before.items())
    # Starting at the middle table's optimum, the middle fit has (almost) nothing left to do.
    assert warm.n_steps <= cold.n_steps
    np.testing.assert_allclose(
        predict_scores(warm.model, X), predict_scores(cold.model, X), rtol=1e-3, atol=1e-3
    )
    # A warm start keeps its own standardization.
    other = fit_cost_sensitive(
        X + 5.0, y, COSTS, model=first.model, surrogate=LOGISTIC, config=config
    )
    assert torch.equal(other.model.mean, first.model.mean)


# -- events, cancellation, checkpoints ----------------------------------------------------------
def test_events_and_cancellation() -> None:
    X, y = _tabular(n=100)
    events: list[TrainingEvent] = []
    fit = fit_cost_sensitive(
        X,
        y,
        COSTS,
        model=MLP,
        surrogate=LOGISTIC,
        config=TrainingConfig(epochs=3, **CPU),
        callback=events.append,
    )
    assert [e.step for e in events] == [1, 2, 3]
    assert all(e.total_steps == 3 and e.n_models == 3 and e.checkpoint is None for e in events)
    assert (
        all(math.isfinite(e.loss) for e in events) and fit.n_steps == 3 and fit.checkpoint is None
    )

    seen: list[int] = []

    def cancel(event: TrainingEvent) -> None:
        seen.append(event.step)
        if event.step == 2:
            raise TrainingCancelled("stop")

    for model in (MLP, ModelSpec("linear")):
        seen.clear()
        with pytest.raises(TrainingCancelled):
            fit_cost_sensitive(
                X,
                y,
                COSTS,
                model=model,
                surrogate=LOGISTIC,
                config=TrainingConfig(epochs=5, **CPU),
                callback=cancel,
            )
        assert seen == [1, 2]


def _through_safetensors(checkpoint: dict, tmp_path) -> dict:
    """A checkpoint is a safetensors file plus a JSON document."""
    save_file(checkpoint["tensors"], str(tmp_path / "ckpt.safetensors"))
    (tmp_path / "ckpt.json").write_text(json.dumps(checkpoint["scalars"]))
    return {
        "tensors": load_file(str(tmp_path / "ckpt.safetensors")),
        "scalars": json.loads((tmp_path / "ckpt.json").read_text()),
    }


@pytest.mark.parametrize("kind", ["mlp", "cnn3"])
def test_sgd_resume_equals_an_uninterrupted_run(kind: str, tmp_path) -> None:
    if kind == "mlp":
        (X, y), model, extra = _tabular(n=100), MLP, {}
    else:
        (X, y), model, extra = _images(n=16), CNN, {"augment": True}
    config = TrainingConfig(epochs=4, batch_size=16, **extra, **CPU)
    events: list[TrainingEvent] = []
    full = fit_cost_sensitive(
        X,
        y,
        COSTS,
        model=model,
        surrogate=LOGISTIC,
        config=config,
        callback=events.append,
        checkpoint_every=2,
    )
    assert [e.checkpoint is not None for e in events] == [False, True, False, True]
    assert full.checkpoint is not None and full.checkpoint["scalars"]["step"] == 4
    checkpoint = _through_safetensors(events[1].checkpoint, tmp_path)
    assert checkpoint["scalars"]["step"] == 2
    steps: list[int] = []
    resumed = fit_cost_sensitive(
        X, y, COSTS, model=model, surrogate=LOGISTIC, config=config, resume_from=checkpoint,
        callback=lambda e: steps.append(e.step),
    )  # fmt: skip
    assert steps == [3, 4] and resumed.n_steps == 4
    for name, t in full.model.tensors().items():
        assert torch.allclose(resumed.model.tensors()[name], t, rtol=0, atol=0), name
    np.testing.assert_array_equal(resumed.surrogate_loss, full.surrogate_loss)


def test_lbfgs_resume_equals_an_uninterrupted_run(tmp_path) -> None:
    X, y = _tabular(n=300)
    config = TrainingConfig(**CPU)
    events: list[TrainingEvent] = []
    full = fit_cost_sensitive(
        X, y, COSTS, model=ModelSpec("linear"), surrogate=LOGISTIC, config=config,
        callback=events.append, checkpoint_every=3,
    )  # fmt: skip
    assert full.n_steps > 3
    checkpoint = _through_safetensors(events[2].checkpoint, tmp_path)
    resumed = fit_cost_sensitive(
        X, y, COSTS, model=ModelSpec("linear"), surrogate=LOGISTIC, config=config,
        resume_from=checkpoint, checkpoint_every=3,
    )  # fmt: skip
    assert resumed.n_steps == full.n_steps
    for name, t in full.model.tensors().items():
        assert torch.equal(resumed.model.tensors()[name], t), name
    # Without checkpoints along the way the run differs only by float round-off.
    plain = fit_cost_sensitive(
        X, y, COSTS, model=ModelSpec("linear"), surrogate=LOGISTIC, config=config
    )
    np.testing.assert_allclose(
        predict_scores(plain.model, X), predict_scores(full.model, X), rtol=1e-3, atol=1e-3
    )
    # Resuming a finished fit returns it unchanged.
    assert full.checkpoint is not None
    done = fit_cost_sensitive(
        X, y, COSTS, model=ModelSpec("linear"), surrogate=LOGISTIC, config=config,
        resume_from=full.checkpoint,
    )  # fmt: skip
    assert done.n_steps == full.n_steps
    assert torch.equal(done.model.weight, full.model.weight)


def test_resume_refuses_another_fit() -> None:
    X, y = _tabular(n=60)
    config = TrainingConfig(epochs=2, **CPU)
    fit = fit_cost_sensitive(
        X, y, COSTS, model=MLP, surrogate=LOGISTIC, config=config, checkpoint_every=1
    )
    checkpoint = fit.checkpoint
    assert checkpoint is not None
    common = dict(model=MLP, surrogate=LOGISTIC, resume_from=checkpoint)
    with pytest.raises(ValueError, match="cost tables differ"):
        fit_cost_sensitive(X, y, COSTS * 0.5, config=config, **common)
    with pytest.raises(ValueError, match=r"config\.lr"):
        fit_cost_sensitive(X, y, COSTS, config=TrainingConfig(epochs=2, lr=0.1, **CPU), **common)
    with pytest.raises(ValueError, match="n_examples"):
        fit_cost_sensitive(X[:50], y[:50], COSTS, config=config, **common)
    with pytest.raises(ValueError, match="checkpoint dict"):
        fit_cost_sensitive(
            X, y, COSTS, model=MLP, surrogate=LOGISTIC, config=config, resume_from={"step": 1}
        )


# -- augmentation and scoring -------------------------------------------------------------------
def test_augmentation_is_a_seeded_shift_and_flip() -> None:
    images = torch.arange(2 * 3 * 6 * 5, dtype=torch.float32).reshape(2, 3, 6, 5) + 1

    def run(seed: int) -> torch.Tensor:
        return augment_images(images, generator=torch.Generator().manual_seed(seed))

    out = run(0)
    assert out.shape == images.shape
    assert torch.equal(out, run(0))
    assert not all(torch.equal(run(0), run(s)) for s in range(1, 4))
    padded = torch.nn.functional.pad(images, (4, 4, 4, 4))
    for i in range(2):
        windows = [
            w
            for dy in range(9)
            for dx in range(9)
            for w in (padded[i, :, dy : dy + 6, dx : dx + 5],)
            for w in (w, w.flip(-1))
        ]
        assert any(torch.equal(out[i], w) for w in windows)
    with pytest.raises(ValueError, match="images"):
        augment_images(images[0], generator=torch.Generator())


def test_predict_scores() -> None:
    X, _ = _tabular(n=50)
    model = build_model(MLP, input_shape=(4,), n_models=2, X_stats=X)
    scores = predict_scores(model, X, batch_size=7)
    assert scores.shape == (50, 2) and scores.dtype == np.float32
    np.testing.assert_allclose(scores, model(torch.from_numpy(X)).detach().numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="inputs of shape"):
        predict_scores(model, X[:, :3])
    with pytest.raises(ValueError, match="batch_size"):
        predict_scores(model, X, batch_size=0)
    with pytest.raises(ValueError, match="StackedModel"):
        predict_scores("model", X)  # type: ignore[arg-type]


def test_fit_result_fields() -> None:
    X, y = _tabular(n=50)
    fit = fit_cost_sensitive(
        X, y, COSTS, model=ModelSpec("linear"), surrogate="logistic", config=TrainingConfig(**CPU)
    )
    assert isinstance(fit, FitResult) and isinstance(fit.model, StackedModel)
    assert fit.surrogate_loss.shape == (3,) and fit.seconds > 0 and 1 <= fit.n_steps <= 200
    assert fit.diverged.shape == (3,) and not fit.diverged.any()
    assert next(fit.model.parameters()).device.type == "cpu"


@pytest.mark.gpu
def test_cuda_fit_matches_cpu_roughly() -> None:
    X, y = _images(n=64)
    config = dict(epochs=3, batch_size=16, augment=True)
    gpu = fit_cost_sensitive(
        X, y, COSTS, model=CNN, surrogate=LOGISTIC, config=TrainingConfig(device="cuda", **config)
    )
    assert next(gpu.model.parameters()).device.type == "cpu"
    assert np.isfinite(gpu.surrogate_loss).all()
    Xt, yt = _tabular(n=300)
    lin_gpu = fit_cost_sensitive(
        Xt,
        yt,
        COSTS,
        model=ModelSpec("linear"),
        surrogate=LOGISTIC,
        config=TrainingConfig(device="cuda"),
    )
    lin_cpu = fit_cost_sensitive(
        Xt, yt, COSTS, model=ModelSpec("linear"), surrogate=LOGISTIC, config=TrainingConfig(**CPU)
    )
    np.testing.assert_allclose(
        predict_scores(lin_gpu.model, Xt, device="cuda"),
        predict_scores(lin_cpu.model, Xt),
        rtol=1e-2,
        atol=1e-2,
    )


# -- torch.compile --------------------------------------------------------------------------------
def _spy_compiled(monkeypatch: pytest.MonkeyPatch, raises: bool = False) -> list[int]:
    """Stand in for torch.compile's output (compiling for real takes tens of seconds on a CPU):
    record each call's batch, then run the eager forward (or fail like a broken compiler)."""
    from metro.trainer import sgd

    calls: list[int] = []

    def compiled(model: StackedModel, z: torch.Tensor, amp: bool) -> torch.Tensor:
        calls.append(z.shape[0])
        if raises:
            raise RuntimeError("no C++ compiler")
        return sgd._stack_forward(model, z, amp)

    monkeypatch.setattr(sgd, "_compiled_forward", lambda: compiled)
    return calls


def test_compile_runs_every_step_through_the_compiled_forward(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    X, y = _images(n=40)
    config = dict(epochs=2, batch_size=16, augment=True, **CPU)
    eager = fit_cost_sensitive(
        X, y, COSTS, model=CNN, surrogate=LOGISTIC, config=TrainingConfig(**config)
    )
    calls = _spy_compiled(monkeypatch)
    compiled = fit_cost_sensitive(
        X, y, COSTS, model=CNN, surrogate=LOGISTIC, config=TrainingConfig(compile=True, **config)
    )
    assert calls == [16, 16, 8] * 2  # every minibatch step of both epochs, the last one short
    np.testing.assert_array_equal(compiled.surrogate_loss, eager.surrogate_loss)
    for name, t in compiled.model.tensors().items():
        assert torch.equal(t, eager.model.tensors()[name]), name


def test_a_failing_compiler_falls_back_to_eager_with_a_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    X, y = _images(n=32)
    config = dict(epochs=2, batch_size=16, **CPU)
    eager = fit_cost_sensitive(
        X, y, COSTS, model=CNN, surrogate=LOGISTIC, config=TrainingConfig(**config)
    )
    calls = _spy_compiled(monkeypatch, raises=True)
    with pytest.warns(RuntimeWarning, match="torch.compile failed .*no C\\+\\+ compiler"):
        fallback = fit_cost_sensitive(
            X, y, COSTS, model=CNN, surrogate=LOGISTIC,
            config=TrainingConfig(compile=True, **config),
        )  # fmt: skip
    assert calls == [16]  # tried once, then eager for the rest of the fit
    np.testing.assert_array_equal(fallback.surrogate_loss, eager.surrogate_loss)


def test_compile_is_validated() -> None:
    with pytest.raises(ValueError, match="compile must be true or false"):
        TrainingConfig(compile="yes")  # type: ignore[arg-type]
    X, y = _tabular(n=40)
    with pytest.raises(ValueError, match="compile needs the sgd optimizer"):
        fit_cost_sensitive(
            X, y, COSTS, model=ModelSpec("linear"), surrogate=LOGISTIC,
            config=TrainingConfig(compile=True, **CPU),
        )  # fmt: skip


@pytest.mark.gpu
def test_cuda_compiled_fit_trains_like_the_eager_one() -> None:
    from metro.trainer import sgd

    X, y = _images(n=256)
    config = dict(epochs=3, batch_size=64, augment=True, device="cuda")
    fits = {
        compiled: fit_cost_sensitive(
            X,
            y,
            COSTS,
            model=CNN,
            surrogate=LOGISTIC,
            config=TrainingConfig(compile=compiled, **config),
        )
        for compiled in (False, True)
    }
    assert sgd._compiled_forward.cache_info().currsize == 1  # the compiled path was built
    assert np.isfinite(fits[True].surrogate_loss).all()
    # bf16 kernels fused differently: the same training, up to rounding along the way.
    np.testing.assert_allclose(fits[True].surrogate_loss, fits[False].surrogate_loss, rtol=0.05)
