"""Validate and normalize a job submission with the ``metro`` library itself.

Each section of the request is handed to the library object that will run it (through the
builders of :mod:`core.job_spec`); a ``ValueError`` or ``TypeError`` from the library becomes an
:class:`InvalidInputError` naming that section (and the field, when the message starts with one).
A normalized spec is then held to the operator's limits (:func:`check_job_limits`: its size, its
model's parameters, its work) on what is known of its data (:func:`known_data_size`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import sys
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from core.db.models import Dataset
from core.errors import FieldError, InvalidInputError
from core.job_spec import (
    MULTICLASS_KEY,
    DataSize,
    SpecFieldError,
    as_json,
    averaged_errors,
    budget_errors,
    build_constraints,
    build_job_objects,
    build_metric,
    build_model_spec,
    build_search,
    build_surrogate,
    build_training_config,
    canonical_constraint,
    canonical_metric,
    canonical_surrogate,
    check_constrained_search,
    estimate_work,
)
from metro.metrics import F_BETA_NEEDS_BETA, MetricSpec, lacks_beta
from service.schemas.jobs import ConstraintIn, ConstraintInfo, JobCreate, MetricInfo, PresetMetric

if TYPE_CHECKING:
    from core.config import Settings
    from metro.constraints import Constraint
    from metro.models import ModelSpec
    from metro.search import SearchConfig
    from metro.trainer import TrainingConfig

INVALID_JOB = "Invalid job"


def fields_with_nul(value: Any, loc: tuple[str | int, ...]) -> list[FieldError]:
    """A FieldError for every string (object key or value) under ``value`` holding a NUL.

    Such text is refused up front: the database stores the spec and names as text, which cannot
    hold a NUL, and no file path, column name or label can contain one either.
    """
    message = "must not contain a NUL character"
    if isinstance(value, str):
        return [FieldError(loc, message)] if "\x00" in value else []
    errors: list[FieldError] = []
    if isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str) and "\x00" in key:
                errors.append(FieldError(loc, f"the key {key!r} {message}"))
            errors += fields_with_nul(item, (*loc, str(key)))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            errors += fields_with_nul(item, (*loc, index))
    return errors


def fields_not_finite(value: Any, loc: tuple[str | int, ...]) -> list[FieldError]:
    """A FieldError for every number under ``value`` that is not finite: JSON has no infinity,
    yet 1e999 parses as one, and where the library does not look at a field (a label value) it
    would reach the database's JSON column, which refuses it. An integer past float64's range is
    refused too: no parameter means one, and Python's float() raises OverflowError for it."""
    if isinstance(value, float):
        return [] if math.isfinite(value) else [FieldError(loc, "must be a finite number")]
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > sys.float_info.max:
        return [FieldError(loc, "must be a finite number (this integer is past float64's range)")]
    errors: list[FieldError] = []
    if isinstance(value, Mapping):
        for key, item in value.items():
            errors += fields_not_finite(item, (*loc, str(key)))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            errors += fields_not_finite(item, (*loc, index))
    return errors


# -- normalization ---------------------------------------------------------------------------


def _submitted_model(given: Mapping[str, Any]) -> ModelSpec:
    """The model as a client gave it: a size its kind does not have is refused, not dropped."""
    from metro.models import check_sizes_used

    check_sizes_used(given)
    return build_model_spec(given)


