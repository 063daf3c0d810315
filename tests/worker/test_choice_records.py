"""A repeat's choice is one type on both sides of the worker-API seam: built and validated by the
worker as it is written, stored as JSON, read back by the API into the same type."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from core.records import RepeatChoice, choices_json
from metro.datasets import load_dataset
from metro.experiment import run_experiment
from metro.metrics import get_metric
from metro.models import ModelSpec
from metro.search import SearchConfig
from metro.surrogates import get_surrogate
from metro.trainer import TrainingConfig
from worker.runner import repeat_choice


@pytest.fixture(scope="module")
def experiment():
    return run_experiment(
        load_dataset("builtin://breast_cancer"), metric=get_metric("f1"),
        surrogate=get_surrogate("logistic"), model=ModelSpec("linear"),
        search=SearchConfig(n_lambdas=5, cv=3), training=TrainingConfig(max_iter=30),
    )  # fmt: skip


def test_the_workers_record_round_trips_through_the_stored_json(experiment):
    choice = repeat_choice(0, experiment.metric, experiment.searches[0])
    assert isinstance(choice, RepeatChoice)
    [stored] = choices_json([choice])
    # the wire names: "lambda" in the curve, plain JSON values throughout
    assert {"lambda", "shift", "score"} == set(stored["selection_curve"][0])
    assert stored["selection_split"] == "cross-validation" and stored["n_folds"] == 3
    assert RepeatChoice.model_validate(stored) == choice


def test_a_record_the_type_refuses_is_refused_when_written(experiment, monkeypatch):
    search = experiment.searches[0]
    monkeypatch.setattr(type(search), "selection_split", property(lambda self: "holdout"))
    with pytest.raises(ValidationError, match="selection_split"):
        repeat_choice(0, experiment.metric, search)


def test_a_new_models_manifest_is_checked_before_its_row_is_written(experiment, tmp_path):
    from metro.serialization import save_model
    from worker.results import check_manifest as _check_manifest

    model = experiment.model_for("metro", 0).model
    full = save_model(tmp_path / "m", model, manifest={"trained_lambda": -0.5, "shift": "minimal"})
    _check_manifest(full)  # what save_model writes passes
    with pytest.raises(ValidationError, match="trained_lambda"):
        _check_manifest({**full, "trained_lambda": "minus one half"})
    with pytest.raises(ValueError, match="lacks \\['weights_sha256'\\]"):
        _check_manifest({k: v for k, v in full.items() if k != "weights_sha256"})
