from typing import Literal

RefineMode = Literal["auto", "off"]

REFINE_MODE_VALUES: set[RefineMode] = {
    "auto",
    "off",
}


def check_refine_mode(value: str) -> RefineMode:
    if value in REFINE_MODE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {sorted(REFINE_MODE_VALUES)!r}")
