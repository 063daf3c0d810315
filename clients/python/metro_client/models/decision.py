from typing import Literal

Decision = Literal["argmax", "per_label"]

DECISION_VALUES: set[Decision] = {
    "argmax",
    "per_label",
}


def check_decision(value: str) -> Decision:
    if value in DECISION_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {sorted(DECISION_VALUES)!r}")
