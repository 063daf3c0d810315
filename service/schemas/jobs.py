"""Job submission and job views.

Every setting of a submission is declared once, in the ``metro`` library, and the sections here
are built from those declarations (:mod:`service.schemas.options`): the search, training and model
sections field for field, the metric presets' and surrogates' names and parameters, and a
constraint's confidence. So the OpenAPI document, the generated client and the command line show
the library's types, bounds, defaults and descriptions, and a test keeps them in step
(tests/service/schemas/test_options.py).

What the shape cannot say (does this preset take ``beta``, is this bound in its metric's range)
the library decides in :mod:`service.job_spec`, with its own messages. That is why the metric,
surrogate and constraint objects let unknown keys through to it: the OpenAPI document declares
``additionalProperties: false``, and the library refuses every key it does not take with a 422
naming it and what the object takes.
"""

from __future__ import annotations

import dataclasses
import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, create_model, field_validator

from core.records import (  # noqa: F401 - re-exported: the API's schemas
    Average,
    ChoiceWarning,
    ConfusionCounts,
    ConstraintInfo,
    ManifestLabels,
    MetricInfo,
    MulticlassTraining,
    Refinement,
    RefinementScore,
    RepeatChoice,
    SelectionPoint,
    SelectionSplit,
    Split,
)
from core.states import JobState
from metro.averaging import PER_LABEL_METRICS
from metro.baselines import BASELINES
from metro.constraints import Constraint
from metro.datasets import MAX_CLASSES, DataError, check_ignore_columns, check_label_columns
from metro.experiment import MAX_REPEATS
from metro.metrics import PRESET_ALIASES, PRESET_NAMES, MetricSpec, preset_options
from metro.models import ModelSpec
from metro.options import Option, option_of
from metro.search.config import SearchConfig
from metro.surrogates import SURROGATES, surrogate_options
from metro.trainer.config import TrainingConfig
from service.schemas.common import one_form_of, union_tag
from service.schemas.options import parameter_fields, request_section, request_type

if TYPE_CHECKING:
    BaselineName = str
else:
    BaselineName = Literal[BASELINES]  # the library's baselines (metro.baselines)
LabelValue = bool | int | float | str
# A label as a request names it: text as long as an upload's form takes (a 5 MiB one was
# accepted, and sent back in each error about it).
LabelIn = bool | int | float | Annotated[str, Field(max_length=255)]


def _preset_parameters() -> dict[str, tuple[Option, Any]]:
    """Every parameter any preset takes, as the library declares it (a name shared by two
    presets must mean one thing)."""
    merged: dict[str, tuple[Option, Any]] = {}
    for preset in PRESET_NAMES:
        for name, declared in preset_options(preset).items():
            if merged.setdefault(name, declared) != declared:
                raise TypeError(f"preset parameter {name!r} is declared twice, differently")
    return merged


# f_beta's beta has a default in the library (1), but a job must give it: an F-beta job without
# one would train for F1 unasked (service.job_spec says so with a 422).
# The presets' names, and the other names the server reads as one of them (x-aliases), in any
# case (x-any-case): a client that checks names against the enum reads them too.
_PRESET_CHOICES: dict[str, Any] = {
    "enum": list(PRESET_NAMES),
    "x-aliases": dict(PRESET_ALIASES),
    "x-any-case": True,
}
_PRESET_FIELDS = parameter_fields(_preset_parameters(), required_by_service=("beta",))
# Unknown keys are passed on for the library to refuse by name (see the module's docstring).
_LIBRARY_CHECKS_KEYS: dict[str, Any] = {"additionalProperties": False}

if TYPE_CHECKING:  # what the type checker sees of the built models

    class PresetMetric(BaseModel):
        preset: str

    class PresetParams(BaseModel): ...

    class SurrogateIn(BaseModel): ...

