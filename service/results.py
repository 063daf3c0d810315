"""Assemble a job's result view (per-run rows plus mean/std per method and split)."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Sequence

from service.db.models import Job, MetricResult
from service.schemas.jobs import ConfusionCounts, JobResult, MethodSummary, MetricRun

# METRO first, then the baselines in the order the paper reports them.
_METHOD_ORDER = {"metro": 0, "erm": 1, "koyejo1": 2, "koyejo2": 3, "parambath": 4}


def build_job_result(job: Job, rows: Sequence[MetricResult]) -> JobResult:
    runs = [
        MetricRun(
            method=r.method,
            repeat=r.repeat,
            split=r.split,  # type: ignore[arg-type]
            value=r.metric_value,
            lambda_=r.lambda_,
            confusion=ConfusionCounts(tp=r.tp, fp=r.fp, fn=r.fn, tn=r.tn),
        )
        for r in rows
    ]
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in rows:
        groups[(r.method, r.split)].append(r.metric_value)
    summary = [
        MethodSummary(
            method=method,
            split=split,  # type: ignore[arg-type]
            n=len(values),
            mean=math.fsum(values) / len(values),
            # Sample standard deviation across repeats; undefined for a single repeat.
            std=statistics.stdev(values) if len(values) > 1 else None,
        )
        for (method, split), values in sorted(
            groups.items(),
            key=lambda kv: (_METHOD_ORDER.get(kv[0][0], 99), kv[0][0], kv[0][1] != "validation"),
        )
    ]
    metric = job.spec.get("metric_info", {})
    return JobResult(
        job_id=job.id,
        metric=str(metric.get("name", "custom")),
        greater_is_better=bool(metric.get("greater_is_better", True)),
        lambda_star=job.best_lambda,
        summary=summary,
        runs=runs,
    )
