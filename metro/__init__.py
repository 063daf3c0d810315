"""METRO: train binary classifiers that optimize the metric you report.

A pure library (numpy and torch): metric specifications, cost tables, surrogate losses, models, the
K-at-once trainer, lambda searches, baselines, data loading and a scikit-learn estimator.
"""

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
