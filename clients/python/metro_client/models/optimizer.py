from typing import Literal

Optimizer = Literal["auto", "lbfgs", "sgd"]

OPTIMIZER_VALUES: set[Optimizer] = {
    "auto",
    "lbfgs",
    "sgd",
}


def check_optimizer(value: str) -> Optimizer:
    if value in OPTIMIZER_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {sorted(OPTIMIZER_VALUES)!r}")