def normalize_job_spec(job: JobCreate) -> dict[str, Any]:
    """The spec as the worker will run it, every default filled in, or InvalidInputError listing
    every section the library rejected (not just the first)."""

    errors = fields_not_finite(job.model_dump(exclude_unset=True), ("body",))
    if errors:  # the library would refuse most of them one section at a time, less plainly
        raise InvalidInputError(INVALID_JOB, errors)

    def section(
        name: str, given: Mapping[str, Any], build: Callable[[Mapping[str, Any]], Any]
    ) -> Any:
        from metro.metrics import UnknownMetricParameterError
        from metro.options import UnknownChoiceError

        try:
            return build(given)
        except UnknownMetricParameterError as exc:  # one error per field the preset lacks
            errors.extend(
                FieldError(loc=("body", name, field), msg=str(exc), type="extra_forbidden")
                for field in exc.unknown
            )
            return None
        except (ValueError, TypeError) as exc:
            loc: tuple[str | int, ...]
            if isinstance(exc, UnknownChoiceError) and exc.field in given:
                loc = ("body", name, exc.field)  # metric.preset, surrogate.name
            else:
                loc = _loc(name, given, str(exc))
            errors.append(FieldError(loc=loc, msg=_clean(exc)))
            return None

    # A preset as given (the library fills in its parameters' defaults, so the spec and its hash
    # hold only what the client sent); the coefficient forms with their defaults, as stored.
    metric_in = job.metric.model_dump(exclude_unset=isinstance(job.metric, PresetMetric))
    metric: Any  # the library's metric, or None with an error recorded
    metric = section("metric", metric_in, build_metric)  # a misspelt parameter named first
    if metric is None and lacks_beta(metric_in.get("preset"), metric_in):
        # said at metric.beta, not metric; and beside a misspelt one ("bta"), whose own error
        # the library's check gave first
        errors[:] = [e for e in errors if F_BETA_NEEDS_BETA not in e.msg]
        errors.append(FieldError(("body", "metric", "beta"), F_BETA_NEEDS_BETA, type="missing"))
    surrogate = section("surrogate", job.surrogate.model_dump(exclude_unset=True), build_surrogate)
    search = section("search", job.search.model_dump(exclude_unset=True), build_search)
    model = section("model", job.model.model_dump(exclude_unset=True), _submitted_model)
    training = section(
        "training", job.training.model_dump(exclude_unset=True), build_training_config
    )
    if isinstance(metric, MetricSpec) and search is not None:
        errors += _lambda_interval_errors(metric, search)
    if model is not None and training is not None:
        try:
            training.check_for(model)
        except ValueError as exc:  # an option the model's optimizer cannot honour
            given = job.training.model_dump(exclude_unset=True)
            errors.append(FieldError(loc=_loc("training", given, str(exc)), msg=_clean(exc)))
    if len(set(job.baselines)) != len(job.baselines):
        errors.append(FieldError(("body", "baselines"), "baselines must not repeat a method"))
    constraints = [_normalized_constraint(c) for c in job.constraints]
    built: list[Constraint] = []
    for index, given in enumerate(constraints):
        try:
            one = build_constraints([given])
        except SpecFieldError as exc:  # its path says constraints[0]: this one's index instead
            if F_BETA_NEEDS_BETA in str(exc):  # said at params.beta, where it is missing
                errors.append(
                    FieldError(
                        ("body", "constraints", index, "params", "beta"),
                        "f_beta needs a beta in params (2 for F2); for beta = 1 use f1",
                        type="missing",
                    )
                )
            else:
                errors.append(FieldError(("body", "constraints", index, *exc.path[2:]), str(exc)))
            continue
        built += one
    if search is not None and built:
        try:
            check_constrained_search(search, built)
        except SpecFieldError as exc:
            errors.append(FieldError(("body", *exc.path), str(exc)))
    if errors:
        raise InvalidInputError(INVALID_JOB, errors)

    average = metric_in.pop("average", None)
    if average is not None:
        metric_in["average"] = average  # left out when null: a binary job's spec is unchanged
    # Left out when null: a job without them keeps its spec (and its hash).
    dataset = job.dataset.model_dump(
        exclude={name for name in ("label_columns", "ignore_columns")
                 if getattr(job.dataset, name) is None}
    )  # fmt: skip
    labels = job.dataset.label_columns or [job.dataset.label_column]
    errors += [
        FieldError(
            ("body", "dataset", "ignore_columns", index),
            f"{name!r} is the label column: a label is never a feature; leave it out of "
            "ignore_columns",
        )
        for index, name in enumerate(job.dataset.ignore_columns or [])
        if name in labels
    ]
    errors += [
        FieldError(("body", *exc.path), str(exc))
        for exc in averaged_errors(
            {"metric": metric_in, "dataset": dataset, "constraints": constraints,
             "baselines": job.baselines, "search": job.search.model_dump(),
             "model": job.model.model_dump()}
        )
    ]  # fmt: skip
    if errors:
        raise InvalidInputError(INVALID_JOB, errors)

    # No constraints: the spec of an unconstrained job, exactly as before constraints existed
    # (so its hash, and an Idempotency-Key's replay, are unchanged).
    extra: dict[str, Any] = {}
    if constraints:
        extra = {
            "constraints": [canonical_constraint(c) for c in constraints],
            # How each is shown (resolved by the library); workers rebuild from "constraints".
            "constraint_info": [ConstraintInfo.of(c).model_dump() for c in built],
        }
    searched = as_json(search)
    if searched.get(MULTICLASS_KEY) != "multinomial":
        # Stored only where it changes what is trained (its absence reads as per_class, the
        # default, as for a spec from before it): every other job's spec, and so its hash and
        # an Idempotency-Key's replay across this release, is as before the setting. (A binary
        # or multi-label job with multinomial is refused above.)
        searched.pop(MULTICLASS_KEY, None)
    return {
        "metric": canonical_metric(metric_in),
        # What the metric resolved to, for display; workers rebuild it from "metric".
        "metric_info": MetricInfo.of(metric, average=average).model_dump(),
        "dataset": dataset,
        "surrogate": canonical_surrogate(surrogate.to_dict()),
        "model": as_json(model),
        "search": searched,
        "training": _normalized_training(training),
        "repeats": job.repeats,
        "baselines": list(job.baselines),
        **extra,
    }


