"""core.records: the computed parts of the records the API, the CLI and the dashboard show."""

from __future__ import annotations

from typing import Any

import pytest

from core.records import Refinement

BEAT = "a refined model beat the choice's 0.2500 with 0.2650 but"


def _step(**overrides: Any) -> Refinement:
    fields: dict[str, Any] = {
        "kept": False,
        "temperature": None,
        "score_before": 0.25,
        "threshold_before": 0.1,
        "scores": [{"temperature": 0.05, "score": 0.2}, {"temperature": 0.2, "score": 0.265}],
    }
    return Refinement(**{**fields, **overrides})


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({"kept": True, "temperature": 0.2}, None),
        (
            {"scores": [{"temperature": 0.2, "score": 0.25}]},
            "no refined model beat the choice's 0.2500",
        ),
        (
            {"scores": [{"temperature": 0.2, "score": None}]},
            "no refined model beat the choice's 0.2500",
        ),
        ({"score_before": None}, "no refined model beat the choice"),
        # Under constraints only the stages that met them count.
        (
            {"scores": [{"temperature": 0.2, "score": 0.265, "constraints_hold": False}]},
            "no refined model beat the choice's 0.2500",
        ),
        # Which check turned the better stage down: the refit's rate first, then the signal.
        (
            {"refit_rate_ratio": 3.2, "signal_probability": 0.71},
            f"{BEAT} its refit predicted 3.20x the judged folds' positive rate",
        ),
        (
            {"signal_probability": 0.71},
            f"{BEAT} the held-out rows could not tell it from a constant classifier (p = 0.71)",
        ),
        ({}, f"{BEAT} not by a significant margin"),
        # A lower-is-better metric: 0.265 and 0.2 against 0.25; 0.2 is the better one. (The
        # highest was taken, whatever the direction: "beat 0.2500 with 0.2650".)
        (
            {"greater_is_better": False},
            "a refined model beat the choice's 0.2500 with 0.2000 but not by a significant margin",
        ),
        (
            {"greater_is_better": False, "scores": [{"temperature": 0.2, "score": 0.3}]},
            "no refined model beat the choice's 0.2500",
        ),
        # The safeguard's fallback replaced the choice the step refined: whatever it found.
        ({"replaced_by_fallback": True}, "the fallback replaced the choice it started from"),
    ],
)
def test_a_refinement_says_why_it_was_not_kept(overrides: dict[str, Any], reason: str | None):
    step = _step(**overrides)
    assert step.not_kept_reason == reason
    # Part of what the API sends, and of its schema (read-only).
    assert step.model_dump()["not_kept_reason"] == reason
    schema = Refinement.model_json_schema(mode="serialization")["properties"]["not_kept_reason"]
    assert schema["readOnly"] is True
    # A stored record read back (with the field in it) is the same record.
    assert Refinement.model_validate(step.model_dump()) == step


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"reason": "unsupported", "choice_lambda": -0.5, "choice_score": 0.8},
            "the search's choice (λ -0.5, 0.8000 held-out) rested on too few held-out positives",
        ),
        (
            {"reason": "within_noise", "choice_lambda": 0.25, "choice_score": None,
             "win_probability": 0.61},
            "the held-out rows could not tell the search's choice (λ 0.25) from plain ERM's "
            "(p = 0.61)",
        ),
    ],
)  # fmt: skip
def test_a_fallback_says_why_it_was_delivered(fields: dict[str, Any], message: str):
    from core.records import Fallback

    fallback = Fallback(**fields)
    assert fallback.message == (
        f"{message}: the fallback, plain ERM's λ with a threshold they back, was delivered"
    )
    assert fallback.model_dump()["message"] == fallback.message


def test_a_metric_and_a_constraint_are_shown_by_one_record_each() -> None:
    from core.records import ConstraintInfo, MetricInfo
    from metro.constraints import Constraint
    from metro.metrics import (
        balanced_accuracy,
        f_beta,
        false_positive_rate,
        recall,
        weighted_accuracy,
    )

    assert MetricInfo.of(f_beta(beta=2.0), average="macro").model_dump() == {
        "name": "f_beta(2)", "display_name": "F2 (macro)", "greater_is_better": True,
    }  # fmt: skip
    assert MetricInfo.of(balanced_accuracy()).display_name == "Balanced accuracy"
    assert ConstraintInfo.of(Constraint(recall(), "at_least", 0.9)).model_dump() == {
        "name": "recall >= 0.9", "display_name": "Recall ≥ 0.9", "metric_display_name": "Recall",
    }  # fmt: skip
    assert ConstraintInfo.of(Constraint(false_positive_rate(), "at_most", 0.25)).display_name == (
        "False positive rate ≤ 0.25"
    )
    # A weighted accuracy's costs are part of its name, in a constraint as in the objective
    costly = ConstraintInfo.of(Constraint(weighted_accuracy(w_fn=20.0), "at_least", 0.8))
    assert costly.display_name == "Weighted accuracy (w_fn 20) ≥ 0.8"
    assert costly.metric_display_name == "Weighted accuracy (w_fn 20)"
    # A stored spec is read back into the same record; a job stored before the display name was
    # recorded gets it from the machine name, one without the record at all reads as "custom".
    stored = {"metric_info": MetricInfo.of(f_beta(beta=2.0)).model_dump()}
    assert MetricInfo.stored(stored) == MetricInfo.of(f_beta(beta=2.0))
    legacy = {"metric_info": {"name": "f_beta(2)", "greater_is_better": True}}
    assert MetricInfo.stored(legacy).display_name == "F2"
    assert MetricInfo.stored({}).model_dump() == {
        "name": "custom", "display_name": "custom", "greater_is_better": True,
    }  # fmt: skip
