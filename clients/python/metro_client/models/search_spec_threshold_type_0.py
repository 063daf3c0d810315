from typing import Literal

SearchSpecThresholdType0 = Literal["tuned", "zero"]

SEARCH_SPEC_THRESHOLD_TYPE_0_VALUES: set[SearchSpecThresholdType0] = {
    "tuned",
    "zero",
}


def check_search_spec_threshold_type_0(value: str) -> SearchSpecThresholdType0:
    if value in SEARCH_SPEC_THRESHOLD_TYPE_0_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {SEARCH_SPEC_THRESHOLD_TYPE_0_VALUES!r}")
