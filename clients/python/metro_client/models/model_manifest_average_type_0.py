from typing import Literal

ModelManifestAverageType0 = Literal["macro", "weighted"]

MODEL_MANIFEST_AVERAGE_TYPE_0_VALUES: set[ModelManifestAverageType0] = {
    "macro",
    "weighted",
}


def check_model_manifest_average_type_0(value: str) -> ModelManifestAverageType0:
    if value in MODEL_MANIFEST_AVERAGE_TYPE_0_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {MODEL_MANIFEST_AVERAGE_TYPE_0_VALUES!r}")
