from typing import Literal

ModelKind = Literal["cnn3", "linear", "mlp"]

MODEL_KIND_VALUES: set[ModelKind] = {
    "cnn3",
    "linear",
    "mlp",
}


def check_model_kind(value: str) -> ModelKind:
    if value in MODEL_KIND_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {MODEL_KIND_VALUES!r}")
