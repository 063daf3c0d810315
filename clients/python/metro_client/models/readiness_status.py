from typing import Literal

ReadinessStatus = Literal["not ready", "ready"]

READINESS_STATUS_VALUES: set[ReadinessStatus] = {
    "not ready",
    "ready",
}


def check_readiness_status(value: str) -> ReadinessStatus:
    if value in READINESS_STATUS_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {sorted(READINESS_STATUS_VALUES)!r}")
