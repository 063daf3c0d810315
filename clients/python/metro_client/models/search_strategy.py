from typing import Literal

SearchStrategy = Literal["bisection", "dinkelbach", "grid"]

SEARCH_STRATEGY_VALUES: set[SearchStrategy] = {
    "bisection",
    "dinkelbach",
    "grid",
}


def check_search_strategy(value: str) -> SearchStrategy:
    if value in SEARCH_STRATEGY_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {sorted(SEARCH_STRATEGY_VALUES)!r}")
