from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.split import Split, check_split

if TYPE_CHECKING:
    from ..models.confusion_counts import ConfusionCounts


T = TypeVar("T", bound="MetricRun")


@_attrs_define
class MetricRun:
    """One method on one split of one repeat."""

    method: str
    repeat: int
    split: Split
    value: float
    lambda_: float | None
    """ METRO: the trained_lambda of this repeat's model """
    confusion: ConfusionCounts
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        method = self.method

        repeat = self.repeat

        split: str = self.split

        value = self.value

        lambda_: float | None
        lambda_ = self.lambda_

        confusion = self.confusion.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "method": method,
                "repeat": repeat,
                "split": split,
                "value": value,
                "lambda": lambda_,
                "confusion": confusion,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.confusion_counts import ConfusionCounts  # noqa: PLC0415

        d = dict(src_dict)
        method = d.pop("method")

        repeat = d.pop("repeat")

        split = check_split(d.pop("split"))

        value = d.pop("value")

        def _parse_lambda_(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        lambda_ = _parse_lambda_(d.pop("lambda"))

        confusion = ConfusionCounts.from_dict(d.pop("confusion"))

        metric_run = cls(
            method=method,
            repeat=repeat,
            split=split,
            value=value,
            lambda_=lambda_,
            confusion=confusion,
        )

        metric_run.additional_properties = d
        return metric_run

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
