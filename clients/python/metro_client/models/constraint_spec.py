from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.constraint_metric import ConstraintMetric
    from ..models.constraint_params import ConstraintParams


T = TypeVar("T", bound="ConstraintSpec")


@_attrs_define
class ConstraintSpec:
    """A floor or a ceiling on a second ratio metric, e.g. ``{"metric": "recall",
    "at_least": 0.9}``: the search keeps the best metric among the fits that meet it on the
    held-out rows (see docs/api.md, "Constraints").

    """

    metric: ConstraintMetric | str
    """ A preset name (recall, precision, false_positive_rate, true_negative_rate, ...) or {alpha, beta} """
    params: ConstraintParams | None | Unset = UNSET
    """ The preset's parameters, e.g. {"beta": 2} for f_beta """
    at_least: float | None | Unset = UNSET
    """ The floor (give this or at_most) """
    at_most: float | None | Unset = UNSET
    """ The ceiling (give this or at_least) """
    confidence: float | None | Unset = UNSET
    """ In [0.5, 1): the bound must hold with this one-sided confidence on the held-out rows (a margin), not just on
    average; null: on average """
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.constraint_metric import ConstraintMetric  # noqa: PLC0415
        from ..models.constraint_params import ConstraintParams  # noqa: PLC0415

        metric: dict[str, Any] | str
        if isinstance(self.metric, ConstraintMetric):
            metric = self.metric.to_dict()
        else:
            metric = self.metric

        params: dict[str, Any] | None | Unset
        if isinstance(self.params, Unset):
            params = UNSET
        elif isinstance(self.params, ConstraintParams):
            params = self.params.to_dict()
        else:
            params = self.params

        at_least: float | None | Unset
        if isinstance(self.at_least, Unset):
            at_least = UNSET
        else:
            at_least = self.at_least

        at_most: float | None | Unset
        if isinstance(self.at_most, Unset):
            at_most = UNSET
        else:
            at_most = self.at_most

        confidence: float | None | Unset
        if isinstance(self.confidence, Unset):
            confidence = UNSET
        else:
            confidence = self.confidence

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "metric": metric,
            }
        )
        if params is not UNSET:
            field_dict["params"] = params
        if at_least is not UNSET:
            field_dict["at_least"] = at_least
        if at_most is not UNSET:
            field_dict["at_most"] = at_most
        if confidence is not UNSET:
            field_dict["confidence"] = confidence

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.constraint_metric import ConstraintMetric  # noqa: PLC0415
        from ..models.constraint_params import ConstraintParams  # noqa: PLC0415

        d = dict(src_dict)

        def _parse_metric(data: object) -> ConstraintMetric | str:
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                metric_type_1 = ConstraintMetric.from_dict(data)

                return metric_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ConstraintMetric | str, data)

        metric = _parse_metric(d.pop("metric"))

        def _parse_params(data: object) -> ConstraintParams | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                params_type_0 = ConstraintParams.from_dict(data)

                return params_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ConstraintParams | None | Unset, data)

        params = _parse_params(d.pop("params", UNSET))

        def _parse_at_least(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        at_least = _parse_at_least(d.pop("at_least", UNSET))

        def _parse_at_most(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        at_most = _parse_at_most(d.pop("at_most", UNSET))

        def _parse_confidence(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        confidence = _parse_confidence(d.pop("confidence", UNSET))

        constraint_spec = cls(
            metric=metric,
            params=params,
            at_least=at_least,
            at_most=at_most,
            confidence=confidence,
        )

        constraint_spec.additional_properties = d
        return constraint_spec

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
