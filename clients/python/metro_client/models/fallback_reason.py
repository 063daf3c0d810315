from typing import Literal

FallbackReason = Literal["unsupported", "within_noise"]

FALLBACK_REASON_VALUES: set[FallbackReason] = {
    "unsupported",
    "within_noise",
}


def check_fallback_reason(value: str) -> FallbackReason:
    if value in FALLBACK_REASON_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {sorted(FALLBACK_REASON_VALUES)!r}")
