"""Assemble a job's result view (per-run rows plus mean/std per method and split)."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from core.db.models import Job, MetricResult
from core.job_spec import METHOD_NAMES, job_multiclass
from service.schemas.jobs import (
    ClassResult,
    ConfusionCounts,
    ConstraintInfo,
    ConstraintOut,
    JobResult,
    ManifestLabels,
    MethodSummary,
    MetricInfo,
    MetricRun,
    RepeatChoice,
    ResultNotice,
    SelectionSummary,
)

# METRO first, then the baselines in the order the paper reports them.
_METHOD_ORDER = {
    "metro": 0, "erm": 1, "koyejo1": 2, "koyejo2": 3, "parambath": 4,
    "ovr-threshold": 5, "logistic": 6, "logistic-tuned": 7,
}  # fmt: skip


# A multi-class job whose classes chose without cross-validation folds: the argmax has no tuned
# offsets (they are tuned on the pooled out-of-fold margins) and no average was scored where the
# classes chose, which the result otherwise shows only by leaving both out.
OFFSETS_NOT_TUNED = (
    "Offsets not tuned: the classes chose on a holdout (search.cv null, or bisection and "
    "Dinkelbach), so the model decides by the plain argmax of their margins and no average was "
    "scored where they chose; cross-validation folds (search.cv) tune the offsets."
)

# The same for a micro-averaged multi-label job: its labels' offsets are tuned together on the
# pooled out-of-fold margins, so a holdout leaves each label at its own threshold.
LABEL_OFFSETS_NOT_TUNED = (
    "Offsets not tuned: the labels chose on a holdout (search.cv null, or bisection and "
    "Dinkelbach), so each label keeps its own threshold, not one chosen with the others' for "
    "the micro average; cross-validation folds (search.cv) tune the labels' offsets together."
)

# The same where there were folds, but some label's out-of-fold margins could not be rebuilt
# from them (its choice carries the warning of the same code): said for a holdout only, this
# left the labels untuned without a word.
LABEL_OFFSETS_NOT_REBUILT = (
    "Offsets not tuned: the out-of-fold margins of {labels} could not be rebuilt from the "
    "search's folds, so each label keeps its own threshold, not one chosen with the others' "
    "for the micro average."
)


def build_job_result(
    job: Job, rows: Sequence[MetricResult], *, labels: ManifestLabels | None = None
) -> JobResult:
    """The job's result; ``labels``: a binary job's positive and negative label, from its
    delivered model (:func:`service.crud.jobs.delivered_labels`)."""
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
            class_index=None if r.class_index < 0 else r.class_index,
            label=r.label,
        )
        for r in rows
    ]
    metric = MetricInfo.stored(job.spec)
    choices = [RepeatChoice.model_validate(c) for c in job.choices or []]
    average = (job.spec.get("metric") or {}).get("average")
    if average is not None:
        return _averaged_result(job, rows, runs, choices, str(average))
    delivered = choices[0] if choices else None
    return JobResult(
        job_id=job.id,
        metric=metric.name,
        metric_display_name=metric.display_name,
        greater_is_better=metric.greater_is_better,
        trained_lambda=delivered.trained_lambda if delivered else job.best_lambda,
        shift=delivered.shift if delivered else None,
        lambda_star=delivered.lambda_star if delivered else job.best_lambda,
        selection=selection_summary(choices),
        choices=choices,
        constraints=job_constraints(job.spec),
        summary=method_summaries(rows),
        method_names=method_names(rows),
        runs=runs,
        validation_in_sample=validation_in_sample(job.spec, rows),
        labels=labels,
    )


def validation_in_sample(spec: dict[str, Any], rows: Sequence[MetricResult]) -> bool:
    """Whether a binary job's validation rows were trained on: with search.refit (true unless
    the spec says false) every method is refit on training + validation before it is scored
    there (metro.experiment.run_experiment), so that row is an in-sample figure."""
    refit = (spec.get("search") or {}).get("refit", True)
    return bool(refit) and any(r.split == "validation" for r in rows)


def method_names(rows: Sequence[MetricResult]) -> dict[str, str]:
    """The name people read for each method of the rows (core.job_spec.METHOD_NAMES)."""
    return {r.method: METHOD_NAMES.get(r.method, r.method) for r in rows}


def method_summaries(rows: Sequence[MetricResult]) -> list[MethodSummary]:
    """Mean and std over the repeats per method and split, METRO first (rows of one class, or
    the job's own figure: the caller picks)."""
    groups: dict[tuple[str, str], list[MetricResult]] = defaultdict(list)
    for r in rows:
        groups[(r.method, r.split)].append(r)
    return [
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


def _averaged_result(
    job: Job,
    rows: Sequence[MetricResult],
    runs: list[MetricRun],
    choices: list[RepeatChoice],
    average: str,
) -> JobResult:
    """An averaged job's result: the average per method and split (its summary), and per
    class what repeat 0's search chose and the class's own metric (``classes``). There is no
    single trained lambda: each class has its own."""
    metric = MetricInfo.stored(job.spec)
    overall = [r for r in rows if r.class_index < 0]
    delivered = [c for c in choices if c.repeat == 0]
    by_class: dict[int, list[MetricResult]] = defaultdict(list)
    for r in rows:
        if r.class_index >= 0:
            by_class[r.class_index].append(r)
    classes = [
        ClassResult(
            class_index=index,
            label=choice.label if choice.label is not None else index,
            trained_lambda=choice.trained_lambda,
            tuned_threshold=choice.tuned_threshold,
            offset=choice.offset,
            selection_score=choice.selection_score,
            warnings=[w.code for w in choice.warnings],
            summary=method_summaries(by_class.get(index, [])),
        )
        for index, choice in enumerate(delivered)
    ]
    validation = [
        r.metric_value for r in overall if r.method == "metro" and r.split == "validation"
    ]
    # the average each repeat chose by: where its classes chose (the pooled held-out folds)
    selection = _selection(delivered[0], validation) if validation and delivered else None
    notices = []
    multi_class = not (job.spec.get("dataset") or {}).get("label_columns")
    no_folds = bool(choices) and not any(c.n_folds for c in choices)
    if multi_class and selection is None and no_folds:
        notices.append(ResultNotice(code="offsets_not_tuned", message=OFFSETS_NOT_TUNED))
    elif not multi_class and average == "micro" and no_folds:
        notices.append(ResultNotice(code="offsets_not_tuned", message=LABEL_OFFSETS_NOT_TUNED))
    elif not multi_class and average == "micro" and delivered:
        unbuilt = [
            repr(c.label)
            for c in delivered
            if any(w.code == "offsets_not_tuned" for w in c.warnings)
        ]
        if unbuilt:
            labels = ("label " if len(unbuilt) == 1 else "labels ") + ", ".join(unbuilt)
            notices.append(
                ResultNotice(
                    code="offsets_not_tuned",
                    message=LABEL_OFFSETS_NOT_REBUILT.format(labels=labels),
                )
            )
    return JobResult(
        job_id=job.id,
        metric=metric.name,
        metric_display_name=metric.display_name,
        greater_is_better=metric.greater_is_better,
        trained_lambda=None,
        shift=None,
        lambda_star=None,
        selection=selection,
        choices=choices,
        constraints=job_constraints(job.spec),
        summary=method_summaries(overall),
        method_names=method_names(overall),
        runs=runs,
        average=average,
        classes=classes,
        multiclass=job_multiclass(job.spec),
        notices=notices,
    )


def job_constraints(spec: dict[str, Any]) -> list[ConstraintOut]:
    """The spec's constraints with the names recorded for them at submission."""
    given = spec.get("constraints") or []
    out = []
    for constraint, named in zip(given, spec.get("constraint_info") or [], strict=True):
        sense = "at_least" if constraint.get("at_least") is not None else "at_most"
        out.append(
            ConstraintOut(
                **ConstraintInfo.model_validate(named).model_dump(),
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


def selection_summary(choices: Sequence[RepeatChoice]) -> SelectionSummary | None:
    """Mean and sample standard deviation of the repeats' selection scores (all measured on
    the same kind of split)."""
    values = [c.selection_score for c in choices if c.selection_score is not None]
    return _selection(choices[0], values) if values else None


def _selection(where: RepeatChoice, values: Sequence[float]) -> SelectionSummary:
    """Mean and sample standard deviation of selection scores measured where ``where`` chose."""
    return SelectionSummary(
        split=where.selection_split,
        n_folds=where.n_folds,
        n=len(values),
        mean=math.fsum(values) / len(values),
        std=statistics.stdev(values) if len(values) > 1 else None,
    )
