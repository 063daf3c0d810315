from typing import Literal

SearchSpecRefineScale = Literal["both", "free", "held"]

SEARCH_SPEC_REFINE_SCALE_VALUES: set[SearchSpecRefineScale] = {
    "both",
    "free",
    "held",
}


def check_search_spec_refine_scale(value: str) -> SearchSpecRefineScale:
    if value in SEARCH_SPEC_REFINE_SCALE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {sorted(SEARCH_SPEC_REFINE_SCALE_VALUES)!r}")
