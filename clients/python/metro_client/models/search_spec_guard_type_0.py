from typing import Literal

SearchSpecGuardType0 = Literal["fallback", "off"]

SEARCH_SPEC_GUARD_TYPE_0_VALUES: set[SearchSpecGuardType0] = {
    "fallback",
    "off",
}


def check_search_spec_guard_type_0(value: str) -> SearchSpecGuardType0:
    if value in SEARCH_SPEC_GUARD_TYPE_0_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {SEARCH_SPEC_GUARD_TYPE_0_VALUES!r}")
