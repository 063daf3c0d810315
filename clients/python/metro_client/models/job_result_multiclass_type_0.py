from typing import Literal

JobResultMulticlassType0 = Literal["multinomial", "per_class"]

JOB_RESULT_MULTICLASS_TYPE_0_VALUES: set[JobResultMulticlassType0] = {
    "multinomial",
    "per_class",
}


def check_job_result_multiclass_type_0(value: str) -> JobResultMulticlassType0:
    if value in JOB_RESULT_MULTICLASS_TYPE_0_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {JOB_RESULT_MULTICLASS_TYPE_0_VALUES!r}")
