"""The spec's constraints become the library's, each error naming its field."""

from __future__ import annotations

import numpy as np
import pytest

from core.job_spec import (
    SpecFieldError,
    build_constraints,
    build_job_objects,
    build_search,
    check_constrained_search,
)
from metro.experiment import prepare_repeat
from metro.metrics import get_metric


def test_built_constraints_are_the_librarys():
    from metro.constraints import get_constraints

    given = [
        {"metric": "recall", "params": {}, "at_least": 0.9, "confidence": None},
        {"metric": "f_beta", "params": {"beta": 2}, "at_most": 0.95, "confidence": 0.8},
    ]
    [recall, f2] = build_constraints(given)
    [lib_recall, lib_f2] = get_constraints(given)
    assert (
        (recall.name, f2.name)
        == (lib_recall.name, lib_f2.name)
        == (
            "recall >= 0.9",
            "f_beta(2) <= 0.95",
        )
    )
    assert np.array_equal(recall.cells, lib_recall.cells) and f2.confidence == 0.8


def test_a_prior_dependent_metric_resolves_on_the_labels_it_is_given():
    given = [{"metric": "balanced_accuracy", "at_least": 0.7}]
    y = np.array([0, 0, 0, 1])
    [at_submission] = build_constraints(given)
    [on_labels] = build_constraints(given, y)
    assert at_submission.metric.params["prior"] == 0.5 and on_labels.metric.params["prior"] == 0.25
    # What the worker runs: each repeat resolves the spec's form on its own training labels.
    from metro.datasets import load_dataset
    from metro.models import ModelSpec
    from metro.surrogates import get_surrogate
    from metro.trainer import TrainingConfig

    data = load_dataset("builtin://breast_cancer")
    setup = prepare_repeat(
        data, metric=get_metric("f1"), surrogate=get_surrogate("logistic"), model=ModelSpec(),
        training=TrainingConfig(), repeat=0, constraints=given,
    )  # fmt: skip
    prior = float(data.y[setup.splits.train].mean())
    assert setup.constraints[0].metric.params["prior"] == pytest.approx(prior)


@pytest.mark.parametrize(
    ("given", "path"),
    [
        ({"metric": "nope", "at_least": 0.5}, ("constraints", 0, "metric")),
        ({"at_least": 0.5}, ("constraints", 0, "metric")),
        ({"metric": "recall"}, ("constraints", 0, "at_least")),
        ({"metric": "recall", "at_least": 0.5, "at_most": 0.9}, ("constraints", 0, "at_most")),
        ({"metric": "recall", "at_most": True}, ("constraints", 0, "at_most")),
        ({"metric": "precision", "at_least": 1.01}, ("constraints", 0, "at_least")),
        ({"metric": "accuracy", "at_most": float("nan")}, ("constraints", 0, "at_most")),
        ({"metric": "recall", "at_least": 0.5, "confidence": 0.3},
         ("constraints", 0, "confidence")),
        ({"metric": "recall", "params": {"beta": 1}, "at_least": 0.5},
         ("constraints", 0, "params", "beta")),
        ({"metric": "recall", "bound": 0.5}, ("constraints", 0, "bound")),
        ({"metric": "recall", "at_least": 1, "confidence": 0.9},  # no margin certifies it
         ("constraints", 0, "confidence")),
        ("recall >= 0.5", ("constraints", 0)),
    ],
)  # fmt: skip
def test_each_error_names_its_field(given, path):
    with pytest.raises(SpecFieldError) as caught:
        build_constraints([given])
    assert caught.value.path == path


def test_a_ceiling_below_a_metric_range_says_no_classifier_meets_it_and_above_that_all_do():
    with pytest.raises(SpecFieldError, match="no classifier can meet it"):
        build_constraints([{"metric": "false_positive_rate", "at_most": -0.5}])
    with pytest.raises(SpecFieldError, match="every classifier meets it"):
        build_constraints([{"metric": "false_positive_rate", "at_least": -0.5}])


