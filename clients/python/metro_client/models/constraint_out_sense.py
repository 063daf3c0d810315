from typing import Literal

ConstraintOutSense = Literal["at_least", "at_most"]

CONSTRAINT_OUT_SENSE_VALUES: set[ConstraintOutSense] = {
    "at_least",
    "at_most",
}


def check_constraint_out_sense(value: str) -> ConstraintOutSense:
    if value in CONSTRAINT_OUT_SENSE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {CONSTRAINT_OUT_SENSE_VALUES!r}")
