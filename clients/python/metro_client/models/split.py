from typing import Literal

Split = Literal["test", "validation"]

SPLIT_VALUES: set[Split] = {
    "test",
    "validation",
}


def check_split(value: str) -> Split:
    if value in SPLIT_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {sorted(SPLIT_VALUES)!r}")
