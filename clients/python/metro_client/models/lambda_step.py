from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

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
