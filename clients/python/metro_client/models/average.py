from typing import Literal

Average = Literal["macro", "micro", "weighted"]

AVERAGE_VALUES: set[Average] = {
    "macro",
    "micro",
    "weighted",
}


def check_average(value: str) -> Average:
    if value in AVERAGE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {sorted(AVERAGE_VALUES)!r}")
