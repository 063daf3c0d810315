from typing import Literal

SelectionSummarySplit = Literal["cross-validation", "train", "validation"]

SELECTION_SUMMARY_SPLIT_VALUES: set[SelectionSummarySplit] = {
    "cross-validation",
    "train",
    "validation",
}


def check_selection_summary_split(value: str) -> SelectionSummarySplit:
    if value in SELECTION_SUMMARY_SPLIT_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {SELECTION_SUMMARY_SPLIT_VALUES!r}")