else:
    PresetMetric = create_model(
        "PresetMetric",
        __config__=ConfigDict(
            extra="allow",
            strict=True,
            json_schema_extra={
                **_LIBRARY_CHECKS_KEYS,
                "examples": [{"preset": "f_beta", "beta": 2.0}],
            },
        ),
        __doc__='A named metric and its parameters, e.g. ``{"preset": "f_beta", "beta": 2}``.',
        __module__=__name__,
        preset=(
            str,
            Field(
                max_length=100,
                description="The metric (metro.metrics' presets; case is ignored)",
                json_schema_extra=_PRESET_CHOICES,
            ),
        ),
        average=(
            Average | None,
            Field(
                default=None,
                description="Several classes or labels: the average of the per-class (or "
                "per-label) metric, as sklearn.metrics.f1_score's average (macro: their plain "
                "mean; weighted: weighted by each class's true rows; micro: the metric of their "
                "cells summed, which multi-label data trains for with the labels' thresholds "
                "tuned together and is the accuracy for multi-class data), trained for by one "
                "METRO search per class or label (metro.multiclass). The data's label column then "
                "holds the classes (or dataset.label_columns names the 0/1 label columns). "
                f"Presets: {', '.join(PER_LABEL_METRICS)}. Null: a binary job",
            ),
        ),
        **_PRESET_FIELDS,
    )
    PresetParams = create_model(
        "PresetParams",
        __config__=ConfigDict(extra="allow", strict=True, json_schema_extra=_LIBRARY_CHECKS_KEYS),
        __doc__='A preset\'s parameters, e.g. ``{"beta": 2}`` for f_beta.',
        __module__=__name__,
        **_PRESET_FIELDS,
    )
    SurrogateIn = create_model(
        "SurrogateIn",
        __config__=ConfigDict(extra="allow", strict=True, json_schema_extra=_LIBRARY_CHECKS_KEYS),
        __doc__="The surrogate loss Phi the cost-sensitive models are trained with, and its "
        "parameter (metro.surrogates).",
        __module__=__name__,
        name=(
            str,
            Field(
                default="logistic",
                description="The surrogate (case is ignored, and '-' read as '_')",
                json_schema_extra={
                    "enum": list(SURROGATES),
                    "x-any-case": True,
                    "x-aliases": {n.replace("_", "-"): n for n in SURROGATES if "_" in n},
                },
            ),
        ),
        **parameter_fields(
            {key: opt for name in SURROGATES for key, opt in surrogate_options(name).items()}
        ),
    )


# The longest metric name a job may give (it is stored and shown with every result).
MAX_METRIC_NAME = 100
# Columns a job may leave out of its features: as many as a dataset may have by default
# (METRO_MAX_DATASET_COLUMNS).
MAX_IGNORED_COLUMNS = 10_000


def _spec_field(name: str, *, default: Any = None, max_length: int | None = None) -> Any:
    """A field of a coefficient form that is a field of metro.metrics.MetricSpec: its default
    (unless the form's constructor has another), description and bounds are the library's."""
    opt = option_of(MetricSpec, name)
    library_default = {f.name: f.default for f in dataclasses.fields(MetricSpec)}[name]
    return Field(
        default=library_default if default is None else default,
        description=opt.description,
        ge=opt.ge,
        le=opt.le,
        max_length=max_length,
    )


