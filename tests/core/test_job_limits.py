"""What a job costs (core.job_spec.estimate_work) and the operator's budgets on it: the paper's
cnn3 job fits the defaults, and each budget refuses a job one past it, naming field and setting."""

from __future__ import annotations

from typing import Any

import pytest

from core.config import Settings
from core.job_spec import DataSize, JobWork, budget_errors, build_job_objects, estimate_work

DEFAULT_PARAMETERS = Settings.model_fields["max_model_parameters"].default
DEFAULT_WORK = Settings.model_fields["max_job_work"].default


def _spec(**sections: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "metric": {"preset": "f1"},
        "surrogate": {"name": "logistic"},
        "model": {"kind": "linear"},
        "search": {},
        "training": {},
        "repeats": 1,
        "baselines": [],
    }
    spec.update(sections)
    return spec


def _work(spec: dict[str, Any], data: DataSize) -> JobWork:
    return estimate_work(spec, build_job_objects(spec), data)


def test_the_papers_cnn3_job_is_within_the_default_budgets():
    # cnn3 on 10,000 32x32 colour images, 21 lambdas chosen by 5-fold CV then refit, 100 epochs,
    # every baseline, 10 repeats.
    spec = _spec(
        model={"kind": "cnn3"},
        search={"strategy": "grid", "n_lambdas": 21},
        training={"epochs": 100},
        repeats=10,
        baselines=["erm", "koyejo1", "koyejo2", "parambath"],
    )
    work = _work(spec, DataSize.of_examples(10_000, (3, 32, 32)))
    assert (work.parameters, work.rows, work.passes, work.pass_field) == (
        93_377,
        10_000,
        100,
        "epochs",
    )
    assert work.models == 21 * 5 + 1 + (2 + 2 + 20 + 20)
    assert work.work == 93_377 * 10_000 * 100 * 150 * 10
    assert (
        budget_errors(work, max_model_parameters=DEFAULT_PARAMETERS, max_job_work=DEFAULT_WORK)
        == []
    )


def test_the_work_budget_both_ways():
    spec = _spec()  # linear, L-BFGS (max_iter 200), 21 lambdas, 5 folds + refit
    work = _work(spec, DataSize(n_rows=569, n_features=30))
    assert work.pass_field == "max_iter" and work.passes == 200
    expected = 31 * 569 * 200 * 106
    assert work.work == expected
    assert budget_errors(work, max_model_parameters=31, max_job_work=expected) == []
    [error] = budget_errors(work, max_model_parameters=31, max_job_work=expected - 1)
    assert error.path == ()
    message = str(error)
    assert "max_job_work" in message and f"{expected - 1:.3g}" in message
    assert "31 parameters x 569 rows x 200 max_iter x 106 models per repeat x 1 repeats" in message
    assert "training.max_iter" in message  # the field to lower, for an L-BFGS fit


def test_the_parameter_budget_both_ways_names_the_layers():
    spec = _spec(model={"kind": "mlp", "hidden": [64]}, training={"epochs": 3})
    work = _work(spec, DataSize(n_rows=569, n_features=30))
    assert work.parameters == 30 * 64 + 64 + 64 + 1 and work.pass_field == "epochs"
    assert budget_errors(work, max_model_parameters=2049, max_job_work=DEFAULT_WORK) == []
    [error] = budget_errors(work, max_model_parameters=2048, max_job_work=DEFAULT_WORK)
    assert error.path == ("model", "hidden")
    assert "2,049 parameters" in str(error) and "2,048 (max_model_parameters)" in str(error)
    cnn = _work(_spec(model={"kind": "cnn3"}), DataSize.of_examples(100, (3, 32, 32)))
    [error] = budget_errors(cnn, max_model_parameters=1000, max_job_work=DEFAULT_WORK)
    assert error.path == ("model", "channels")


def test_without_the_datas_size_parameters_are_a_lower_bound_and_work_is_not_judged():
    spec = _spec(model={"kind": "mlp", "hidden": [4096, 4096]})
    work = _work(spec, DataSize())
    assert work.parameters == 4096 + 4096 + 4096 * 4096 + 4096 + 4096 + 1  # one input column
    assert not work.parameters_exact and work.rows is None and work.work is None
    [error] = budget_errors(work, max_model_parameters=1_000_000, max_job_work=1.0)
    assert error.path == ("model", "hidden") and "at least 16,793,601 parameters" in str(error)


def test_a_constrained_job_counts_every_multiplier():
    spec = _spec(
        search={"n_lambdas": 5, "multipliers": [0.0, 1.0, 4.0]},
        constraints=[{"metric": "recall", "params": {}, "at_least": 0.8, "confidence": None}],
    )
    assert _work(spec, DataSize(n_rows=569, n_features=30)).models == 5 * 5 * 3 + 1


@pytest.mark.parametrize(
    ("shape", "features", "channels"),
    [((30,), 30, None), ((3, 32, 32), 3072, 3), ((1, 8, 8), 64, 1), ((5, 7), 35, None)],
)
def test_data_size_of_loaded_examples(shape, features, channels):
    size = DataSize.of_examples(12, shape)
    assert (size.n_rows, size.n_features, size.channels) == (12, features, channels)


def test_the_budgets_are_settings_an_operator_writes_as_numbers(monkeypatch):
    monkeypatch.setenv("METRO_MAX_JOB_WORK", "2.5e14")
    monkeypatch.setenv("METRO_MAX_MODEL_PARAMETERS", "1000000")
    monkeypatch.setenv("METRO_MAX_JOB_SPEC_BYTES", "16384")
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert (settings.max_job_work, settings.max_model_parameters) == (2.5e14, 1_000_000)
    assert settings.max_job_spec_bytes == 16384
    assert (DEFAULT_PARAMETERS, DEFAULT_WORK) == (50_000_000, 1e15)
