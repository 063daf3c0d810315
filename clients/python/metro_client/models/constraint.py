from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.constraint_sense import ConstraintSense, check_constraint_sense

T = TypeVar("T", bound="Constraint")


@_attrs_define
class Constraint:
    """A constraint of the job, as the results name it."""

    name: str
    """ The machine name, e.g. recall >= 0.9 """
    display_name: str
    """ As people write it: Recall ≥ 0.9 """
    metric_display_name: str
    """ The constrained metric's name: Recall """
    sense: ConstraintSense
    bound: float
    confidence: float | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        display_name = self.display_name

        metric_display_name = self.metric_display_name

        sense: str = self.sense

        bound = self.bound

        confidence: float | None
        confidence = self.confidence

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
                "display_name": display_name,
                "metric_display_name": metric_display_name,
                "sense": sense,
                "bound": bound,
                "confidence": confidence,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = d.pop("name")

        display_name = d.pop("display_name")

        metric_display_name = d.pop("metric_display_name")

        sense = check_constraint_sense(d.pop("sense"))

        bound = d.pop("bound")

        def _parse_confidence(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        confidence = _parse_confidence(d.pop("confidence"))

        constraint = cls(
            name=name,
            display_name=display_name,
            metric_display_name=metric_display_name,
            sense=sense,
            bound=bound,
            confidence=confidence,
        )

        constraint.additional_properties = d
        return constraint

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