class CoefficientMetric(BaseModel):
    """The paper's loss L = <alpha, phi> / <beta, phi> on the basis (h*y, y, h, 1)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    alpha: list[float] = Field(min_length=4, max_length=4)
    beta: list[float] = Field(min_length=4, max_length=4)
    greater_is_better: bool = _spec_field("greater_is_better")
    zero_division: float = _spec_field("zero_division")
    name: str = _spec_field("name", max_length=MAX_METRIC_NAME)


class ConfusionMetric(BaseModel):
    """A ratio of weighted confusion cells, e.g. F1 = {tp: 2} / {tp: 2, fp: 1, fn: 1}."""

    model_config = ConfigDict(extra="forbid", strict=True)
    numerator: dict[str, float]
    denominator: dict[str, float]
    # MetricSpec.from_confusion's default: cells are usually written as a score (F1 above)
    greater_is_better: bool = _spec_field("greater_is_better", default=True)
    zero_division: float = _spec_field("zero_division")
    name: str = _spec_field("name", max_length=MAX_METRIC_NAME)


def _metric_form(value: Any) -> str | None:
    if isinstance(value, BaseModel):
        value = value.model_dump()
    if not isinstance(value, dict):
        return None
    if "preset" in value:
        return "preset-metric"
    if "numerator" in value or "denominator" in value:
        return "confusion-metric"
    if "alpha" in value or "beta" in value:
        return "coefficient-metric"
    return None


MetricIn = Annotated[
    Annotated[PresetMetric, union_tag("preset-metric")]
    | Annotated[CoefficientMetric, union_tag("coefficient-metric")]
    | Annotated[ConfusionMetric, union_tag("confusion-metric")],
    Discriminator(
        _metric_form,
        custom_error_type="metric_form",
        custom_error_message=(
            "metric must be an object with 'preset', with 'alpha' and 'beta', "
            "or with 'numerator' and 'denominator'"
        ),
    ),
]


class DatasetRef(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    uri: str = Field(
        min_length=1,
        max_length=2048,
        description="dataset://<id> (an upload), file:///... under a data root, builtin://name, "
        "s3://bucket/key or https://host/path",
    )
    label_column: str = Field(
        default="y",
        min_length=1,
        max_length=255,
        description="The column of the labels: two classes, or several with metric.average",
    )
    label_columns: list[Annotated[str, Field(min_length=1, max_length=255)]] | None = Field(
        default=None,
        min_length=2,  # one 0/1 column is binary data: label_column and positive_label
        max_length=MAX_CLASSES,
        json_schema_extra={"uniqueItems": True},
        description="Multi-label data: the 0/1 label columns, one per label, at least two "
        "(needs metric.average; label_column is then not read). Null: one label column",
    )

    @field_validator("label_columns")
    @classmethod
    def _distinct_label_columns(cls, names: list[str] | None) -> list[str] | None:
        # The worker's own check, at submission: a repeated column was accepted (201) and its
        # job failed.
        if names is not None:
            check_label_columns(names)
        return names

    ignore_columns: list[Annotated[str, Field(min_length=1, max_length=255)]] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_IGNORED_COLUMNS,
        description="Columns of a CSV or Parquet table that are not features (an id, a note, a "
        "date, text): left out of training, whatever they hold. Null: every column but the "
        "label column(s) is a feature, and must be numeric",
    )

    @field_validator("ignore_columns")
    @classmethod
    def _distinct_ignore_columns(cls, names: list[str] | None) -> list[str] | None:
        if names is not None:
            try:
                check_ignore_columns(names)
            except DataError as exc:
                raise ValueError(str(exc)) from None
        return names

    positive_label: LabelIn | None = Field(
        default=None,
        description="The label value of the positive class. When omitted it is inferred only "
        "where the labels say which class is positive (0/1, -1/+1, false/true, also as text); "
        "other labels need it. With an upload that recorded this column's labels, a value "
        "that is not one of them is a 422",
    )


if TYPE_CHECKING:  # what the type checker sees of the built model

    class ModelIn(BaseModel): ...

else:
    ModelIn = request_section(
        "ModelIn",
        ModelSpec,
        "The hypothesis set (metro.models.ModelSpec): its kind and the sizes that kind uses. "
        "Fields left out take the defaults shown.",
    )


# The search and training sections are the library's configurations, field for field
# (service.schemas.options): their defaults, descriptions, choices and bounds are declared once,
# in metro.search.config and metro.trainer.config.
if TYPE_CHECKING:  # what the type checker sees of the two built models

    class SearchIn(BaseModel): ...

    class TrainingIn(BaseModel): ...

else:
    SearchIn = request_section(
        "SearchIn",
        SearchConfig,
        "How lambda is searched (metro.search.SearchConfig). Fields left out take the defaults "
        "shown.",
    )
    TrainingIn = request_section(
        "TrainingIn",
        TrainingConfig,
        "How each model is fitted (metro.trainer.TrainingConfig). Fields left out take the "
        "defaults shown.",
    )


_CONFIDENCE = option_of(Constraint, "confidence")


class ConstraintMetricIn(CoefficientMetric):
    """A constraint's metric as the ratio <alpha, phi> / <beta, phi> on the basis
    (h*y, y, h, 1), read in its natural orientation (``greater_is_better``)."""

    # The coefficient form's fields; an unknown key is the library's 422 (build_constraints).
    model_config = ConfigDict(extra="allow", json_schema_extra=_LIBRARY_CHECKS_KEYS)


class ConstraintIn(BaseModel):
    """A floor or a ceiling on a second ratio metric, e.g. ``{"metric": "recall",
    "at_least": 0.9}``: the search keeps the best metric among the fits that meet it on the
    held-out rows (see docs/api.md, "Constraints")."""

    model_config = ConfigDict(
        extra="allow",
        strict=True,
        json_schema_extra={
            **_LIBRARY_CHECKS_KEYS,
            "examples": [{"metric": "recall", "at_least": 0.9}],
            **one_form_of(("at_least",), ("at_most",)),
        },
    )
    metric: (
        Annotated[str, Field(max_length=100, json_schema_extra=_PRESET_CHOICES)]
        | ConstraintMetricIn
    ) = Field(description="A preset (case is ignored) or {alpha, beta}")
    params: PresetParams | None = Field(
        default=None, description='The preset\'s parameters, e.g. {"beta": 2} for f_beta'
    )
    at_least: float | None = Field(
        default=None, allow_inf_nan=False, description="The floor (give this or at_most)"
    )
    at_most: float | None = Field(
        default=None, allow_inf_nan=False, description="The ceiling (give this or at_least)"
    )
    confidence: request_type(float | None, _CONFIDENCE) = Field(  # type: ignore[valid-type]
        default=None, allow_inf_nan=False, description=_CONFIDENCE.description
    )


MAX_CONSTRAINTS = 4


_RESOLVED = (
    "Read-only: what the server resolved {what} to, as a job's spec returns it. Accepted so "
    "that a returned spec can be submitted again, and ignored: the server derives it anew"
)


class JobCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        # "7" or 7.0 for an integer is a 422, not silently 7 (a float field still takes 7).
        strict=True,
        json_schema_extra={
            "examples": [
                {
                    "metric": {"preset": "f_beta", "beta": 2.0},
                    "dataset": {"uri": "builtin://breast_cancer"},
                    "surrogate": {"name": "logistic"},
                    "search": {"strategy": "grid", "n_lambdas": 21},
                }
            ]
        },
    )
    metric: MetricIn
    dataset: DatasetRef
    surrogate: SurrogateIn = Field(default_factory=SurrogateIn)
    model: ModelIn = Field(default_factory=ModelIn)
    search: SearchIn = Field(default_factory=SearchIn)
    training: TrainingIn = Field(default_factory=TrainingIn)
    repeats: int = Field(
        default=1,
        ge=1,
        le=MAX_REPEATS,
        description="Fresh train/test splits the job is run on; the result reports the mean and "
        "the spread over them",
    )
    baselines: list[BaselineName] = Field(
        default_factory=list,
        max_length=4,
        json_schema_extra={"uniqueItems": True},
        description="Methods run beside METRO on the same splits and folds: erm (logistic "
        "regression, threshold 0), koyejo1 (the same, its threshold tuned for the metric), "
        "koyejo2 and parambath (cost-weighted logistic regressions over a grid; parambath tunes "
        "a threshold per grid point)",
    )
    constraints: list[ConstraintIn] = Field(
        default_factory=list,
        max_length=MAX_CONSTRAINTS,
        description="Floors and ceilings on other ratio metrics that METRO and every baseline "
        "choose under (grid search only); none: the unconstrained problem",
    )
    metric_info: MetricInfo | None = Field(
        default=None,
        description=_RESOLVED.format(what="the metric"),
        json_schema_extra={"readOnly": True},
    )
    constraint_info: list[ConstraintInfo] | None = Field(
        default=None,
        max_length=MAX_CONSTRAINTS,
        description=_RESOLVED.format(what="each constraint"),
        json_schema_extra={"readOnly": True},
    )


class JobOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    state: JobState
    spec: dict[str, Any] = Field(description="The normalized spec, every default filled in")
    dataset_uri: str
    progress: float = Field(ge=0, le=1)
    current_lambda: float | None = Field(description="The lambda of the latest trace step")
    best_lambda: float | None = Field(
        description="The trained_lambda of the delivered model (repeat 0's choice) once its "
        "search has chosen; null before"
    )
    choices: list[RepeatChoice] | None = Field(
        default=None,
        description="What each repeat's search chose, as the repeats finish (null before)",
    )
    data_sha256: str | None = Field(
        default=None,
        description="The SHA-256 of the data the job trains on (its features and labels as "
        "loaded), pinned by the first load: a later attempt whose data differs (the file, object "
        "or URL changed) fails the job. Null until a worker has loaded it",
    )
    attempts: int
    failure_reason: str | None
    waiting: str | None = Field(
        default=None,
        description="A queued job that no worker can take now: why it waits (no worker serving "
        "its queue has reported recently; a training.device cuda job needs a GPU worker). Null "
        "once a worker serves its queue, and for jobs that are not queued",
    )
    cancel_requested: bool
    created_at: datetime
    updated_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class LambdaStepOut(BaseModel):
    model_config = ConfigDict(from_attributes=True, populate_by_name=True)

    repeat: int
    step: int
    fold: int | None
    method: str
    lambda_: float = Field(alias="lambda")
    shift: str | None = Field(description="The cost shift of the fit: minimal or paper")
    surrogate_loss: float | None
    l_lambda: float | None
    train_metric: float | None
    validation_metric: float | None
    seconds: float | None
    mu: float | None = Field(
        default=None,
        description="Under constraints: the Lagrange multiplier of the constraints this fit "
        "was trained with (one of search.multipliers); null without",
    )
    constraint_values: list[float | None] | None = Field(
        default=None,
        description="Under constraints: each constraint's value where validation_metric is "
        "measured (train_metric's rows when it is null), at threshold 0 like the metric",
    )
    class_index: int | None = Field(
        default=None,
        description="An averaged job: the position, in the job's classes, of the class (or "
        "label) whose search this step is of; null for a binary job",
    )
    label: LabelValue | None = Field(
        default=None, description="An averaged job: that class's value (or label column)"
    )


class MetricRun(BaseModel):
    """One method on one split of one repeat."""

    method: str
    repeat: int
    split: Split
    value: float
    lambda_: float | None = Field(
        alias="lambda", description="METRO: the trained_lambda of this repeat's model"
    )
    confusion: ConfusionCounts
    constraint_values: list[float | None] | None = Field(
        default=None,
        description="Under constraints: each constraint's value on this split (in the order of "
        "the result's constraints); null without",
    )
    constraints_hold: bool | None = Field(
        default=None,
        description="Under constraints: whether every constraint holds on this split",
    )
    class_index: int | None = Field(
        default=None,
        description="An averaged job's per-class rows: the class's position in the result's "
        "classes; null for the job's own figure (a binary job's metric, or the average, whose "
        "confusion counts are summed over the classes)",
    )
    label: LabelValue | None = Field(
        default=None, description="The class (or label column) of a per-class row"
    )

    model_config = ConfigDict(populate_by_name=True)


class MethodSummary(BaseModel):
    """Mean and sample standard deviation (n - 1) over repeats; std is null for one repeat."""

    method: str
    split: Split
    n: int
    mean: float
    std: float | None
    constraint_means: list[float | None] | None = Field(
        default=None,
        description="Under constraints: each constraint's mean value over the repeats on "
        "this split; null without",
    )
    constraints_held: int | None = Field(
        default=None,
        description="Under constraints: in how many of the n repeats every constraint held on "
        "this split",
    )


class ConstraintOut(ConstraintInfo):
    """A constraint of the job, as the results name it."""

    model_config = ConfigDict(extra="ignore")  # an answer, not a submission: open to new fields
    sense: Literal["at_least", "at_most"]
    bound: float
    confidence: float | None


class SelectionSummary(BaseModel):
    """METRO's selection_score over the repeats: the quantity its searches chose by."""

    split: SelectionSplit
    n_folds: int | None
    n: int
    mean: float
    std: float | None


