"""A job's spec, as stored: the ``build_*`` functions turn its sections into the ``metro``
objects that run it, and :func:`spec_hash` tells two submissions of one job apart from two jobs.

The API validates a submission by building these same objects (``service.job_spec``), so a spec
accepted there is one the worker can run, and defaults are recorded at submission rather than
whatever the library says later.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the builders import metro lazily: torch takes seconds to import
    from metro.constraints import Constraint
    from metro.metrics import Metric
    from metro.models import ModelSpec
    from metro.search.config import SearchConfig
    from metro.surrogates import Surrogate
    from metro.trainer import TrainingConfig


@dataclass(frozen=True)
class JobObjects:
    """The ``metro`` objects a stored spec describes: what a worker runs.

    ``constraints`` stay in the library's JSON form, checked by :func:`build_constraints`:
    :func:`metro.experiment.prepare_repeat` resolves them on each repeat's training labels, as
    it resolves the metric (balanced accuracy depends on the class prior). Empty: none.
    """

    metric: Metric
    surrogate: Surrogate
    model: ModelSpec
    search: SearchConfig
    training: TrainingConfig
    constraints: tuple[Mapping[str, Any], ...] = field(default=())


class SpecFieldError(ValueError):
    """A value of the spec the library refuses, with the ``path`` to it in the spec (e.g.
    ``("constraints", 0, "at_least")``), so that the API can name the field."""

    def __init__(self, path: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.path = path


def build_job_objects(spec: Mapping[str, Any]) -> JobObjects:
    """Every section of a normalized spec built; KeyError for a missing section, ValueError or
    TypeError from the library for a wrong one."""
    search = build_search(spec["search"])
    if MULTICLASS_KEY not in spec["search"]:  # a spec from before the setting: per class
        search = dataclasses.replace(search, multiclass="per_class")
    constraints = tuple(spec.get("constraints") or ())
    check_constrained_search(search, build_constraints(constraints))
    return JobObjects(
        metric=build_metric(spec["metric"]),
        surrogate=build_surrogate(spec["surrogate"]),
        model=build_model_spec(spec["model"]),
        search=search,
        training=build_training_config(spec["training"]),
        constraints=constraints,
    )


# -- builders: the single place where spec dictionaries become metro objects -------------------


def build_metric(metric: Mapping[str, Any]) -> Metric:
    """A ``metro`` metric from the metric section (preset, coefficient or confusion form)."""
    from metro.metrics import MetricSpec, get_metric

    fields = dict(metric)
    fields.pop("average", None)  # how the per-class metrics are averaged: metric_average
    if "preset" in fields:
        preset = fields.pop("preset")
        return get_metric(preset, **fields)
    common = {
        key: fields[key] for key in ("greater_is_better", "zero_division", "name") if key in fields
    }
    if "numerator" in fields or "denominator" in fields:
        return MetricSpec.from_confusion(
            numerator=fields.get("numerator") or {},
            denominator=fields.get("denominator") or {},
            **common,
        )
    # What the client sent, None included: the library's own check names a missing vector.
    alpha, beta = fields.get("alpha"), fields.get("beta")
    return MetricSpec(alpha=alpha, beta=beta, **common)  # type: ignore[arg-type]


def metric_average(spec: Mapping[str, Any]) -> str | None:
    """How a job averages its metric over several classes or labels (``"macro"``,
    ``"weighted"``, ``"micro"``: :mod:`metro.multiclass`), or None for a binary job."""
    metric = spec.get("metric")
    average = metric.get("average") if isinstance(metric, Mapping) else None
    return None if average is None else str(average)


#: A stored spec whose search section lacks this key is trained per class: one written before
#: search.multiclass existed (every multi-class job then was), so that a job queued or resumed
#: across the upgrade keeps what it asked, and every spec since but a multinomial job's, which
#: leave the default out so that their hashes are as before the setting.
MULTICLASS_KEY = "multiclass"


def job_multiclass(spec: Mapping[str, Any]) -> str | None:
    """How an averaged multi-class job trains its classes: ``"multinomial"`` or
    ``"per_class"`` (``search.multiclass``, checked against the model's kind by
    :func:`metro.multiclass.resolve_multiclass`; a spec without it predates it: per_class);
    None for a binary or a multi-label job, and
    where the spec asks what no model can give (a network with ``"multinomial"``:
    :func:`averaged_errors` says so)."""
    from metro.multiclass import resolve_multiclass

    if metric_average(spec) is None or (spec.get("dataset") or {}).get("label_columns"):
        return None
    given_search, given_model = spec.get("search"), spec.get("model")
    search: Mapping[str, Any] = given_search if isinstance(given_search, Mapping) else {}
    model: Mapping[str, Any] = given_model if isinstance(given_model, Mapping) else {}
    chosen = search.get(MULTICLASS_KEY, "per_class")
    kind = str(model.get("kind", "linear")).lower()
    if chosen not in ("per_class", "multinomial"):  # no such setting: nothing to report
        return None
    try:
        return resolve_multiclass(str(chosen), kind)
    except ValueError:
        return None


def averaged_errors(spec: Mapping[str, Any]) -> list[SpecFieldError]:
    """What a normalized spec asks that its averaging cannot give: an averaged job takes a
    per-label preset, constraints only on multi-label data (each label's), no positive label
    and no binary baselines (it runs its own: :data:`AVERAGED_BASELINES`); a binary job takes no
    ``label_columns``."""
    from metro.averaging import AVERAGES, PER_LABEL_METRICS
    from metro.metrics import MetricSpec, canonical_preset
    from metro.multiclass import MICRO_CONSTRAINTS, check_argmax_metric

    dataset = spec.get("dataset") or {}
    average = metric_average(spec)
    averages = ", ".join(map(repr, AVERAGES))
    if average is None:
        binary = []
        if dataset.get("label_columns") is not None:
            binary.append(
                SpecFieldError(
                    ("dataset", "label_columns"),
                    f"label_columns (multi-label data) needs metric.average ({averages}): the "
                    "metric is averaged over the labels",
                )
            )
        if (spec.get("search") or {}).get(MULTICLASS_KEY) == "multinomial":
            binary.append(
                SpecFieldError(
                    ("search", "multiclass"),
                    f"multinomial trains a multi-class label (metric.average {averages}); a "
                    "binary job is one METRO search",
                )
            )
        return binary
    errors = []
    preset = (spec.get("metric") or {}).get("preset")
    if isinstance(preset, str):
        preset = canonical_preset(preset)
    if preset not in PER_LABEL_METRICS:
        errors.append(
            SpecFieldError(
                ("metric", "preset"),
                f"metric.average applies to the per-label presets {', '.join(PER_LABEL_METRICS)}"
                f"; got {preset!r}",
            )
        )
    if preset in PER_LABEL_METRICS and dataset.get("label_columns") is None:
        try:
            metric = build_metric(spec["metric"])
        except (ValueError, TypeError):
            metric = None  # the metric's own error is reported where it is built
        if isinstance(metric, MetricSpec):
            try:
                check_argmax_metric(metric)
            except ValueError as exc:
                errors.append(SpecFieldError(("metric", "preset"), str(exc)))
    chosen = (spec.get("search") or {}).get(MULTICLASS_KEY)
    if chosen == "multinomial":
        kind = str((spec.get("model") or {}).get("kind", "linear")).lower()
        if dataset.get("label_columns") is not None:
            errors.append(
                SpecFieldError(
                    ("search", "multiclass"),
                    "multinomial is for a multi-class label column; multi-label data "
                    "(dataset.label_columns) is trained one search per label: use per_class",
                )
            )
        elif kind != "linear":
            errors.append(
                SpecFieldError(
                    ("search", "multiclass"),
                    f"multinomial is a linear model (a multinomial logistic regression); a "
                    f"{kind} model trains a multi-class label per class: use per_class",
                )
            )
    if spec.get("constraints") and dataset.get("label_columns") is None:
        errors.append(
            SpecFieldError(
                ("constraints",),
                "constraints with metric.average apply to multi-label data (dataset."
                "label_columns: each label held to them on its own); a multi-class model decides "
                "by an argmax over the classes, which no per-class constraint survives",
            )
        )
    if spec.get("constraints") and dataset.get("label_columns") is not None and average == "micro":
        errors.append(SpecFieldError(("constraints",), MICRO_CONSTRAINTS))
    if dataset.get("positive_label") is not None:
        errors.append(
            SpecFieldError(
                ("dataset", "positive_label"),
                "positive_label does not apply with metric.average: every class (or label) is "
                "scored in turn",
            )
        )
    if spec.get("baselines"):
        errors.append(
            SpecFieldError(
                ("baselines",),
                "an averaged job runs its own baselines ("
                + ", ".join(AVERAGED_BASELINES)
                + "); leave baselines empty",
            )
        )
    return errors


#: The baselines every averaged job is scored against (metro.multiclass_baselines): one-vs-rest
#: logistic regression with one threshold per class tuned on the same folds, the plain
#: multinomial (multi-class) or per-label (multi-label) logistic regression, and, multi-class
#: only, that multinomial model with per-class offsets tuned for the average (the strongest
#: peer measured, docs/quality.md).
AVERAGED_BASELINES = ("ovr-threshold", "logistic", "logistic-tuned")

#: What each method of a result is called where people read it: the result's method_names,
#: ``metro result``'s columns, the dashboard's tables (which printed "erm" and "ERM").
METHOD_NAMES: dict[str, str] = {
    "metro": "METRO",
    "erm": "ERM",
    "koyejo1": "Koyejo et al. (1)",
    "koyejo2": "Koyejo et al. (2)",
    "parambath": "Parambath et al.",
    "ovr-threshold": "One-vs-rest, tuned thresholds",
    "logistic": "Logistic regression",
    "logistic-tuned": "Logistic, tuned offsets",
}
MULTICLASS_ONLY_BASELINES = ("logistic-tuned",)


def build_surrogate(surrogate: Mapping[str, Any]) -> Surrogate:
    from metro.surrogates import get_surrogate

    params = dict(surrogate)
    name = params.pop("name", "logistic")
    return get_surrogate(name, **params)


def build_search(search: Mapping[str, Any]) -> SearchConfig:
    from metro.search.config import SearchConfig

    return SearchConfig.from_dict(dict(search))


def build_model_spec(model: Mapping[str, Any]) -> ModelSpec:
    from metro.models import ModelSpec

    params = dict(model)
    for key in ("hidden", "channels"):  # JSON has lists; the dataclass holds tuples
        if isinstance(params.get(key), list):
            params[key] = tuple(params[key])
    return ModelSpec.from_dict(params)


def build_training_config(training: Mapping[str, Any]) -> TrainingConfig:
    from metro.trainer import TrainingConfig

    return TrainingConfig.from_dict(dict(training))


# A constraint's metric that depends on the class prior (balanced accuracy) is checked at a
# prior of one half when there are no labels to resolve it on (at submission).
_BALANCED_LABELS = (0, 1)


def build_constraints(
    constraints: Sequence[Mapping[str, Any]], y: Any = None
) -> tuple[Constraint, ...]:
    """The library's constraints from the spec's list (``{"metric": "recall", "at_least":
    0.9}``; see :mod:`metro.constraints`), each part checked in turn so that an error names its
    field (:class:`SpecFieldError`). Besides the library's own checks, a bound outside the range
    of its metric is refused: no classifier could meet it, or every one would. Prior-dependent
    metrics resolve against ``y`` (a balanced prior without it)."""
    import numpy as np

    from metro.constraints import SENSES, Constraint, constraint_metric
    from metro.metrics import PriorDependentMetric, UnknownMetricParameterError

    built = []
    for index, given in enumerate(constraints):

        def fail(*where: str, message: str, index: int = index) -> SpecFieldError:
            return SpecFieldError(("constraints", index, *where), message)

        if not isinstance(given, Mapping):
            raise fail(message="a constraint must be an object such as "
                       "{'metric': 'recall', 'at_least': 0.9}")  # fmt: skip
        unknown = sorted(set(given) - {"metric", "params", "confidence", *SENSES})
        if unknown:
            raise fail(
                unknown[0],
                message=f"unknown constraint field {unknown[0]!r}; a constraint takes metric, "
                "params, at_least or at_most, and confidence",
            )
        senses = [s for s in SENSES if given.get(s) is not None]
        if len(senses) != 1:
            raise fail(
                "at_most" if senses else "at_least",
                message="a constraint needs exactly one of at_least and at_most"
                + (", not both" if senses else ""),
            )
        sense = senses[0]
        if given.get("metric") is None:
            raise fail("metric", message="a constraint needs a metric: a preset name such as "
                       "'recall', or {'alpha': [...], 'beta': [...]}")  # fmt: skip
        try:
            metric = constraint_metric(given["metric"], given.get("params") or {})
        except UnknownMetricParameterError as exc:
            raise fail("params", exc.unknown[0], message=str(exc)) from None
        except (ValueError, TypeError) as exc:
            raise fail("metric", message=str(exc)) from None
        if isinstance(metric, PriorDependentMetric):
            metric = metric.resolve(np.asarray(_BALANCED_LABELS if y is None else y))
        bound = given[sense]
        if isinstance(bound, bool) or not isinstance(bound, int | float):
            raise fail(sense, message=f"{sense} must be a number, got {bound!r}")
        try:
            constraint = Constraint(metric=metric, sense=sense, bound=bound)
        except ValueError as exc:
            raise fail(sense, message=str(exc)) from None
        if given.get("confidence") is not None:
            try:
                constraint = Constraint(
                    metric=metric, sense=sense, bound=bound, confidence=given["confidence"]
                )
            except ValueError as exc:
                raise fail("confidence", message=str(exc)) from None
        built.append(constraint)
    return tuple(built)


def check_constrained_search(search: SearchConfig, constraints: Sequence[Constraint]) -> None:
    """The library's refusal of a search that cannot take constraints, naming the field."""
    from metro.search import check_constrainable

    if constraints:
        try:
            check_constrainable(search)
        except ValueError as exc:
            raise SpecFieldError(("search", "strategy"), str(exc)) from None


# -- what a job costs: parameters and work, bounded by the operator's settings ---------------


@dataclass(frozen=True)
class DataSize:
    """What is known of a job's data: its rows, the features of one example (flattened) and, for
    images, their channels; None where not known (a dataset a worker has yet to download)."""

    n_rows: int | None = None
    n_features: int | None = None
    channels: int | None = None
    # An averaged job's classes or labels, one search each; None where not known yet.
    targets: int | None = None
    # The shape of one example where it is known: a table's rows are (features,), a built-in's
    # its own; None for an NPZ upload (its channels are not recorded) or unread data.
    example_shape: tuple[int, ...] | None = None

    @classmethod
    def of_examples(cls, n_rows: int, example_shape: tuple[int, ...]) -> DataSize:
        """The size of loaded data: ``n_rows`` examples of ``example_shape``."""
        features = 1
        for side in example_shape:
            features *= int(side)
        channels = int(example_shape[0]) if len(example_shape) == 3 else None
        shape = tuple(int(side) for side in example_shape)
        return cls(n_rows=int(n_rows), n_features=features, channels=channels, example_shape=shape)


@dataclass(frozen=True)
class JobWork:
    """What a job trains: ``models`` models (at most: see
    :func:`metro.experiment.models_per_repeat`) in each of ``repeats`` repeats, each of
    ``parameters`` parameters, each trained for ``passes`` passes (``pass_field``: SGD's epochs or
    L-BFGS's max_iter) over at most ``rows`` rows (the dataset's: every split is a part of it).
    Its work is their product: parameters x rows x passes x models x repeats, a measure of the
    arithmetic of the job (one pass of one model over one row costs about a few operations per
    parameter). ``parameters_exact`` is False when the data's columns are not known (one column
    is assumed: a lower bound); ``rows`` and ``models`` are None when its rows are not known."""

    model_kind: str
    parameters: int
    parameters_exact: bool
    rows: int | None
    passes: int
    pass_field: str
    models: int | None
    repeats: int
    # An averaged job: one search per class or label (1 where not known yet: a lower bound).
    targets: int = 1

    @property
    def work(self) -> int | None:
        if self.rows is None or self.models is None:
            return None
        return self.parameters * self.rows * self.passes * self.models * self.repeats * self.targets


class JobLimitError(SpecFieldError):
    """A job past one of the operator's limits (core.config.Settings), with the path of the spec
    field at fault (empty: the job as a whole)."""


def estimate_work(spec: Mapping[str, Any], objects: JobObjects, data: DataSize) -> JobWork:
    """The :class:`JobWork` of a normalized spec whose objects are ``objects``, on ``data``."""
    from metro.experiment import models_per_repeat

    model = objects.model
    n_inputs = data.channels if model.kind == "cnn3" else data.n_features
    optimizer = objects.training.resolve_optimizer(model)
    pass_field = "max_iter" if optimizer == "lbfgs" else "epochs"
    models = None
    if data.n_rows is not None:
        models = models_per_repeat(
            data.n_rows,
            search=objects.search,
            baselines=tuple(spec.get("baselines") or ()),
            constrained=bool(objects.constraints),
        )
    return JobWork(
        model_kind=model.kind,
        parameters=model.n_parameters(n_inputs),
        parameters_exact=n_inputs is not None,
        rows=data.n_rows,
        passes=int(getattr(objects.training, pass_field)),
        pass_field=pass_field,
        models=models,
        repeats=int(spec.get("repeats", 1)),
        targets=data.targets or 1,
    )


# Where a model's parameters are set in a spec, and what to do about too many.
_PARAMETER_FIELDS: dict[str, tuple[tuple[str, ...], str]] = {
    "linear": (("model",), "a linear model has one per feature of the data, plus its bias"),
    "mlp": (("model", "hidden"), "use fewer or narrower hidden layers"),
    "cnn3": (("model", "channels"), "use fewer channels"),
}


def budget_errors(
    work: JobWork, *, max_model_parameters: int, max_job_work: float
) -> list[JobLimitError]:
    """The limits ``work`` is past, each naming the spec's field and the setting."""
    errors = []
    if work.parameters > max_model_parameters:
        path, hint = _PARAMETER_FIELDS.get(work.model_kind, _PARAMETER_FIELDS["linear"])
        at_least = "" if work.parameters_exact else "at least "
        errors.append(
            JobLimitError(
                path,
                f"the model has {at_least}{work.parameters:,} parameters, more than this "
                f"server's limit of {max_model_parameters:,} (max_model_parameters): {hint}",
            )
        )
    total = work.work
    if total is not None and total > max_job_work:
        assert work.rows is not None and work.models is not None
        errors.append(
            JobLimitError(
                (),
                f"the job's work, {total:.3g} = {work.parameters:,} parameters x "
                f"{work.rows:,} rows x {work.passes:,} {work.pass_field} x {work.models:,} "
                f"models per repeat x {work.repeats} repeats"
                + (f" x {work.targets} classes or labels" if work.targets > 1 else "")
                + ", is more than this server's limit "
                f"of {max_job_work:.3g} (max_job_work): lower training.{work.pass_field}, "
                "search.n_lambdas (or max_steps), search.cv, baselines or repeats"
                + (", or average over fewer classes or labels" if work.targets > 1 else "")
                + ", or use a smaller model",
            )
        )
    return errors


def asks_for_gpu(spec: Mapping[str, Any]) -> bool:
    """Whether a job's training asks for a CUDA device (it then runs on the gpu queue)."""
    return str((spec.get("training") or {}).get("device", "auto")).startswith("cuda")


# Preset parameters a spec keeps even at their default: the API asks for them (an f_beta
# without its beta would be F1 silently).
_KEPT_PARAMETERS = {("f_beta", "beta")}


def _without_defaults(
    owner: str, params: Mapping[str, Any], defaults: Mapping[str, Any]
) -> dict[str, Any]:
    def default(key: str, value: Any) -> bool:
        if (owner, key) in _KEPT_PARAMETERS or key not in defaults:
            return False
        wanted = defaults[key]
        numbers = (int, float)
        if isinstance(value, bool) or isinstance(wanted, bool):
            return value is wanted
        return isinstance(value, numbers) and isinstance(wanted, numbers) and value == wanted

    return {key: value for key, value in params.items() if not default(key, value)}


def _defaults_of(options: Callable[[str], Mapping[str, tuple[Any, Any]]], name: str) -> Any:
    """Each parameter's default of the preset or surrogate ``name`` (``options``: the library's
    :func:`~metro.metrics.preset_options` or :func:`~metro.surrogates.surrogate_options`), or
    None for a name this version does not know (its section is then kept as given)."""
    try:
        return {key: default for key, (_, default) in options(name).items()}
    except ValueError:
        return None


def canonical_metric(metric: Mapping[str, Any]) -> dict[str, Any]:
    """A metric section as stored: a preset by its canonical name (an alias read as its
    preset, in lower case), without the parameters it gives at their defaults, so that spelling
    out a default or an alias makes the same job (and the same idempotency hash)."""
    from metro.metrics import canonical_preset, preset_options

    out = dict(metric)
    if not isinstance(out.get("preset"), str):
        return out
    name = canonical_preset(out.pop("preset"))
    defaults = _defaults_of(preset_options, name)
    if defaults is None:
        return {"preset": name, **out}
    kept = {"average"} & set(out)
    params = _without_defaults(name, {k: v for k, v in out.items() if k not in kept}, defaults)
    return {"preset": name, **params, **{k: out[k] for k in kept}}


def canonical_surrogate(surrogate: Mapping[str, Any]) -> dict[str, Any]:
    """A surrogate section as stored: its name and the parameters not at their defaults."""
    from metro.surrogates import surrogate_options

    out = dict(surrogate)
    name = out.pop("name", None)
    defaults = _defaults_of(surrogate_options, name) if isinstance(name, str) else None
    if defaults is None:
        return dict(surrogate)
    return {"name": name, **_without_defaults(name, out, defaults)}


def canonical_constraint(constraint: Mapping[str, Any]) -> dict[str, Any]:
    """A constraint as stored: a preset's canonical name, its params without their defaults."""
    from metro.metrics import canonical_preset, preset_options

    out = dict(constraint)
    if not isinstance(out.get("metric"), str):
        return out
    name = canonical_preset(out["metric"])
    out["metric"] = name
    defaults = _defaults_of(preset_options, name)
    if defaults is not None:
        out["params"] = _without_defaults(name, out.get("params") or {}, defaults)
    return out


def spec_hash(spec: Mapping[str, Any]) -> str:
    """A digest of the normalized spec: two submissions that mean the same job hash the same,
    whether or not they spelled out the defaults."""
    canonical = json.dumps(spec, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def current_spec_hash(spec: Mapping[str, Any]) -> str:
    """The :func:`spec_hash` of a stored spec in the form this version normalizes it to, so that
    a submission retried across an upgrade still finds its job: a model section stored when
    every kind carried ``hidden`` and ``channels`` hashes as the sizes its kind uses (the form
    of ``ModelSpec.to_dict``), and a metric, surrogate or constraint stored with a default
    spelled out or an alias as their canonical forms. The stored spec itself is left as it
    is."""
    model = spec.get("model")
    # A model this version does not build (TypeError, ValueError) is hashed as stored.
    if isinstance(model, Mapping):
        with contextlib.suppress(TypeError, ValueError):
            spec = {**spec, "model": as_json(build_model_spec(model))}
    # Stored before defaults and aliases were left out of the metric, surrogate and constraints.
    if isinstance(spec.get("metric"), Mapping):
        spec = {**spec, "metric": canonical_metric(spec["metric"])}
    if isinstance(spec.get("surrogate"), Mapping):
        spec = {**spec, "surrogate": canonical_surrogate(spec["surrogate"])}
    constraints = spec.get("constraints")
    if isinstance(constraints, list) and all(isinstance(c, Mapping) for c in constraints):
        spec = {**spec, "constraints": [canonical_constraint(c) for c in constraints]}
    return spec_hash(spec)


def as_json(obj: Any) -> dict[str, Any]:
    if hasattr(obj, "to_dict"):
        data = obj.to_dict()
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        data = dataclasses.asdict(obj)
    else:  # pragma: no cover - every metro config is one of the above
        raise TypeError(f"cannot serialize {type(obj).__name__}")
    as_plain: dict[str, Any] = json.loads(json.dumps(data))  # tuples to lists, and proof it is JSON
    return as_plain
