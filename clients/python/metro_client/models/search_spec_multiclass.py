from typing import Literal

SearchSpecMulticlass = Literal["auto", "multinomial", "per_class"]

SEARCH_SPEC_MULTICLASS_VALUES: set[SearchSpecMulticlass] = {
    "auto",
    "multinomial",
    "per_class",
}


def check_search_spec_multiclass(value: str) -> SearchSpecMulticlass:
    if value in SEARCH_SPEC_MULTICLASS_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {SEARCH_SPEC_MULTICLASS_VALUES!r}")