class ClassResult(BaseModel):
    """One class (or label) of an averaged job: what its search chose (repeat 0's, the
    delivered model's) and its own metric per method and split, over the repeats."""

    class_index: int
    label: LabelValue
    trained_lambda: float | None = Field(
        description="Repeat 0's lambda for this class; null for a multinomial model (no lambda)"
    )
    tuned_threshold: float | None = Field(
        description="Repeat 0's tuned threshold on this class's h (folded into the model)"
    )
    offset: float | None = Field(
        description="Multi-class: repeat 0's offset added to this class's margin before the "
        "argmax; null for multi-label"
    )
    selection_score: float | None = Field(
        description="This class's own metric where its search chose (pooled held-out folds)"
    )
    warnings: list[str] = Field(description="The codes of repeat 0's choice's warnings")
    summary: list[MethodSummary] = Field(
        description="This class's metric per method and split, mean and std over the repeats"
    )


class ResultNotice(BaseModel):
    """A fact about how the job's delivered model decides, to read before trusting it (where a
    warning is about one choice, a notice is about the whole model)."""

    code: Literal["offsets_not_tuned"] = Field(
        description="offsets_not_tuned: a multi-class job whose classes chose on a holdout "
        "(no cross-validation folds), so its model decides by the plain argmax of their margins "
        "and no average was scored where they chose; or a micro-averaged multi-label job whose "
        "labels chose on a holdout, or some of whose labels' out-of-fold margins could not be "
        "rebuilt from the folds (their choices carry the warning offsets_not_tuned), so each "
        "label keeps its own threshold"
    )
    message: str


