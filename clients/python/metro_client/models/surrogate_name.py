from typing import Literal

SurrogateName = Literal["exponential", "hinge", "logistic", "quadratic", "rho_margin", "sigmoid"]

SURROGATE_NAME_VALUES: set[SurrogateName] = {
    "exponential",
    "hinge",
    "logistic",
    "quadratic",
    "rho_margin",
    "sigmoid",
}


def check_surrogate_name(value: str) -> SurrogateName:
    if value in SURROGATE_NAME_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {sorted(SURROGATE_NAME_VALUES)!r}")
