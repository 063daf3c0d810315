from typing import Literal

StepSelection = Literal["best", "last"]

STEP_SELECTION_VALUES: set[StepSelection] = {
    "best",
    "last",
}


def check_step_selection(value: str) -> StepSelection:
    if value in STEP_SELECTION_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {sorted(STEP_SELECTION_VALUES)!r}")
