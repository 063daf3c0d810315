from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.confusion_metric_denominator import ConfusionMetricDenominator
    from ..models.confusion_metric_numerator import ConfusionMetricNumerator


T = TypeVar("T", bound="ConfusionMetric")


@_attrs_define
class ConfusionMetric:
    """A ratio of weighted confusion cells, e.g. F1 = {tp: 2} / {tp: 2, fp: 1, fn: 1}."""

    numerator: ConfusionMetricNumerator
    denominator: ConfusionMetricDenominator
    greater_is_better: bool | Unset = UNSET
    """ How the ratio reads: true for a score (F1, recall: larger is better, minimized as its negative), false for a
    loss. Server default: true """
    zero_division: float | Unset = UNSET
    """ The score when the ratio is 0/0 (precision with nothing predicted positive), as in sklearn.metrics. Server
    default: 0.0 """
    name: str | Unset = UNSET
    """ The metric's name in results and manifests. Server default: "custom" """

    def to_dict(self) -> dict[str, Any]:
        numerator = self.numerator.to_dict()

        denominator = self.denominator.to_dict()

        greater_is_better = self.greater_is_better

        zero_division = self.zero_division

        name = self.name

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "numerator": numerator,
                "denominator": denominator,
            }
        )
        if greater_is_better is not UNSET:
            field_dict["greater_is_better"] = greater_is_better
        if zero_division is not UNSET:
            field_dict["zero_division"] = zero_division
        if name is not UNSET:
            field_dict["name"] = name

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.confusion_metric_denominator import ConfusionMetricDenominator  # noqa: PLC0415
        from ..models.confusion_metric_numerator import ConfusionMetricNumerator  # noqa: PLC0415

        d = dict(src_dict)
        numerator = ConfusionMetricNumerator.from_dict(d.pop("numerator"))

        denominator = ConfusionMetricDenominator.from_dict(d.pop("denominator"))

        greater_is_better = d.pop("greater_is_better", UNSET)

        zero_division = d.pop("zero_division", UNSET)

        name = d.pop("name", UNSET)

        confusion_metric = cls(
            numerator=numerator,
            denominator=denominator,
            greater_is_better=greater_is_better,
            zero_division=zero_division,
            name=name,
        )

        if d:  # the schema forbids other fields (the server's 422 extra_forbidden)
            raise ValueError("unknown field(s) of ConfusionMetric: " + ", ".join(sorted(map(str, d))))
        return confusion_metric
