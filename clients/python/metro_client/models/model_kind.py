from typing import Literal, cast

ModelKind = Literal["cnn3", "linear", "mlp"]

MODEL_KIND_VALUES: set[ModelKind] = {
    "cnn3",
    "linear",
    "mlp",
}


def check_model_kind(value: str) -> ModelKind:
    if value in MODEL_KIND_VALUES:
        return value
    # The server takes these names in any case: the value it stores.
    name = value.lower() if isinstance(value, str) else value
    if name in MODEL_KIND_VALUES:
        return cast(ModelKind, name)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {sorted(MODEL_KIND_VALUES)!r}")
