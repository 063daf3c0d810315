from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.method_summary import MethodSummary
    from ..models.metric_run import MetricRun


T = TypeVar("T", bound="JobResult")


@_attrs_define
class JobResult:
    job_id: UUID
    metric: str
    greater_is_better: bool
    lambda_star: float | None
    summary: list[MethodSummary]
    runs: list[MetricRun]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        job_id = str(self.job_id)

        metric = self.metric

        greater_is_better = self.greater_is_better

        lambda_star: float | None
        lambda_star = self.lambda_star

        summary = []
        for summary_item_data in self.summary:
            summary_item = summary_item_data.to_dict()
            summary.append(summary_item)

        runs = []
        for runs_item_data in self.runs:
            runs_item = runs_item_data.to_dict()
            runs.append(runs_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "job_id": job_id,
                "metric": metric,
                "greater_is_better": greater_is_better,
                "lambda_star": lambda_star,
                "summary": summary,
                "runs": runs,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.method_summary import MethodSummary  # noqa: PLC0415
        from ..models.metric_run import MetricRun  # noqa: PLC0415

        d = dict(src_dict)
        job_id = UUID(d.pop("job_id"))

        metric = d.pop("metric")

        greater_is_better = d.pop("greater_is_better")

        def _parse_lambda_star(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        lambda_star = _parse_lambda_star(d.pop("lambda_star"))

        summary = []
        _summary = d.pop("summary")
        for summary_item_data in _summary:
            summary_item = MethodSummary.from_dict(summary_item_data)

            summary.append(summary_item)

        runs = []
        _runs = d.pop("runs")
        for runs_item_data in _runs:
            runs_item = MetricRun.from_dict(runs_item_data)

            runs.append(runs_item)

        job_result = cls(
            job_id=job_id,
            metric=metric,
            greater_is_better=greater_is_better,
            lambda_star=lambda_star,
            summary=summary,
            runs=runs,
        )

        job_result.additional_properties = d
        return job_result

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
