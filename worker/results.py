"""What a worker writes of a run, built and checked where it is written: a trace step's row, a
repeat's choice, a model's manifest checked as the API serves it. Shared by the binary path
(:mod:`worker.runner`) and the averaged one (:mod:`worker.averaged`)."""

from __future__ import annotations

import math
import uuid
from typing import Any

from core.records import ChoiceWarning, ModelManifest, RepeatChoice, StepRecord
from metro.estimator import id_like_warning
from metro.metrics import MetricSpec
from metro.search import SearchResult, TraceStep

# Model rows are named by uuid5(MODEL_NAMESPACE, "<job id>/metro/<repeat>"): one per job.
MODEL_NAMESPACE = uuid.UUID("6f1c0f0e-8d0a-4a53-9a5e-6d3c2f1b7a10")


def step_row(repeat: int, step: TraceStep) -> StepRecord:
    """The lambda_steps row of one search step, validated as it is built; a non-finite value
    (a diverged fit's loss) is stored as null, as JSON and the API have no infinity."""
    return StepRecord.model_validate(
        {
            "repeat": repeat,
            "step": step.step,
            "fold": step.fold,
            "method": "metro",
            "lambda_": finite_or_none(step.lam),
            "shift": step.shift,
            "surrogate_loss": finite_or_none(step.surrogate_loss),
            "l_lambda": finite_or_none(step.l_lambda),
            "train_metric": finite_or_none(step.train_metric),
            "validation_metric": finite_or_none(step.validation_metric),
            "seconds": finite_or_none(step.seconds),
            "mu": finite_or_none(step.mu),
            "constraint_values": [finite_or_none(v) for v in step.constraint_values]
            if step.constraint_values
            else None,
        }
    )


def finite_or_none(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def repeat_choice(repeat: int, spec: MetricSpec, search: SearchResult) -> RepeatChoice:
    """One repeat's choice as the API shows it, validated here as it is written (a value the
    type refuses fails this job's worker, not a later read of the job)."""
    counts = search.selection_counts
    return RepeatChoice.model_validate(
        {
            "repeat": repeat,
            "strategy": search.strategy,
            "trained_lambda": search.trained_lambda,
            "shift": search.trained_shift,
            "ratio_reached": search.ratio_reached,
            "tuned_threshold": search.threshold,
            "selection_score": finite_or_none(spec.score_from_loss(search.selection_loss)),
            "selection_split": search.selection_split,
            "n_folds": search.n_folds,
            "selection_counts": None
            if counts is None
            else dict(zip(("tp", "fp", "fn", "tn"), counts, strict=True)),
            "warnings": [w.to_dict() for w in search.warnings],
            "refinement": _refinement(spec, search),
            "fallback": _fallback(spec, search),
            # Under constraints: each one's value where the choice was made (selection_split),
            # and whether all of them held there.
            "constraint_values": [finite_or_none(v) for v in search.constraint_values]
            if search.constraint_values
            else None,
            "constraints_satisfied": search.constraints_satisfied,
            # The multiplier of the (lambda, mu) chosen, which the trace's series are keyed by.
            "mu": finite_or_none((search.final or search.best).mu) if search.constraints else None,
            "constraint_reach": [finite_or_none(v) for v in search.constraint_reach]
            if search.constraint_reach
            else None,
            # The grid's pooled held-out curve the choice ran over (the dashboard draws it).
            "selection_curve": [
                {
                    "lambda": p.lam,
                    "shift": p.shift,
                    "score": finite_or_none(spec.score_from_loss(p.loss)),
                }
                for p in search.selection_curve
            ]
            or None,
        }
    )


def _fallback(spec: MetricSpec, search: SearchResult) -> dict[str, Any] | None:
    """The safeguard's fallback, where it replaced the search's choice."""
    guard = search.safeguard
    if guard is None or not guard.used:
        return None
    loss = guard.choice_loss
    return {
        "reason": guard.reason,
        "choice_lambda": guard.choice_lambda,
        "choice_score": None if loss is None else finite_or_none(spec.score_from_loss(loss)),
        "win_probability": finite_or_none(guard.win_probability),
    }


def _refinement(spec: MetricSpec, search: SearchResult) -> dict[str, Any] | None:
    """The refinement step in the metric's own orientation (scores, not losses)."""
    step = search.refinement
    if step is None:
        return None
    return {
        "kept": step.kept,
        "temperature": step.temperature,
        "scale": step.scale,
        "score_before": finite_or_none(spec.score_from_loss(step.loss_before)),
        "threshold_before": step.threshold_before,
        "scores": [
            {
                "temperature": t,
                "scale": step.scales[i],
                "score": finite_or_none(spec.score_from_loss(loss)),
                "constraints_hold": step.feasible[i] if step.feasible else None,
            }
            for i, (t, loss) in enumerate(step.losses)
        ],
        "refit_rate_ratio": finite_or_none(step.refit_rate_ratio),
        "signal_probability": finite_or_none(step.signal_probability),
        "replaced_by_fallback": step.replaced_by_fallback,
        "greater_is_better": spec.greater_is_better,
    }


_STRUCTURAL = ("format_version", "architecture", "input_shape", "n_features", "weights_sha256")


def check_manifest(manifest: dict[str, Any]) -> None:
    """A new model's manifest as the API will serve it (core.records.ModelManifest), checked
    before its row is written: every field of the right type, the structural ones present."""
    checked = ModelManifest.model_validate(manifest)
    # A model of several classes names them instead of a positive and a negative label.
    decides = "labels" if checked.classes is None else "decision"
    missing = [k for k in (*_STRUCTURAL, decides) if getattr(checked, k) is None]
    if missing:
        raise ValueError(f"the model's manifest lacks {missing}")


def data_warnings(X: Any, feature_names: Any) -> list[ChoiceWarning]:
    """The data's warnings for a job's choice, in the library's words
    (:func:`metro.estimator.id_like_warning`)."""
    found = id_like_warning(X, feature_names)
    return [] if found is None else [ChoiceWarning.of(found)]
