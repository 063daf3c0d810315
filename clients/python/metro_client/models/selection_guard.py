from typing import Literal

SelectionGuard = Literal["fallback", "off"]

SELECTION_GUARD_VALUES: set[SelectionGuard] = {
    "fallback",
    "off",
}


def check_selection_guard(value: str) -> SelectionGuard:
    if value in SELECTION_GUARD_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {sorted(SELECTION_GUARD_VALUES)!r}")
