from typing import Literal, cast

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

# Other names the server reads as one of the values.
METRIC_PRESET_ALIASES: dict[str, MetricPreset] = {
    "fbeta": "f_beta",
    "specificity": "true_negative_rate",
}


def check_metric_preset(value: str) -> MetricPreset:
    if value in METRIC_PRESET_VALUES:
        return value
    # The server takes these names in any case and their aliases: the value it stores.
    name = value.lower() if isinstance(value, str) else value
    if name in METRIC_PRESET_VALUES:
        return cast(MetricPreset, name)
    if name in METRIC_PRESET_ALIASES:
        return METRIC_PRESET_ALIASES[name]
    raise TypeError(f"Unexpected value {value!r}. Expected one of {sorted(METRIC_PRESET_VALUES)!r}")
