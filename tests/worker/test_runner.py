"""The runner's typed seams: a stored spec becomes typed ``metro`` objects, and a search step
becomes a lambda_steps row, without any process, database or broker."""

from __future__ import annotations

import math

import pytest

from core.job_spec import JobObjects
from metro.metrics import MetricSpec
from metro.models import ModelSpec
from metro.search import TraceStep
from metro.search.config import SearchConfig
from metro.surrogates import Surrogate
from metro.trainer import TrainingConfig
from worker.runner import SpecError, build_objects, step_row

SPEC = {
    "metric": {"preset": "f1"},
    "surrogate": {"name": "logistic"},
    "model": {"kind": "linear"},
    "search": {"strategy": "grid", "n_lambdas": 5},
    "training": {"max_iter": 30, "seed": 7},
}


def test_a_stored_spec_builds_typed_objects():
    objects = build_objects(SPEC)
    assert isinstance(objects, JobObjects)
    assert isinstance(objects.metric, MetricSpec)
    assert isinstance(objects.surrogate, Surrogate)
    assert isinstance(objects.model, ModelSpec)
    assert isinstance(objects.search, SearchConfig)
    assert isinstance(objects.training, TrainingConfig)
    assert objects.training.seed == 7


@pytest.mark.parametrize(
    "broken",
    [
        {k: v for k, v in SPEC.items() if k != "model"},
        {**SPEC, "search": {"strategy": "no such search"}},
    ],
)
def test_a_spec_the_library_refuses_is_a_spec_error(broken):
    with pytest.raises(SpecError, match="invalid job spec"):
        build_objects(broken)


def test_a_step_row_reads_the_step_and_stores_non_finite_values_as_null():
    step = TraceStep(
        step=3,
        lam=0.25,
        shift="minimal",
        surrogate_loss=math.inf,
        l_lambda=math.nan,
        train_metric=0.5,
        validation_metric=None,
        seconds=0.1,
        fold=1,
    )
    assert step_row(2, step).model_dump() == {
        "repeat": 2,
        "step": 3,
        "fold": 1,
        "method": "metro",
        "lambda_": 0.25,
        "shift": "minimal",
        "surrogate_loss": None,
        "l_lambda": None,
        "train_metric": 0.5,
        "validation_metric": None,
        "seconds": 0.1,
        "mu": None,
        "constraint_values": None,
        # a binary job's step belongs to no class
        "class_index": None,
        "label": None,
    }


def test_a_constrained_step_row_carries_its_multiplier_and_constraint_values():
    step = TraceStep(
        step=0, lam=-0.5, shift="minimal", surrogate_loss=0.3, l_lambda=0.0, train_metric=0.6,
        validation_metric=0.55, seconds=0.1, multipliers=(0.8,), mu=4.0,
        constraint_values=(0.91, math.nan),
    )  # fmt: skip
    row = step_row(0, step)
    assert (row.mu, row.constraint_values) == (4.0, [0.91, None])


def test_a_step_without_a_finite_lambda_is_refused_as_its_record_is_built():
    """The trace's lambda column is NOT NULL: a step at a non-finite lambda fails in the worker,
    where the record is built, not at the database's insert."""
    from pydantic import ValidationError

    step = TraceStep(
        step=0, lam=math.inf, shift="minimal", surrogate_loss=0.3, l_lambda=0.0,
        train_metric=0.6, validation_metric=0.55, seconds=0.1,
    )  # fmt: skip
    with pytest.raises(ValidationError, match="lambda_"):
        step_row(0, step)


def test_progress_counts_every_multiplier_of_a_constrained_grid():
    from worker.runner import Progress

    grid = {"strategy": "grid", "n_lambdas": 4, "cv": None, "multipliers": [0.0, 1.0, 4.0]}
    free = Progress({**SPEC, "search": grid})
    constrained = Progress({**SPEC, "search": grid, "constraints": [{"metric": "recall"}]})
    assert (free.metro_units, constrained.metro_units) == (4 + 1, 3 * 4 + 1)


def test_progress_is_sized_for_the_folds_the_data_gets():
    """cv "auto" is one holdout past AUTO_CV_MAX_ROWS rows: a 200,000-row job's bar, sized for
    five folds, sat at 0.10 until it jumped to 1.0."""
    from metro.search.config import AUTO_CV_FOLDS, AUTO_CV_MAX_ROWS
    from worker.runner import Progress

    grid = {"strategy": "grid", "n_lambdas": 4, "cv": "auto", "shift": "minimal"}
    bar = Progress({**SPEC, "search": grid})
    assert bar.metro_units == 4 * AUTO_CV_FOLDS + 1  # an estimate before the data is read
    bar.for_rows(AUTO_CV_MAX_ROWS + 1)
    assert bar.metro_units == 4 + 1
    bar.for_rows(AUTO_CV_MAX_ROWS)
    assert bar.metro_units == 4 * AUTO_CV_FOLDS + 1
    # as the experiment splits: 25,001 rows leave 20,000 to search on, five folds
    from metro.model_selection import split_sizes

    n_test = split_sizes(25_001, test_fraction=0.2)[2]
    bar.for_rows(25_001 - n_test)
    assert bar.metro_units == 4 * AUTO_CV_FOLDS + 1
    fixed = Progress({**SPEC, "search": {**grid, "cv": 3}})
    fixed.for_rows(10 * AUTO_CV_MAX_ROWS)
    assert fixed.metro_units == 4 * 3 + 1


def test_progress_counts_the_refinement_steps_fits_where_it_runs():
    """Each scale's schedule on every fold, then the delivered model along the schedule: the
    bar stood still at 99% for tens of seconds while they ran."""
    from worker.runner import Progress

    grid = {"strategy": "grid", "n_lambdas": 4, "cv": 5}
    default = Progress({**SPEC, "search": grid})
    # refine "auto": three temperatures, both scales
    assert default.refine_units == (2 * 5 + 1) * 3
    one = Progress(
        {**SPEC, "search": {**grid, "refine_scale": "free", "refine_temperatures": [0.1]}}
    )
    assert one.refine_units == 5 + 1
    assert Progress({**SPEC, "search": {**grid, "refine": "off"}}).refine_units == 0
    mlp = {**SPEC, "model": {"kind": "mlp"}, "search": grid}
    assert Progress(mlp).refine_units == 0  # only a linear model is refined
    # The search's units, then the refinement's, then the baselines', within a repeat.
    with_baseline = Progress({**SPEC, "search": grid, "baselines": ["erm"], "repeats": 2})
    per_repeat = 4 * 5 + 1 + (2 * 5 + 1) * 3 + 1
    assert with_baseline.at(0, 4 * 5 + 1) == pytest.approx((4 * 5 + 1) / (2 * per_repeat))
