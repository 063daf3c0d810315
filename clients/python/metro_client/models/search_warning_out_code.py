from typing import Literal

SearchWarningOutCode = Literal["few_true_positives", "lambda_at_grid_edge", "predicts_one_class"]

SEARCH_WARNING_OUT_CODE_VALUES: set[SearchWarningOutCode] = {
    "few_true_positives",
    "lambda_at_grid_edge",
    "predicts_one_class",
}


def check_search_warning_out_code(value: str) -> SearchWarningOutCode:
    if value in SEARCH_WARNING_OUT_CODE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {SEARCH_WARNING_OUT_CODE_VALUES!r}")
