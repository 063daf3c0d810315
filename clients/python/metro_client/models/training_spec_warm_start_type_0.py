from typing import Literal

TrainingSpecWarmStartType0 = Literal["always", "auto", "never"]

TRAINING_SPEC_WARM_START_TYPE_0_VALUES: set[TrainingSpecWarmStartType0] = {
    "always",
    "auto",
    "never",
}


def check_training_spec_warm_start_type_0(value: str) -> TrainingSpecWarmStartType0:
    if value in TRAINING_SPEC_WARM_START_TYPE_0_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {TRAINING_SPEC_WARM_START_TYPE_0_VALUES!r}")
