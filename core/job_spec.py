"""A job's spec, as stored: the ``build_*`` functions turn its sections into the ``metro``
objects that run it, and :func:`spec_hash` tells two submissions of one job apart from two jobs.

The API validates a submission by building these same objects (``service.job_spec``), so a spec
accepted there is one the worker can run, and defaults are recorded at submission rather than
whatever the library says later.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the builders import metro lazily: torch takes seconds to import
    from metro.metrics import Metric
    from metro.models import ModelSpec
    from metro.search.config import SearchConfig
    from metro.surrogates import Surrogate
    from metro.trainer import TrainingConfig


@dataclass(frozen=True)
class JobObjects:
    """The ``metro`` objects a stored spec describes: what a worker runs."""

    metric: Metric
    surrogate: Surrogate
    model: ModelSpec
    search: SearchConfig
    training: TrainingConfig


def build_job_objects(spec: Mapping[str, Any]) -> JobObjects:
    """Every section of a normalized spec built; KeyError for a missing section, ValueError or
    TypeError from the library for a wrong one."""
    return JobObjects(
        metric=build_metric(spec["metric"]),
        surrogate=build_surrogate(spec["surrogate"]),
        model=build_model_spec(spec["model"]),
        search=build_search(spec["search"]),
        training=build_training_config(spec["training"]),
    )


# -- builders: the single place where spec dictionaries become metro objects -------------------


def build_metric(metric: Mapping[str, Any]) -> Metric:
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
    # What the client sent, None included: the library's own check names a missing vector.
    alpha, beta = fields.get("alpha"), fields.get("beta")
    return MetricSpec(alpha=alpha, beta=beta, **common)  # type: ignore[arg-type]


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


def spec_hash(spec: Mapping[str, Any]) -> str:
    """A digest of the normalized spec: two submissions that mean the same job hash the same,
    whether or not they spelled out the defaults."""
    canonical = json.dumps(spec, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def as_json(obj: Any) -> dict[str, Any]:
    if hasattr(obj, "to_dict"):
        data = obj.to_dict()
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        data = dataclasses.asdict(obj)
    else:  # pragma: no cover - every metro config is one of the above
        raise TypeError(f"cannot serialize {type(obj).__name__}")
    as_plain: dict[str, Any] = json.loads(json.dumps(data))  # tuples to lists, and proof it is JSON
    return as_plain
