"""Assemble a job's result view (per-run rows plus mean/std per method and split)."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from core.db.models import Job, MetricResult
from service.schemas.jobs import (
    ConfusionCounts,
    ConstraintOut,
    JobResult,
    MethodSummary,
    MetricRun,
    RepeatChoice,
    SelectionSummary,
)

# METRO first, then the baselines in the order the paper reports them.
_METHOD_ORDER = {"metro": 0, "erm": 1, "koyejo1": 2, "koyejo2": 3, "parambath": 4}


def build_job_result(job: Job, rows: Sequence[MetricResult]) -> JobResult:
    runs = [
        MetricRun(
            method=r.method,
            repeat=r.repeat,
            split=r.split,
            value=r.metric_value,
            lambda_=r.lambda_,
            confusion=ConfusionCounts(tp=r.tp, fp=r.fp, fn=r.fn, tn=r.tn),
            constraint_values=r.constraint_values,
            constraints_hold=r.constraints_hold,
        )
        for r in rows
    ]
    groups: dict[tuple[str, str], list[MetricResult]] = defaultdict(list)
    for r in rows:
        groups[(r.method, r.split)].append(r)
    summary = [
        MethodSummary(
            method=method,
            split=split,
            n=len(group),
            mean=math.fsum(values) / len(values),
            # Sample standard deviation across repeats; undefined for a single repeat.
            std=statistics.stdev(values) if len(values) > 1 else None,
            **_constraint_summary(group),
        )
        for (method, split), group in sorted(
            groups.items(),
            key=lambda kv: (_METHOD_ORDER.get(kv[0][0], 99), kv[0][0], kv[0][1] != "validation"),
        )
        for values in ([r.metric_value for r in group],)
    ]
    metric = job.spec.get("metric_info", {})
    name = str(metric.get("name", "custom"))
    choices = [RepeatChoice.model_validate(c) for c in job.choices or []]
    delivered = choices[0] if choices else None
    return JobResult(
        job_id=job.id,
        metric=name,
        metric_display_name=metric_display_name(job.spec),
        greater_is_better=bool(metric.get("greater_is_better", True)),
        trained_lambda=delivered.trained_lambda if delivered else job.best_lambda,
        shift=delivered.shift if delivered else None,
        lambda_star=delivered.trained_lambda if delivered else job.best_lambda,
        selection=selection_summary(choices),
        choices=choices,
        constraints=job_constraints(job.spec),
        summary=summary,
        runs=runs,
    )


def job_constraints(spec: dict[str, Any]) -> list[ConstraintOut]:
    """The spec's constraints with the names recorded for them at submission."""
    given = spec.get("constraints") or []
    out = []
    for constraint, named in zip(given, spec.get("constraint_info") or [], strict=True):
        sense = "at_least" if constraint.get("at_least") is not None else "at_most"
        out.append(
            ConstraintOut(
                **named,
                sense=sense,
                bound=float(constraint[sense]),
                confidence=constraint.get("confidence"),
            )
        )
    return out


def _constraint_summary(group: Sequence[MetricResult]) -> dict[str, Any]:
    """Each constraint's mean over the repeats of one method and split, and in how many of
    them all held (nothing for an unconstrained job)."""
    if any(r.constraint_values is None for r in group):
        return {}
    columns = zip(*(r.constraint_values or [] for r in group), strict=True)
    means = [
        None if any(v is None for v in column) else math.fsum(column) / len(group)
        for column in columns
    ]
    return {
        "constraint_means": means,
        "constraints_held": sum(1 for r in group if r.constraints_hold),
    }


def metric_display_name(spec: dict[str, Any]) -> str:
    """The metric's name as people write it (F2 for f_beta(2)); jobs submitted before the
    display name was recorded get it from the machine name."""
    from metro.metrics import display_name

    info = spec.get("metric_info", {})
    return str(info.get("display_name") or display_name(str(info.get("name", "custom"))))


def selection_summary(choices: Sequence[RepeatChoice]) -> SelectionSummary | None:
    """Mean and sample standard deviation of the repeats' selection scores (all measured on
    the same kind of split)."""
    values = [c.selection_score for c in choices if c.selection_score is not None]
    if not values:
        return None
    return SelectionSummary(
        split=choices[0].selection_split,
        n_folds=choices[0].n_folds,
        n=len(values),
        mean=math.fsum(values) / len(values),
        std=statistics.stdev(values) if len(values) > 1 else None,
    )
