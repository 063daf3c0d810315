from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="MetricInfo")


@_attrs_define
class MetricInfo:
    """How the server shows a job's metric, resolved from its ``metric``."""

    name: str
    display_name: str
    greater_is_better: bool

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        display_name = self.display_name

        greater_is_better = self.greater_is_better

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
                "display_name": display_name,
                "greater_is_better": greater_is_better,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = d.pop("name")

        display_name = d.pop("display_name")

        greater_is_better = d.pop("greater_is_better")

        metric_info = cls(
            name=name,
            display_name=display_name,
            greater_is_better=greater_is_better,
        )

        if d:  # the schema forbids other fields (the server's 422 extra_forbidden)
            raise ValueError("unknown field(s) of MetricInfo: " + ", ".join(sorted(map(str, d))))
        return metric_info
