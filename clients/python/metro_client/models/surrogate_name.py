from typing import Literal, cast

SurrogateName = Literal["exponential", "hinge", "logistic", "quadratic", "rho_margin", "sigmoid"]

SURROGATE_NAME_VALUES: set[SurrogateName] = {
    "exponential",
    "hinge",
    "logistic",
    "quadratic",
    "rho_margin",
    "sigmoid",
}

# Other names the server reads as one of the values.
SURROGATE_NAME_ALIASES: dict[str, SurrogateName] = {
    "rho-margin": "rho_margin",
}


def check_surrogate_name(value: str) -> SurrogateName:
    if value in SURROGATE_NAME_VALUES:
        return value
    # The server takes these names in any case and their aliases: the value it stores.
    name = value.lower() if isinstance(value, str) else value
    if name in SURROGATE_NAME_VALUES:
        return cast(SurrogateName, name)
    if name in SURROGATE_NAME_ALIASES:
        return SURROGATE_NAME_ALIASES[name]
    raise TypeError(f"Unexpected value {value!r}. Expected one of {sorted(SURROGATE_NAME_VALUES)!r}")
