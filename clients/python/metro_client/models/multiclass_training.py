from typing import Literal

MulticlassTraining = Literal["multinomial", "per_class"]

MULTICLASS_TRAINING_VALUES: set[MulticlassTraining] = {
    "multinomial",
    "per_class",
}


def check_multiclass_training(value: str) -> MulticlassTraining:
    if value in MULTICLASS_TRAINING_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {sorted(MULTICLASS_TRAINING_VALUES)!r}")