# -- the operator's limits on a job (core.config.Settings; docs/operations.md) ----------------


@dataclass(frozen=True)
class JobLimits:
    """The limits a normalized spec is checked against at submission."""

    max_spec_bytes: int
    max_model_parameters: int
    max_job_work: float

    @classmethod
    def from_settings(cls, settings: Settings) -> JobLimits:
        return cls(
            max_spec_bytes=settings.max_job_spec_bytes,
            max_model_parameters=settings.max_model_parameters,
            max_job_work=settings.max_job_work,
        )


def spec_bytes(spec: Mapping[str, Any]) -> int:
    """The size of a spec as stored: compact JSON, UTF-8."""
    return len(json.dumps(spec, separators=(",", ":"), ensure_ascii=False).encode())


def check_job_limits(spec: Mapping[str, Any], *, limits: JobLimits, data: DataSize) -> None:
    """InvalidInputError listing every limit the normalized ``spec`` is past on ``data`` (what is
    known of the dataset now): the size of the spec, the parameters of its model (a lower bound
    when the data's columns are unknown) and its work (only when the data's rows are known: the
    worker checks the rest, see worker.runner); and a model that cannot take the data's
    examples, where their shape is known."""
    errors: list[FieldError] = []
    size = spec_bytes(spec)
    if size > limits.max_spec_bytes:
        errors.append(
            FieldError(
                ("body",),
                f"the job spec is {size:,} bytes once normalized, more than this server's limit "
                f"of {limits.max_spec_bytes:,} (max_job_spec_bytes)",
            )
        )
    objects = build_job_objects(spec)
    if data.example_shape is not None:
        # The worker's own check, where the data's shape is known now: cnn3 on a table was
        # accepted, then failed its job.
        try:
            objects.model.check_input(data.example_shape)
        except ValueError as exc:
            errors.append(FieldError(("body", "model", "kind"), str(exc)))
        if objects.training.augment and len(data.example_shape) != 3:
            # The trainer's own refusal, known now: augment on a table failed its job.
            errors.append(
                FieldError(
                    ("body", "training", "augment"),
                    "augment (random crops and flips) needs image inputs of shape (C, H, W); "
                    f"this data's examples have shape {data.example_shape}",
                )
            )
    work = estimate_work(spec, objects, data)
    errors += [
        FieldError(("body", *exc.path), str(exc))
        for exc in budget_errors(
            work,
            max_model_parameters=limits.max_model_parameters,
            max_job_work=limits.max_job_work,
        )
    ]
    if errors:
        raise InvalidInputError(INVALID_JOB, errors)


