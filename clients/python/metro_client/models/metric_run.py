from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.split import Split, check_split
from ..types import UNSET, Unset

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
    constraint_values: list[float | None] | None | Unset = UNSET
    """ Under constraints: each constraint's value on this split (in the order of the result's constraints); null
    without """
    constraints_hold: bool | None | Unset = UNSET
    """ Under constraints: whether every constraint holds on this split """
    class_index: int | None | Unset = UNSET
    """ An averaged job's per-class rows: the class's position in the result's classes; null for the job's own
    figure (a binary job's metric, or the average, whose confusion counts are summed over the classes) """
    label: bool | float | int | None | str | Unset = UNSET
    """ The class (or label column) of a per-class row """
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        method = self.method

        repeat = self.repeat

        split: str = self.split

        value = self.value

        lambda_: float | None
        lambda_ = self.lambda_

        confusion = self.confusion.to_dict()

        constraint_values: list[float | None] | None | Unset
        if isinstance(self.constraint_values, Unset):
            constraint_values = UNSET
        elif isinstance(self.constraint_values, list):
            constraint_values = []
            for constraint_values_type_0_item_data in self.constraint_values:
                constraint_values_type_0_item: float | None
                constraint_values_type_0_item = constraint_values_type_0_item_data
                constraint_values.append(constraint_values_type_0_item)

        else:
            constraint_values = self.constraint_values

        constraints_hold: bool | None | Unset
        if isinstance(self.constraints_hold, Unset):
            constraints_hold = UNSET
        else:
            constraints_hold = self.constraints_hold

        class_index: int | None | Unset
        if isinstance(self.class_index, Unset):
            class_index = UNSET
        else:
            class_index = self.class_index

        label: bool | float | int | None | str | Unset
        if isinstance(self.label, Unset):
            label = UNSET
        else:
            label = self.label

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
        if constraint_values is not UNSET:
            field_dict["constraint_values"] = constraint_values
        if constraints_hold is not UNSET:
            field_dict["constraints_hold"] = constraints_hold
        if class_index is not UNSET:
            field_dict["class_index"] = class_index
        if label is not UNSET:
            field_dict["label"] = label

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

        def _parse_constraint_values(data: object) -> list[float | None] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError(f"got {type(data).__name__}")
                constraint_values_type_0 = []
                _constraint_values_type_0 = data
                for constraint_values_type_0_item_data in _constraint_values_type_0:

                    def _parse_constraint_values_type_0_item(data: object) -> float | None:
                        if data is None:
                            return data
                        return cast(float | None, data)

                    constraint_values_type_0_item = _parse_constraint_values_type_0_item(
                        constraint_values_type_0_item_data
                    )

                    constraint_values_type_0.append(constraint_values_type_0_item)

                return constraint_values_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[float | None] | None | Unset, data)

        constraint_values = _parse_constraint_values(d.pop("constraint_values", UNSET))

        def _parse_constraints_hold(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        constraints_hold = _parse_constraints_hold(d.pop("constraints_hold", UNSET))

        def _parse_class_index(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        class_index = _parse_class_index(d.pop("class_index", UNSET))

        def _parse_label(data: object) -> bool | float | int | None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | float | int | None | str | Unset, data)

        label = _parse_label(d.pop("label", UNSET))

        metric_run = cls(
            method=method,
            repeat=repeat,
            split=split,
            value=value,
            lambda_=lambda_,
            confusion=confusion,
            constraint_values=constraint_values,
            constraints_hold=constraints_hold,
            class_index=class_index,
            label=label,
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
