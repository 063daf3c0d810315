from typing import Literal

MetricPreset = Literal[
    "accuracy",
    "balanced_accuracy",
    "f1",
    "f_beta",
    "false_positive_rate",
    "jaccard",
    "precision",
    "recall",
    "true_negative_rate",
    "weighted_accuracy",
]

METRIC_PRESET_VALUES: set[MetricPreset] = {
    "accuracy",
    "balanced_accuracy",
    "f1",
    "f_beta",
    "false_positive_rate",
    "jaccard",
    "precision",
    "recall",
    "true_negative_rate",
    "weighted_accuracy",
}


def check_metric_preset(value: str) -> MetricPreset:
    if value in METRIC_PRESET_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {METRIC_PRESET_VALUES!r}")