def test_only_the_grid_searches_under_constraints():
    built = build_constraints([{"metric": "recall", "at_least": 0.9}])
    check_constrained_search(build_search({}), built)
    check_constrained_search(build_search({"strategy": "dinkelbach"}), ())
    with pytest.raises(SpecFieldError, match="grid strategy") as caught:
        check_constrained_search(build_search({"strategy": "dinkelbach"}), built)
    assert caught.value.path == ("search", "strategy")
    # ... and a stored spec that says otherwise does not rebuild (the worker's SpecError).
    spec = {
        "metric": {"preset": "precision"}, "surrogate": {"name": "logistic"},
        "model": {"kind": "linear"}, "search": {"strategy": "bisection"}, "training": {},
        "constraints": [{"metric": "recall", "at_least": 0.9}],
    }  # fmt: skip
    with pytest.raises(ValueError, match="grid strategy"):
        build_job_objects(spec)
    assert build_job_objects({**spec, "search": {}}).constraints == tuple(spec["constraints"])


@pytest.mark.parametrize(
    ("stored", "now"),
    [
        ({"kind": "linear", "hidden": [64], "channels": [32, 64, 128]}, {"kind": "linear"}),
        ({"kind": "mlp", "hidden": [8], "channels": [32, 64, 128]}, {"kind": "mlp", "hidden": [8]}),
        ({"kind": "cnn3", "hidden": [64], "channels": [4, 8, 16]},
         {"kind": "cnn3", "channels": [4, 8, 16]}),
        ({"kind": "mlp", "hidden": [8]}, {"kind": "mlp", "hidden": [8]}),
    ],
)  # fmt: skip
def test_current_spec_hash_is_the_hash_of_the_spec_as_normalized_now(stored, now):
    """A spec stored when every model carried hidden and channels hashes as submitted now."""
    from core.job_spec import current_spec_hash, spec_hash

    rest = {"metric": {"preset": "f1"}, "repeats": 1}
    assert current_spec_hash({**rest, "model": stored}) == spec_hash({**rest, "model": now})
    # Another model is another hash; a model this version cannot build is hashed as stored.
    other = {**rest, "model": {"kind": "mlp", "hidden": [9]}}
    assert current_spec_hash({**rest, "model": stored}) != spec_hash(other)
    odd = {**rest, "model": {"kind": "rnn"}}
    assert current_spec_hash(odd) == spec_hash(odd)


def test_a_spec_stored_with_defaults_or_an_alias_spelled_out_hashes_as_this_versions_form():
    """A retry across the upgrade that stopped storing a preset's, surrogate's or constraint's
    defaults (and an alias such as fbeta) still finds its job by its Idempotency-Key."""
    from core.job_spec import current_spec_hash, spec_hash

    now = {
        "metric": {"preset": "f_beta", "beta": 2.0},
        "surrogate": {"name": "sigmoid"},
        "constraints": [{"metric": "true_negative_rate", "params": {}, "at_least": 0.5,
                         "confidence": None}],
        "repeats": 1,
    }  # fmt: skip
    before = {
        **now,
        "metric": {"preset": "fbeta", "beta": 2.0, "zero_division": 0.0},
        "surrogate": {"name": "sigmoid", "k": 1.0},
        "constraints": [{"metric": "specificity", "params": {}, "at_least": 0.5,
                         "confidence": None}],
    }  # fmt: skip
    assert spec_hash(before) != spec_hash(now)
    assert current_spec_hash(before) == spec_hash(now)
    other = {**before, "metric": {"preset": "fbeta", "beta": 2.0, "zero_division": 1.0}}
    assert current_spec_hash(other) != spec_hash(now)  # not a default: another job


def test_every_method_a_result_can_hold_has_a_name():
    from core.job_spec import AVERAGED_BASELINES, METHOD_NAMES
    from metro.experiment import METHODS

    assert set(METHOD_NAMES) == {*METHODS, *AVERAGED_BASELINES}
    assert len(set(METHOD_NAMES.values())) == len(METHOD_NAMES)  # no two read alike


def test_a_jobs_multiclass_training_is_read_from_its_spec():
    """How an averaged multi-class job trains its classes, as its result says it: a spec from
    before search.multiclass is per class; a value no release takes reports nothing (a result
    must not fail to be read over it)."""
    from core.job_spec import job_multiclass

    base = {"metric": {"preset": "f1", "average": "macro"}, "dataset": {"uri": "builtin://digits"}}
    assert job_multiclass({**base, "search": {}}) == "per_class"
    assert job_multiclass({**base, "search": {"multiclass": "multinomial"}}) == "multinomial"
    assert job_multiclass({**base, "search": {"multiclass": "auto"}}) is None
    assert job_multiclass({**base, "metric": {"preset": "f1"}, "search": {}}) is None
    labels = {**base["dataset"], "label_columns": ["a", "b"]}
    assert job_multiclass({**base, "dataset": labels, "search": {}}) is None
