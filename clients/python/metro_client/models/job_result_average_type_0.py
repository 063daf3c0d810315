from typing import Literal

JobResultAverageType0 = Literal["macro", "weighted"]

JOB_RESULT_AVERAGE_TYPE_0_VALUES: set[JobResultAverageType0] = {
    "macro",
    "weighted",
}


def check_job_result_average_type_0(value: str) -> JobResultAverageType0:
    if value in JOB_RESULT_AVERAGE_TYPE_0_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {JOB_RESULT_AVERAGE_TYPE_0_VALUES!r}")
