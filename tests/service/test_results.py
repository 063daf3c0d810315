"""service.results: the job result assembled from a job's stored rows."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from core.db.models import Job, MetricResult
from service.job_spec import normalize_job_spec
from service.results import LABEL_OFFSETS_NOT_TUNED, OFFSETS_NOT_TUNED, build_job_result
from service.schemas.jobs import JobCreate

LABELS = ("cat", "dog", "eel")


def _job(dataset: dict[str, Any], n_folds: int | None, average: str | None) -> Job:
    metric: dict[str, Any] = {"preset": "f1"}
    if average is not None:
        metric["average"] = average
    spec = normalize_job_spec(JobCreate.model_validate({"metric": metric, "dataset": dataset}))
    split = "cross-validation" if n_folds else "validation"
    choices = [
        {
            "repeat": 0, "trained_lambda": -0.5, "shift": "minimal", "ratio_reached": None,
            "tuned_threshold": 0.0, "selection_score": 0.7, "selection_split": split,
            "n_folds": n_folds, "selection_counts": None, "warnings": [],
            **({"label": label, "offset": 0.0} if average else {}),
        }
        for label in (LABELS if average else (None,))
    ]  # fmt: skip
    return Job(id=uuid.uuid4(), spec=spec, choices=choices)


def _row(split: str, class_index: int = -1) -> MetricResult:
    return MetricResult(
        method="metro", repeat=0, split=split, metric_value=0.7, lambda_=None, tp=3, fp=1,
        fn=1, tn=5, constraint_values=None, constraints_hold=None, class_index=class_index,
        label=None,
    )  # fmt: skip


ONE_COLUMN = {"uri": "file:///data/pets.csv", "label_column": "kind"}
LABEL_COLUMNS = {"uri": "file:///data/pets.csv", "label_columns": list(LABELS)}


@pytest.mark.parametrize(
    ("dataset", "n_folds", "average", "notices"),
    [
        (ONE_COLUMN, None, "macro", ["offsets_not_tuned"]),  # a holdout: a plain argmax
        (ONE_COLUMN, 5, "macro", []),  # the folds tuned the offsets
        (LABEL_COLUMNS, None, "macro", []),  # labels decide each on its own: no argmax
        (LABEL_COLUMNS, None, "micro", ["offsets_not_tuned"]),  # not tuned together
        (LABEL_COLUMNS, 5, "micro", []),  # the folds tuned the labels' offsets
        (ONE_COLUMN, None, None, []),  # binary
    ],
)
def test_a_result_says_where_its_model_decides_by_an_untuned_argmax(
    dataset: dict[str, Any], n_folds: int | None, average: str | None, notices: list[str]
) -> None:
    """The words were the CLI's and the dashboard's own, written twice; they are the
    server's now, for every client."""
    rows = [_row("test")] + ([_row("validation")] if n_folds else [])
    result = build_job_result(_job(dataset, n_folds, average), rows)
    assert [n.code for n in result.notices] == notices
    if notices and "label_columns" in dataset:
        assert result.notices[0].message == LABEL_OFFSETS_NOT_TUNED
    elif notices:
        assert result.notices[0].message == OFFSETS_NOT_TUNED
        assert result.selection is None


def test_a_micro_result_whose_labels_margins_were_not_rebuilt_says_so() -> None:
    """Folds, but one label's out-of-fold margins could not be rebuilt (its choice carries the
    library's offsets_not_tuned warning, its offset is null): the labels' offsets were not
    tuned, which was said for a holdout only. The notice names the label."""
    job = _job(LABEL_COLUMNS, 5, "micro")
    warned = {"code": "offsets_not_tuned", "message": "its out-of-fold margins ..."}
    job.choices = [
        {**c, "offset": None, "warnings": [warned] if c["label"] == "dog" else []}
        for c in job.choices
    ]
    result = build_job_result(job, [_row("test"), _row("validation")])
    assert [n.code for n in result.notices] == ["offsets_not_tuned"]
    message = result.notices[0].message
    assert "label 'dog'" in message and "cat" not in message and "folds" in message
    assert message != LABEL_OFFSETS_NOT_TUNED  # not the holdout's reason


@pytest.mark.parametrize(
    ("refit", "average", "in_sample"),
    [
        (None, None, True),  # binary, search.refit by default: refit on training + validation
        (True, None, True),
        (False, None, False),  # the model fitted on the training rows alone
        (None, "macro", False),  # METRO's validation row: the folds' pooled held-out average
    ],
)
def test_a_result_says_whether_its_validation_rows_were_trained_on(
    refit: bool | None, average: str | None, in_sample: bool
) -> None:
    """Under a refit every binary method is refit on training + validation and then scored on
    validation: that row read as held out, though the delivered model was trained on it."""
    body: dict[str, Any] = {"metric": {"preset": "f1"}, "dataset": ONE_COLUMN}
    if average is not None:
        body["metric"]["average"] = average
    if refit is not None:
        body["search"] = {"refit": refit, "cv": None}  # no refit needs cv null
    spec = normalize_job_spec(JobCreate.model_validate(body))
    job = Job(id=uuid.uuid4(), spec=spec, choices=[])
    result = build_job_result(job, [_row("validation"), _row("test")])
    assert result.validation_in_sample is in_sample
    # Without a validation row there is nothing to call in-sample.
    assert build_job_result(job, [_row("test")]).validation_in_sample is False
