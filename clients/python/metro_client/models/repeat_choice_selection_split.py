from typing import Literal

RepeatChoiceSelectionSplit = Literal["cross-validation", "train", "validation"]

REPEAT_CHOICE_SELECTION_SPLIT_VALUES: set[RepeatChoiceSelectionSplit] = {
    "cross-validation",
    "train",
    "validation",
}


def check_repeat_choice_selection_split(value: str) -> RepeatChoiceSelectionSplit:
    if value in REPEAT_CHOICE_SELECTION_SPLIT_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {REPEAT_CHOICE_SELECTION_SPLIT_VALUES!r}")
