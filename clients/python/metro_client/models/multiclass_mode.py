from typing import Literal

MulticlassMode = Literal["multinomial", "per_class"]

MULTICLASS_MODE_VALUES: set[MulticlassMode] = {
    "multinomial",
    "per_class",
}


def check_multiclass_mode(value: str) -> MulticlassMode:
    if value in MULTICLASS_MODE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {sorted(MULTICLASS_MODE_VALUES)!r}")
