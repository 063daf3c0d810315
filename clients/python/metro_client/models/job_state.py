from typing import Literal

JobState = Literal["cancelled", "cancelling", "failed", "queued", "running", "succeeded"]

JOB_STATE_VALUES: set[JobState] = {
    "cancelled",
    "cancelling",
    "failed",
    "queued",
    "running",
    "succeeded",
}


def check_job_state(value: str) -> JobState:
    if value in JOB_STATE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {sorted(JOB_STATE_VALUES)!r}")
