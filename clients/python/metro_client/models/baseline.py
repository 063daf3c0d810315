from typing import Literal

Baseline = Literal["erm", "koyejo1", "koyejo2", "parambath"]

BASELINE_VALUES: set[Baseline] = {
    "erm",
    "koyejo1",
    "koyejo2",
    "parambath",
}


def check_baseline(value: str) -> Baseline:
    if value in BASELINE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {sorted(BASELINE_VALUES)!r}")
