from typing import Literal

PresetMetricAverageType0 = Literal["macro", "weighted"]

PRESET_METRIC_AVERAGE_TYPE_0_VALUES: set[PresetMetricAverageType0] = {
    "macro",
    "weighted",
}


def check_preset_metric_average_type_0(value: str) -> PresetMetricAverageType0:
    if value in PRESET_METRIC_AVERAGE_TYPE_0_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {PRESET_METRIC_AVERAGE_TYPE_0_VALUES!r}")
