from typing import Literal

ConstraintPreset = Literal[
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

CONSTRAINT_PRESET_VALUES: set[ConstraintPreset] = {
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


def check_constraint_preset(value: str) -> ConstraintPreset:
    if value in CONSTRAINT_PRESET_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {CONSTRAINT_PRESET_VALUES!r}")
