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


def test_a_choice_the_fallback_replaced_says_so_and_what_it_had_chosen():
    # Small data, few positives: the search's (refined) choice rests on a handful of held-out
    # positives and the safeguard delivers plain ERM's lambda. The record said nothing of it,
    # and called the refinement of the replaced choice "kept".
    import numpy as np

    from metro import MetroClassifier

    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 5)).astype(np.float32)
    y = (0.7 * X[:, 0] + rng.normal(size=400) > 2.3).astype(int)
    # guard_confidence null: the fallback replaces an unsupported choice whatever it scores
    # (the default keeps this one, which a bootstrap finds better than the fallback).
    clf = MetroClassifier(
        metric="f_beta", metric_params={"beta": 0.5}, random_state=0, guard_confidence=None
    ).fit(X, y)
    guard = clf.safeguard_
    assert guard is not None and guard.used and guard.reason == "unsupported"
    choice = repeat_choice(0, clf.metric_, clf.search_result_)
    assert choice.fallback is not None and choice.fallback.reason == "unsupported"
    assert choice.fallback.choice_lambda == guard.choice_lambda != choice.trained_lambda
    assert choice.trained_lambda == clf.best_lambda_ == guard.fallback_lambda
    assert choice.fallback.choice_score == pytest.approx(
        clf.metric_.score_from_loss(guard.choice_loss)
    )
    assert (
        choice.fallback.message.startswith(f"the search's choice (λ {guard.choice_lambda:.4g}, ")
        and "rested on too few held-out positives" in choice.fallback.message
    )
    assert choice.refinement is not None and not choice.refinement.kept
    assert choice.refinement.not_kept_reason == "the fallback replaced the choice it started from"
    [stored] = choices_json([choice])
    assert stored["fallback"]["message"] == choice.fallback.message
    assert RepeatChoice.model_validate(stored) == choice


def test_a_choice_the_search_kept_has_no_fallback(experiment):
    assert repeat_choice(0, experiment.metric, experiment.searches[0]).fallback is None
