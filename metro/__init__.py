"""METRO: train binary classifiers that optimize the metric you report.

A pure library (numpy and torch): metric specifications, cost tables, surrogate losses, models, the
K-at-once trainer, lambda searches, baselines, data loading and a scikit-learn estimator.

The names below are imported on first use (PEP 562), not with the package: a process that needs
only ``metro.serialization`` or ``metro.metrics`` (the API validating a job, the CLI) does not pay
for importing PyTorch and scikit-learn, which ``metro.estimator`` needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from metro.estimator import MetroClassifier
    from metro.metrics import (
        MetricSpec,
        PriorDependentMetric,
        accuracy,
        balanced_accuracy,
        f1,
        f_beta,
        get_metric,
        jaccard,
        precision,
        recall,
        weighted_accuracy,
    )
    from metro.models import ModelSpec
    from metro.saved import SavedClassifier, load_classifier
    from metro.search import MetroFitWarning, SearchConfig
    from metro.surrogates import SURROGATES, Surrogate, get_surrogate
    from metro.trainer import TrainingConfig

__version__ = "0.1.0"

# Each public name and the module that defines it.
_HOMES = {
    "MetroClassifier": "metro.estimator",
    "MetricSpec": "metro.metrics",
    "PriorDependentMetric": "metro.metrics",
    "accuracy": "metro.metrics",
    "balanced_accuracy": "metro.metrics",
    "f1": "metro.metrics",
    "f_beta": "metro.metrics",
    "get_metric": "metro.metrics",
    "jaccard": "metro.metrics",
    "precision": "metro.metrics",
    "recall": "metro.metrics",
    "weighted_accuracy": "metro.metrics",
    "ModelSpec": "metro.models",
    "SavedClassifier": "metro.saved",
    "load_classifier": "metro.saved",
    "MetroFitWarning": "metro.search",
    "SearchConfig": "metro.search",
    "SURROGATES": "metro.surrogates",
    "Surrogate": "metro.surrogates",
    "get_surrogate": "metro.surrogates",
    "TrainingConfig": "metro.trainer",
}

__all__ = [
    "SURROGATES",
    "MetricSpec",
    "MetroClassifier",
    "MetroFitWarning",
    "ModelSpec",
    "PriorDependentMetric",
    "SavedClassifier",
    "SearchConfig",
    "Surrogate",
    "TrainingConfig",
    "accuracy",
    "balanced_accuracy",
    "f1",
    "f_beta",
    "get_metric",
    "get_surrogate",
    "jaccard",
    "load_classifier",
    "precision",
    "recall",
    "weighted_accuracy",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'metro' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))
