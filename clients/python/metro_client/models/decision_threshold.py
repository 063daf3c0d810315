from typing import Literal

DecisionThreshold = Literal["tuned", "zero"]

DECISION_THRESHOLD_VALUES: set[DecisionThreshold] = {
    "tuned",
    "zero",
}


def check_decision_threshold(value: str) -> DecisionThreshold:
    if value in DECISION_THRESHOLD_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {sorted(DECISION_THRESHOLD_VALUES)!r}")
