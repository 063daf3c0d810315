from typing import Literal, cast

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

# Other names the server reads as one of the values.
CONSTRAINT_PRESET_ALIASES: dict[str, ConstraintPreset] = {
    "fbeta": "f_beta",
    "specificity": "true_negative_rate",
}


def check_constraint_preset(value: str) -> ConstraintPreset:
    if value in CONSTRAINT_PRESET_VALUES:
        return value
    # The server takes these names in any case and their aliases: the value it stores.
    name = value.lower() if isinstance(value, str) else value
    if name in CONSTRAINT_PRESET_VALUES:
        return cast(ConstraintPreset, name)
    if name in CONSTRAINT_PRESET_ALIASES:
        return CONSTRAINT_PRESET_ALIASES[name]
    raise TypeError(f"Unexpected value {value!r}. Expected one of {sorted(CONSTRAINT_PRESET_VALUES)!r}")
