from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.average import Average, check_average
from ..models.metric_preset import MetricPreset, check_metric_preset
from ..types import UNSET, Unset

T = TypeVar("T", bound="PresetMetric")


@_attrs_define
class PresetMetric:
    """A named metric and its parameters, e.g. ``{"preset": "f_beta", "beta": 2}``."""

    preset: MetricPreset
    """ The metric (metro.metrics' presets; case is ignored) """
    average: Average | None | Unset = UNSET
    """ Several classes or labels: the average of the per-class (or per-label) metric, as sklearn.metrics.f1_score's
    average (macro: their plain mean; weighted: weighted by each class's true rows; micro: the metric of their cells
    summed, which multi-label data trains for with the labels' thresholds tuned together and is the accuracy for
    multi-class data), trained for by one METRO search per class or label (metro.multiclass). The data's label
    column then holds the classes (or dataset.label_columns names the 0/1 label columns). Presets: f1, f_beta,
    jaccard, precision, recall. Null: a binary job. Server default: null """
    zero_division: float | Unset = UNSET
    """ The score when the ratio is 0/0, as sklearn.metrics' zero_division: precision when nothing is predicted
    positive, recall when no row is positive. 1 makes a precision floor one that flagging nothing meets (the false-
    discovery-rate convention; see docs/quality.md). Default: 0 """
    beta: float | Unset = UNSET
    """ How many times recall counts as much as precision: 2 for F2, 0.5 for F0.5 (f_beta only) """
    w_tp: float | Unset = UNSET
    """ The weight of the true positives (weighted_accuracy only). Default: 1 """
    w_tn: float | Unset = UNSET
    """ The weight of the true negatives (weighted_accuracy only). Default: 1 """
    w_fp: float | Unset = UNSET
    """ The weight of the false positives (weighted_accuracy only). Default: 1 """
    w_fn: float | Unset = UNSET
    """ The weight of the false negatives (weighted_accuracy only). Default: 1 """

    def to_dict(self) -> dict[str, Any]:
        preset: str = self.preset

        average: None | str | Unset
        if isinstance(self.average, Unset):
            average = UNSET
        elif isinstance(self.average, str):
            average = self.average
        else:
            average = self.average

        zero_division = self.zero_division

        beta = self.beta

        w_tp = self.w_tp

        w_tn = self.w_tn

        w_fp = self.w_fp

        w_fn = self.w_fn

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "preset": preset,
            }
        )
        if average is not UNSET:
            field_dict["average"] = average
        if zero_division is not UNSET:
            field_dict["zero_division"] = zero_division
        if beta is not UNSET:
            field_dict["beta"] = beta
        if w_tp is not UNSET:
            field_dict["w_tp"] = w_tp
        if w_tn is not UNSET:
            field_dict["w_tn"] = w_tn
        if w_fp is not UNSET:
            field_dict["w_fp"] = w_fp
        if w_fn is not UNSET:
            field_dict["w_fn"] = w_fn

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        preset = check_metric_preset(d.pop("preset"))

        def _parse_average(data: object) -> Average | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError(f"got {type(data).__name__}")
                average_type_0 = check_average(data)

                return average_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Average | None | Unset, data)

        average = _parse_average(d.pop("average", UNSET))

        zero_division = d.pop("zero_division", UNSET)

        beta = d.pop("beta", UNSET)

        w_tp = d.pop("w_tp", UNSET)

        w_tn = d.pop("w_tn", UNSET)

        w_fp = d.pop("w_fp", UNSET)

        w_fn = d.pop("w_fn", UNSET)

        preset_metric = cls(
            preset=preset,
            average=average,
            zero_division=zero_division,
            beta=beta,
            w_tp=w_tp,
            w_tn=w_tn,
            w_fp=w_fp,
            w_fn=w_fn,
        )

        if d:  # the schema forbids other fields (the server's 422 extra_forbidden)
            raise ValueError("unknown field(s) of PresetMetric: " + ", ".join(sorted(map(str, d))))
        return preset_metric
