from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="LambdaStep")


@_attrs_define
class LambdaStep:
    repeat: int
    step: int
    fold: int | None
    method: str
    lambda_: float
    shift: None | str
    """ The cost shift of the fit: minimal or paper """
    surrogate_loss: float | None
    l_lambda: float | None
    train_metric: float | None
    validation_metric: float | None
    seconds: float | None
    mu: float | None | Unset = UNSET
    """ Under constraints: the Lagrange multiplier of the constraints this fit was trained with (one of
    search.multipliers); null without """
    constraint_values: list[float | None] | None | Unset = UNSET
    """ Under constraints: each constraint's value where validation_metric is measured (train_metric's rows when it
    is null), at threshold 0 like the metric """
    class_index: int | None | Unset = UNSET
    """ An averaged job: the position, in the job's classes, of the class (or label) whose search this step is of;
    null for a binary job """
    label: bool | float | int | None | str | Unset = UNSET
    """ An averaged job: that class's value (or label column) """
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        repeat = self.repeat

        step = self.step

        fold: int | None
        fold = self.fold

        method = self.method

        lambda_ = self.lambda_

        shift: None | str
        shift = self.shift

        surrogate_loss: float | None
        surrogate_loss = self.surrogate_loss

        l_lambda: float | None
        l_lambda = self.l_lambda

        train_metric: float | None
        train_metric = self.train_metric

        validation_metric: float | None
        validation_metric = self.validation_metric

        seconds: float | None
        seconds = self.seconds

        mu: float | None | Unset
        if isinstance(self.mu, Unset):
            mu = UNSET
        else:
            mu = self.mu

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
                "repeat": repeat,
                "step": step,
                "fold": fold,
                "method": method,
                "lambda": lambda_,
                "shift": shift,
                "surrogate_loss": surrogate_loss,
                "l_lambda": l_lambda,
                "train_metric": train_metric,
                "validation_metric": validation_metric,
                "seconds": seconds,
            }
        )
        if mu is not UNSET:
            field_dict["mu"] = mu
        if constraint_values is not UNSET:
            field_dict["constraint_values"] = constraint_values
        if class_index is not UNSET:
            field_dict["class_index"] = class_index
        if label is not UNSET:
            field_dict["label"] = label

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        repeat = d.pop("repeat")

        step = d.pop("step")

        def _parse_fold(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        fold = _parse_fold(d.pop("fold"))

        method = d.pop("method")

        lambda_ = d.pop("lambda")

        def _parse_shift(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        shift = _parse_shift(d.pop("shift"))

        def _parse_surrogate_loss(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        surrogate_loss = _parse_surrogate_loss(d.pop("surrogate_loss"))

        def _parse_l_lambda(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        l_lambda = _parse_l_lambda(d.pop("l_lambda"))

        def _parse_train_metric(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        train_metric = _parse_train_metric(d.pop("train_metric"))

        def _parse_validation_metric(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        validation_metric = _parse_validation_metric(d.pop("validation_metric"))

        def _parse_seconds(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        seconds = _parse_seconds(d.pop("seconds"))

        def _parse_mu(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        mu = _parse_mu(d.pop("mu", UNSET))

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

        lambda_step = cls(
            repeat=repeat,
            step=step,
            fold=fold,
            method=method,
            lambda_=lambda_,
            shift=shift,
            surrogate_loss=surrogate_loss,
            l_lambda=l_lambda,
            train_metric=train_metric,
            validation_metric=validation_metric,
            seconds=seconds,
            mu=mu,
            constraint_values=constraint_values,
            class_index=class_index,
            label=label,
        )

        lambda_step.additional_properties = d
        return lambda_step

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
