from typing import Literal

ModelManifestDecisionType0 = Literal["argmax", "per_label"]

MODEL_MANIFEST_DECISION_TYPE_0_VALUES: set[ModelManifestDecisionType0] = {
    "argmax",
    "per_label",
}


def check_model_manifest_decision_type_0(value: str) -> ModelManifestDecisionType0:
    if value in MODEL_MANIFEST_DECISION_TYPE_0_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {MODEL_MANIFEST_DECISION_TYPE_0_VALUES!r}")