def known_data_size(
    session: Session,
    uri: str,
    dataset_id: uuid.UUID | None,
    *,
    averaged: bool = False,
    label_column: str | None = None,
    label_columns: int = 1,
    ignored_columns: int = 0,
) -> DataSize:
    """What the service knows of a checked dataset before any worker loads it: an upload's rows
    and columns (recorded when it was received), a built-in's; nothing of a file, an object or
    a URL, which only the worker reads. For an averaged job, its classes or labels too (one
    search each) where they are known: ``label_columns``, an upload's recorded classes of its
    ``label_column``, a built-in's."""
    targets = label_columns if averaged and label_columns > 1 else None
    if dataset_id is not None:
        row = session.get(Dataset, dataset_id)  # loaded (and locked) by the dataset check
        if row is None or row.n_rows is None or row.n_columns is None:
            return DataSize(targets=targets)
        if averaged and targets is None and row.labels and row.label_column == label_column:
            targets = len(row.labels)
        # An NPZ's columns are its flattened features (the labels are another array); a table's
        # include the label column, or the ``label_columns`` of multi-label data. An NPZ's image
        # channels are not recorded.
        features = (
            row.n_columns
            if row.format == ".npz"
            else row.n_columns - label_columns - ignored_columns
        )
        table = row.format != ".npz"  # a table's example is a row of features, never an image
        return DataSize(
            n_rows=row.n_rows, n_features=max(features, 1), targets=targets,
            example_shape=(max(features, 1),) if table else None,
        )  # fmt: skip
    if uri.lower().startswith("builtin://"):
        from metro.datasets import DataError, builtin_size

        try:
            n_rows, shape, classes = builtin_size(uri, all_classes=averaged)
            if averaged:
                targets = classes
        except DataError:  # refused by the dataset check already
            return DataSize()
        return dataclasses.replace(DataSize.of_examples(n_rows, shape), targets=targets)
    return DataSize(targets=targets)


def _normalized_training(training: TrainingConfig) -> dict[str, Any]:
    """The training section with every default, except ``compile`` when it is off: a job that
    does not ask for compilation keeps the spec, and so the hash and an Idempotency-Key's replay,
    it had before the option existed (workers read a missing ``compile`` as false)."""
    fields = as_json(training)
    if not fields.get("compile"):
        fields.pop("compile", None)
    return fields


def _normalized_constraint(given: ConstraintIn) -> dict[str, Any]:
    """A constraint as the library takes it, the defaults filled in: a preset's name in lower
    case with its ``params``, or the coefficients with their name and orientation; the bound
    under its sense; ``confidence`` (null: on average)."""
    fields = given.model_dump(exclude_none=True)
    metric = fields.pop("metric")
    out: dict[str, Any] = {}
    if isinstance(metric, str):
        out["metric"] = metric.lower()
        out["params"] = dict(fields.pop("params", None) or {})
    else:
        out["metric"] = metric
    out.update(fields)
    out.setdefault("confidence", None)
    return out


def _lambda_interval_errors(metric: MetricSpec, search: SearchConfig) -> list[FieldError]:
    """One of search.lambda_min and lambda_max given, past the other end of the metric's own
    range (which fills the one not given): the job was accepted and failed on a worker with
    "empty lambda interval". Where the metric needs no search (its denominator does not depend
    on the predictions), lambda_bounds takes its own range and none is refused."""
    from metro.search.base import lambda_bounds

    try:
        lambda_bounds(metric, search)
    except ValueError:
        low, high = metric.lambda_range
        if search.lambda_min is not None:
            return [
                FieldError(
                    ("body", "search", "lambda_min"),
                    f"lambda_min {search.lambda_min:g} is not below {high:g}, the top of "
                    f"{metric.name}'s lambda range [{low:g}, {high:g}], which fills the "
                    "lambda_max not given: give lambda_max too, or a lambda_min below it",
                )
            ]
        return [
            FieldError(
                ("body", "search", "lambda_max"),
                f"lambda_max {search.lambda_max:g} is not above {low:g}, the bottom of "
                f"{metric.name}'s lambda range [{low:g}, {high:g}], which fills the lambda_min "
                "not given: give lambda_min too, or a lambda_max above it",
            )
        ]
    return []


def _loc(section: str, given: Mapping[str, Any], message: str) -> tuple[str | int, ...]:
    """Point at the field when the library's message names one of the keys the client sent."""
    named = [key for key in given if re.search(rf"(?<![\w.]){re.escape(key)}(?![\w])", message)]
    if len(named) > 1:  # "cv=3 is only available with the grid strategy": its subject leads
        named = [key for key in named if re.match(rf"{re.escape(key)}(?![\w])", message)]
    if len(named) == 1:
        return ("body", section, named[0])
    return ("body", section)


def _clean(exc: Exception) -> str:
    text = str(exc).strip() or type(exc).__name__
    # A TypeError from a dataclass constructor names the class' __init__: say it plainly.
    text = re.sub(r"^\w+\.__init__\(\) got an unexpected keyword argument ", "unknown field ", text)
    return text