class JobResult(BaseModel):
    job_id: uuid.UUID
    metric: str = Field(description="The metric's machine name, e.g. f_beta(2)")
    metric_display_name: str = Field(description="The metric's name as people write it: F2")
    greater_is_better: bool
    trained_lambda: float | None = Field(
        description="The lambda the delivered model (repeat 0's) was trained at"
    )
    shift: str | None = Field(description="The cost shift the delivered model was trained with")
    lambda_star: float | None = Field(
        description="The search's estimate of lambda* (the library's lambda_star_): "
        "trained_lambda for the grid, ratio_reached for bisection and Dinkelbach"
    )
    selection: SelectionSummary | None = Field(
        description="METRO's selection_score, mean and std over the repeats (what `metro watch` "
        "shows as best)"
    )
    choices: list[RepeatChoice] = Field(description="What each repeat's search chose")
    constraints: list[ConstraintOut] = Field(
        default_factory=list,
        description="The job's constraints, in the order of every constraint_values list; "
        "empty for an unconstrained job",
    )
    summary: list[MethodSummary] = Field(
        description="Per method and split, mean and std over the repeats of the job's metric "
        "(an averaged job's: the average over its classes)"
    )
    method_names: dict[str, str] = Field(
        default_factory=dict,
        description="Each method of the result as people read it: metro -> METRO, parambath -> "
        "Parambath et al. (what metro result and the dashboard print)",
    )
    runs: list[MetricRun]
    validation_in_sample: bool = Field(
        default=False,
        description="Whether the summary's and runs' validation rows are in-sample: true for a "
        "binary job with search.refit (the default), whose delivered model, and each "
        "baseline's, was refit on training + validation, so its validation rows were trained on "
        "(metro result and the dashboard label them 'validation (in-sample)'); the held-out "
        "number METRO chose by is selection, and test is never seen by any choice. False with "
        "search.refit false (the model fitted on the training rows alone), and for an averaged "
        "job, whose METRO validation row is the folds' pooled held-out average (as selection)",
    )
    labels: ManifestLabels | None = Field(
        default=None,
        description="A binary job: the label its metric and constraints count as positive (a "
        "run's tp and fn are rows of it) and the other, as its delivered model predicts them; "
        "null for an averaged job (its classes name themselves), or without a model (none yet, "
        "or deleted: the labels are read from it)",
    )
    average: Average | None = Field(
        default=None, description="An averaged job's averaging (metric.average); null: binary"
    )
    classes: list[ClassResult] | None = Field(
        default=None,
        description="An averaged job: its classes (or labels), in the order of class_index; "
        "null for a binary job",
    )
    multiclass: MulticlassTraining | None = Field(
        default=None,
        description="A multi-class job: how its classes were trained (search.multiclass): "
        "multinomial, one multinomial logistic regression with "
        "tuned offsets (no lambda: each class's trained_lambda is null), or per_class, one METRO "
        "search per class; null for a binary or multi-label job",
    )
    notices: list[ResultNotice] = Field(
        default_factory=list,
        description="Facts about how the delivered model decides, a line each (what metro "
        "result and the dashboard show beside the choices)",
    )
