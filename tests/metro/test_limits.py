"""The bounds of every numeric setting of the library, each a ValueError that names the field and
the limit, and the counts a service bounds a job's cost with (parameters, models trained)."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

import numpy as np
import pytest

from metro.baselines import BASELINES, N_THETAS, baseline_models
from metro.datasets import builtin_shape, load_dataset
from metro.experiment import MAX_REPEATS, models_per_repeat, prepare_repeat, run_experiment
from metro.metrics import (
    MAX_ABS_COEFFICIENT,
    MAX_ABS_LAMBDA,
    MetricSpec,
    f1,
    f_beta,
    weighted_accuracy,
)
from metro.model_selection import split_sizes
from metro.models import (
    MAX_CHANNELS,
    MAX_HIDDEN_LAYERS,
    MAX_LAYER_WIDTH,
    ModelSpec,
    StackedModel,
)
from metro.search.config import MAX_MULTIPLIER, MAX_N_LAMBDAS, SearchConfig
from metro.search.grid import grid_lambdas
from metro.surrogates import get_surrogate
from metro.trainer import TrainingConfig, fit_cost_sensitive
from metro.trainer.config import MAX_EPOCHS, MAX_LR, MAX_SEED

# -- training ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("seed", 2**70, "seed must be an integer between 0 and 4294967295"),
        ("seed", 2**32, "seed must be an integer between 0 and 4294967295"),
        ("seed", -1, "seed must be an integer between 0 and 4294967295"),
        ("lr", 1e308, "lr must be a finite number > 0 and <= 1e+06"),
        ("epochs", 10**9, "epochs must be an integer between 1 and 10000"),
        ("max_iter", 10**6, "max_iter must be an integer between 1 and 100000"),
        ("batch_size", 2**21, "batch_size must be an integer between 1 and 1048576"),
        ("weight_decay", 1e300, "weight_decay must be a finite number >= 0 and <= 1e+06"),
        ("tol", 2.0, "tol must be a finite number >= 0 and <= 1"),
        ("momentum", 1.0, "momentum must be a finite number >= 0 and < 1"),
    ],
)
def test_training_settings_past_their_bounds_are_refused(field, value, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        TrainingConfig(**{field: value})


def test_training_settings_at_their_bounds_are_accepted():
    config = TrainingConfig(seed=MAX_SEED, lr=MAX_LR, epochs=MAX_EPOCHS)
    assert (config.seed, config.lr, config.epochs) == (MAX_SEED, MAX_LR, MAX_EPOCHS)


def test_the_largest_lr_diverges_instead_of_raising():
    # Today's 1e308 raised torch's RuntimeError (the lr does not fit a float32); at the bound a
    # fit runs and reports its divergence, which a search turns into a clear error.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(64, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int64)
    costs = np.array([[[0.0, 1.0], [1.0, 0.0]]])
    fit = fit_cost_sensitive(
        X, y, costs, model=ModelSpec("mlp", hidden=(4,)), surrogate="exponential",
        config=TrainingConfig(optimizer="sgd", lr=MAX_LR, epochs=2, batch_size=16, device="cpu"),
    )  # fmt: skip
    assert fit.diverged.all()


def test_every_repeat_of_the_largest_seed_is_seeded():
    data = load_dataset("builtin://breast_cancer")
    setup = prepare_repeat(
        data, metric=f1(), surrogate=get_surrogate("logistic"), model=ModelSpec(),
        training=TrainingConfig(seed=MAX_SEED), repeat=1, seed=MAX_SEED,
    )  # fmt: skip
    assert setup.config.seed == 0  # MAX_SEED + 1 wraps around instead of failing in NumPy
    with pytest.raises(ValueError, match="seed must be an integer between 0 and 4294967295"):
        run_experiment(
            data, metric=f1(), surrogate=get_surrogate("logistic"), model=ModelSpec(),
            search=SearchConfig(), training=TrainingConfig(), seed=2**32,
        )  # fmt: skip
    with pytest.raises(ValueError, match=f"repeats must be an integer between 1 and {MAX_REPEATS}"):
        run_experiment(
            data, metric=f1(), surrogate=get_surrogate("logistic"), model=ModelSpec(),
            search=SearchConfig(), training=TrainingConfig(), repeats=MAX_REPEATS + 1,
        )  # fmt: skip


# -- models ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"kind": "mlp", "hidden": (1_000_000, 1_000_000)}, "hidden sizes must be at most 65536"),
        ({"kind": "mlp", "hidden": [1] * 100_000}, "hidden may hold at most 32 sizes, got 100000"),
        ({"kind": "cnn3", "channels": (32, 64, 10_000)}, "channels sizes must be at most 4096"),
        ({"kind": "cnn3", "channels": (32, 64, 128, 256)}, "channels must have exactly 3 sizes"),
    ],
)
def test_model_sizes_past_their_bounds_are_refused(params, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        ModelSpec(**params)


def test_model_sizes_at_their_bounds_are_accepted():
    deep = ModelSpec("mlp", hidden=(MAX_LAYER_WIDTH,) * MAX_HIDDEN_LAYERS)
    assert len(deep.hidden) == MAX_HIDDEN_LAYERS
    assert ModelSpec("cnn3", channels=(MAX_CHANNELS,) * 3).channels == (MAX_CHANNELS,) * 3


class _Unreadable(Sequence[int]):
    """A million layers whose entries must never be read."""

    def __len__(self) -> int:
        return 1_000_000

    def __getitem__(self, index):
        raise AssertionError("an entry was read before the length was checked")


def test_a_million_layers_are_refused_without_reading_them():
    with pytest.raises(ValueError, match="hidden may hold at most 32 sizes, got 1000000"):
        ModelSpec("mlp", hidden=_Unreadable())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("spec", "input_shape"),
    [
        (ModelSpec("linear"), (5, 7)),
        (ModelSpec("mlp", hidden=(16, 8, 4)), (30,)),
        (ModelSpec("cnn3"), (3, 32, 32)),
        (ModelSpec("cnn3", channels=(4, 8, 16)), (1, 8, 8)),
    ],
)
def test_n_parameters_counts_what_a_built_model_holds(spec, input_shape):
    built = StackedModel(spec, input_shape=input_shape, n_models=1)
    n_inputs = input_shape[0] if spec.kind == "cnn3" else int(np.prod(input_shape))
    assert spec.n_parameters(n_inputs) == sum(p.numel() for p in built.parameters())
    # Without the data: a lower bound (one input), never more than the real count.
    assert spec.n_parameters() <= spec.n_parameters(n_inputs)


def test_n_parameters_of_a_huge_model_allocates_nothing():
    wide = ModelSpec("mlp", hidden=(MAX_LAYER_WIDTH, MAX_LAYER_WIDTH))
    assert wide.n_parameters(10) == 10 * 65536 + 65536 + 65536 * 65536 + 65536 + 65536 + 1
    assert ModelSpec("cnn3").n_parameters(3) == 93_377  # the paper's network on colour images


# -- search ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"lambda_min": -1e308}, "lambda_min must be a finite number between -1e+06 and 1e+06"),
        ({"lambda_max": 1e308}, "lambda_max must be a finite number between -1e+06 and 1e+06"),
        ({"lambda_max": float("inf")}, "lambda_max must be a finite number"),
        ({"n_lambdas": MAX_N_LAMBDAS + 1}, "n_lambdas must be an integer between 1 and 1001"),
        ({"strategy": "bisection", "max_steps": 201}, "max_steps must be an integer between"),
        ({"cv": 21}, "cv must be an integer between 2 and 20"),
        ({"multipliers": [0.0, 1e7]}, "multipliers must be 1 to 50 numbers in [0, 1e+06]"),
        ({"multipliers": [1.0] * 51}, "multipliers must be 1 to 50 numbers"),
        ({"refine_temperatures": [0.1] * 11}, "refine_temperatures must be 1 to 10 numbers"),
    ],
)
def test_search_settings_past_their_bounds_are_refused(params, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        SearchConfig(**params)


def test_a_refused_list_is_not_echoed_whole():
    with pytest.raises(ValueError) as refused:
        SearchConfig(multipliers=[1.0] * 10_000)
    assert len(str(refused.value)) < 400


def test_lambdas_at_their_bounds_make_a_finite_grid():
    config = SearchConfig(lambda_min=-MAX_ABS_LAMBDA, lambda_max=MAX_ABS_LAMBDA)
    assert np.isfinite(grid_lambdas(config.lambda_min, config.lambda_max, 21)).all()
    assert SearchConfig(multipliers=[0.0, MAX_MULTIPLIER]).multipliers == (0.0, MAX_MULTIPLIER)


def test_a_grid_past_float64_is_refused_not_made_of_inf():
    # What -/+1e308 made on the worker: a span of inf, so inf and NaN lambdas.
    with pytest.raises(ValueError, match=r"the lambda grid over .* is not finite"):
        grid_lambdas(-1e308, 1e308, 21)


def test_models_trained_by_each_search():
    assert SearchConfig().models_trained(455) == 21 * 5 + 1  # the 5 folds of cv "auto", refit
    assert SearchConfig().models_trained(20_001) == 21 + 1  # a holdout above 20,000 rows
    assert SearchConfig(cv=None, refit=False).models_trained(455) == 21
    assert SearchConfig(shift="auto", cv=10).models_trained(455) == 2 * 21 * 10 + 1
    assert SearchConfig(n_lambdas=7).models_trained(455, constrained=True) == 7 * 5 * 5 + 1
    assert SearchConfig(strategy="dinkelbach", max_steps=12).models_trained(455) == 12 + 1


def test_models_per_repeat_adds_the_baselines():
    assert [baseline_models(m, refit=True) for m in BASELINES] == [2, 2, N_THETAS + 1, 20]
    assert baseline_models("koyejo2", refit=False) == N_THETAS
    # 569 rows: 455 of training + validation, so the grid takes 5 folds.
    assert split_sizes(569)[2] == 114
    everything = models_per_repeat(569, search=SearchConfig(), baselines=BASELINES)
    assert everything == 106 + 2 + 2 + 20 + 20
    # 25,000 rows leave 20,000 of training + validation: still 5 folds, judged on those rows.
    assert models_per_repeat(25_000, search=SearchConfig()) == 106
    assert models_per_repeat(30_000, search=SearchConfig()) == 22


# -- metrics and surrogates -----------------------------------------------------------------------


def test_metric_coefficients_past_their_bound_are_refused():
    big = MAX_ABS_COEFFICIENT * 10
    with pytest.raises(ValueError, match="alpha must be finite numbers of at most 1e\\+12"):
        MetricSpec(alpha=np.array([big, 0, 0, 0]), beta=np.array([0, 0, 0, 1.0]))
    with pytest.raises(ValueError, match=r"numerator\['tp'\] must be a finite number of at most"):
        MetricSpec.from_confusion(numerator={"tp": big}, denominator={"const": 1.0})
    with pytest.raises(ValueError, match="zero_division must be a finite number between -1e"):
        MetricSpec.from_confusion(
            numerator={"tp": 1.0}, denominator={"tp": 1.0, "fp": 1.0}, zero_division=1e7
        )
    with pytest.raises(ValueError, match="w_fp must be a non-negative number of at most 1e\\+12"):
        weighted_accuracy(w_fp=big)
    with pytest.raises(
        ValueError, match=re.escape("beta must be a positive number between 0.001 and 1000")
    ):
        f_beta(1e4)
    assert f_beta(1000.0).params == {"beta": 1000.0}


def test_integers_past_float64_are_a_value_error_not_an_overflow():
    huge = 10**400  # float(huge) raises OverflowError
    for make, message in [
        (lambda: TrainingConfig(lr=huge), "lr must be a finite number"),
        (lambda: SearchConfig(lambda_min=-huge), "got -2**1328 or more"),
        (lambda: SearchConfig(multipliers=[huge]), "multipliers must be 1 to 50 numbers"),
        (lambda: get_surrogate("sigmoid", k=huge), "k must be a positive number"),
        (lambda: f_beta(huge), "beta must be a positive number"),
        (lambda: weighted_accuracy(w_fn=huge), "w_fn must be a non-negative number"),
        (lambda: MetricSpec(alpha=[huge, 0, 0, 0], beta=[0, 0, 0, 1]), "alpha must be finite"),
    ]:
        with pytest.raises(ValueError, match=re.escape(message)):
            make()


def test_surrogate_parameters_past_their_bounds_are_refused():
    with pytest.raises(ValueError, match="k must be a positive number between 1e-06 and 1e\\+06"):
        get_surrogate("sigmoid", k=1e308)
    with pytest.raises(ValueError, match="rho must be a positive number between"):
        get_surrogate("rho_margin", rho=1e-9)
    assert get_surrogate("sigmoid", k=1e6).params == {"k": 1e6}


# -- data ------------------------------------------------------------------------------------------


def test_builtin_shape_without_generating_the_data():
    assert builtin_shape("builtin://breast_cancer") == (569, (30,))
    assert builtin_shape("builtin://digits?positive=3&as_images=true") == (1797, (1, 8, 8))
    rows, shape = builtin_shape("builtin://digits?positive=3&negative=8")
    assert rows == load_dataset("builtin://digits?positive=3&negative=8").n_samples
    assert shape == (64,)
    started = time.perf_counter()
    assert builtin_shape("builtin://synthetic?n_samples=1000000&n_features=5") == (
        1_000_000,
        (5,),
    )
    assert time.perf_counter() - started < 0.5  # read from the parameters, not generated
