from typing import Literal

SelectionSplit = Literal["cross-validation", "train", "validation"]

SELECTION_SPLIT_VALUES: set[SelectionSplit] = {
    "cross-validation",
    "train",
    "validation",
}


def check_selection_split(value: str) -> SelectionSplit:
    if value in SELECTION_SPLIT_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {sorted(SELECTION_SPLIT_VALUES)!r}")
