from typing import Literal

ModelFormat = Literal["onnx", "safetensors"]

MODEL_FORMAT_VALUES: set[ModelFormat] = {
    "onnx",
    "safetensors",
}


def check_model_format(value: str) -> ModelFormat:
    if value in MODEL_FORMAT_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {sorted(MODEL_FORMAT_VALUES)!r}")
