from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="ConstraintInfo")


@_attrs_define
class ConstraintInfo:
    """How the server shows a constraint, resolved from it."""

    name: str
    """ The machine name, e.g. recall >= 0.9 """
    display_name: str
    """ As people write it: Recall ≥ 0.9 """
    metric_display_name: str
    """ The constrained metric's name: Recall """

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        display_name = self.display_name

        metric_display_name = self.metric_display_name

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
                "display_name": display_name,
                "metric_display_name": metric_display_name,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = d.pop("name")

        display_name = d.pop("display_name")

        metric_display_name = d.pop("metric_display_name")

        constraint_info = cls(
            name=name,
            display_name=display_name,
            metric_display_name=metric_display_name,
        )

        if d:  # the schema forbids other fields (the server's 422 extra_forbidden)
            raise ValueError("unknown field(s) of ConstraintInfo: " + ", ".join(sorted(map(str, d))))
        return constraint_info
