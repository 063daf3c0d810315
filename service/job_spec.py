"""Validate and normalize a job submission with the ``metro`` library itself.

Each section of the request is handed to the library object that will run it (``get_metric``,
``get_surrogate``, ``SearchConfig``, ``ModelSpec``, ``TrainingConfig``); a ``ValueError`` or
``TypeError`` from the library becomes an :class:`InvalidInputError` naming that section (and the
field, when the message starts with one). Workers rebuild the same objects from the stored,
normalized spec with the ``build_*`` functions below, so a spec accepted here is one the worker
can run, and defaults are recorded at submission rather than whatever the library says later.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from service.errors import FieldError, InvalidInputError
from service.schemas.jobs import JobCreate

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


# -- builders: the single place where spec dictionaries become metro objects -------------------


def build_metric(metric: Mapping[str, Any]) -> Any:
    """A ``metro`` metric from the metric section (preset, coefficient or confusion form)."""
    from metro.metrics import MetricSpec, get_metric

    fields = dict(metric)
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
    return MetricSpec(alpha=fields.get("alpha"), beta=fields.get("beta"), **common)


def build_surrogate(surrogate: Mapping[str, Any]) -> Any:
    from metro.surrogates import get_surrogate

    params = dict(surrogate)
    name = params.pop("name", "logistic")
    return get_surrogate(name, **params)


def build_search(search: Mapping[str, Any]) -> Any:
    from metro.search.config import SearchConfig

    return SearchConfig.from_dict(dict(search))


def build_model_spec(model: Mapping[str, Any]) -> Any:
    from metro.models import ModelSpec

    params = dict(model)
    for key in ("hidden", "channels"):  # JSON has lists; the dataclass holds tuples
        if isinstance(params.get(key), list):
            params[key] = tuple(params[key])
    return ModelSpec.from_dict(params)


def build_training_config(training: Mapping[str, Any]) -> Any:
    from metro.trainer import TrainingConfig

    return TrainingConfig.from_dict(dict(training))


# -- normalization ---------------------------------------------------------------------------


def normalize_job_spec(job: JobCreate) -> dict[str, Any]:
    """The spec as the worker will run it, every default filled in, or InvalidInputError listing
    every section the library rejected (not just the first)."""
    from metro.metrics import display_name

    errors: list[FieldError] = []

    def section(
        name: str, given: Mapping[str, Any], build: Callable[[Mapping[str, Any]], Any]
    ) -> Any:
        from metro.metrics import UnknownMetricParameterError

        try:
            return build(given)
        except UnknownMetricParameterError as exc:  # one error per field the preset lacks
            errors.extend(
                FieldError(loc=("body", name, field), msg=str(exc), type="extra_forbidden")
                for field in exc.unknown
            )
            return None
        except (ValueError, TypeError) as exc:
            errors.append(FieldError(loc=_loc(name, given, str(exc)), msg=_clean(exc)))
            return None

    metric_in = job.metric.model_dump(exclude_unset=False)
    metric = section("metric", metric_in, build_metric)
    surrogate = section("surrogate", job.surrogate.model_dump(), build_surrogate)
    search = section("search", job.search.model_dump(exclude_unset=True), build_search)
    model = section("model", job.model.model_dump(exclude_unset=True), build_model_spec)
    training = section(
        "training", job.training.model_dump(exclude_unset=True), build_training_config
    )
    if len(set(job.baselines)) != len(job.baselines):
        errors.append(FieldError(("body", "baselines"), "baselines must not repeat a method"))
    if errors:
        raise InvalidInputError(INVALID_JOB, errors)

    return {
        "metric": _normalized_metric(metric_in),
        # What the metric resolved to, for display; workers rebuild it from "metric".
        "metric_info": {
            "name": metric.name,
            "display_name": display_name(metric.name),
            "greater_is_better": bool(metric.greater_is_better),
        },
        "dataset": job.dataset.model_dump(),
        "surrogate": surrogate.to_dict(),
        "model": _as_json(model),
        "search": _as_json(search),
        "training": _as_json(training),
        "repeats": job.repeats,
        "baselines": list(job.baselines),
    }


def spec_hash(spec: Mapping[str, Any]) -> str:
    """A digest of the normalized spec: two submissions that mean the same job hash the same,
    whether or not they spelled out the defaults."""
    canonical = json.dumps(spec, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _normalized_metric(given: dict[str, Any]) -> dict[str, Any]:
    out = dict(given)
    if "preset" in out:
        out["preset"] = str(out["preset"]).lower()
    return out


def _as_json(obj: Any) -> dict[str, Any]:
    if hasattr(obj, "to_dict"):
        data = obj.to_dict()
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        data = dataclasses.asdict(obj)
    else:  # pragma: no cover - every metro config is one of the above
        raise TypeError(f"cannot serialize {type(obj).__name__}")
    return json.loads(json.dumps(data))  # tuples to lists, and proof it is JSON


def _loc(section: str, given: Mapping[str, Any], message: str) -> tuple[str | int, ...]:
    """Point at the field when the library's message names one of the keys the client sent."""
    named = [key for key in given if re.search(rf"(?<![\w.]){re.escape(key)}(?![\w])", message)]
    if len(named) == 1:
        return ("body", section, named[0])
    return ("body", section)


def _clean(exc: Exception) -> str:
    text = str(exc).strip() or type(exc).__name__
    # A TypeError from a dataclass constructor names the class' __init__: say it plainly.
    text = re.sub(r"^\w+\.__init__\(\) got an unexpected keyword argument ", "unknown field ", text)
    return text
