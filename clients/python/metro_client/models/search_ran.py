from typing import Literal

SearchRan = Literal["bisection", "constrained-grid", "dinkelbach", "exact", "grid"]

SEARCH_RAN_VALUES: set[SearchRan] = {
    "bisection",
    "constrained-grid",
    "dinkelbach",
    "exact",
    "grid",
}


def check_search_ran(value: str) -> SearchRan:
    if value in SEARCH_RAN_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {sorted(SEARCH_RAN_VALUES)!r}")
