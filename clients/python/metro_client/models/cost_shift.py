from typing import Literal

CostShift = Literal["auto", "minimal", "paper"]

COST_SHIFT_VALUES: set[CostShift] = {
    "auto",
    "minimal",
    "paper",
}


def check_cost_shift(value: str) -> CostShift:
    if value in COST_SHIFT_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {sorted(COST_SHIFT_VALUES)!r}")
