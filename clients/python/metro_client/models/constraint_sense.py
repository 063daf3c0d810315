from typing import Literal

ConstraintSense = Literal["at_least", "at_most"]

CONSTRAINT_SENSE_VALUES: set[ConstraintSense] = {
    "at_least",
    "at_most",
}


def check_constraint_sense(value: str) -> ConstraintSense:
    if value in CONSTRAINT_SENSE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {sorted(CONSTRAINT_SENSE_VALUES)!r}")
