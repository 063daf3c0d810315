from typing import Literal

ModelManifestMulticlassType0 = Literal["multinomial", "per_class"]

MODEL_MANIFEST_MULTICLASS_TYPE_0_VALUES: set[ModelManifestMulticlassType0] = {
    "multinomial",
    "per_class",
}


def check_model_manifest_multiclass_type_0(value: str) -> ModelManifestMulticlassType0:
    if value in MODEL_MANIFEST_MULTICLASS_TYPE_0_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {MODEL_MANIFEST_MULTICLASS_TYPE_0_VALUES!r}")
