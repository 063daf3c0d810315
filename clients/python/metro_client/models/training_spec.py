from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.optimizer import Optimizer, check_optimizer
from ..types import UNSET, Unset

T = TypeVar("T", bound="TrainingSpec")


@_attrs_define
class TrainingSpec:
    optimizer: None | Optimizer | Unset = UNSET
    max_iter: int | None | Unset = UNSET
    tol: float | None | Unset = UNSET
    weight_decay: float | Literal["auto"] | None | Unset = UNSET
    """ 'auto' (the default): 1 / (2 ln 2 n) for linear models, scikit-learn's C=1 penalty on the fit's n rows; 1e-4
    for networks """
    lr: float | None | Unset = UNSET
    momentum: float | None | Unset = UNSET
    batch_size: int | None | Unset = UNSET
    epochs: int | None | Unset = UNSET
    augment: bool | None | Unset = UNSET
    device: None | str | Unset = UNSET
    mixed_precision: bool | None | Unset = UNSET
    seed: int | None | Unset = UNSET
    warm_start: bool | None | Unset = UNSET
    """ Whether bisection/Dinkelbach steps and the final refit start from an earlier fit (default true); false
    starts every fit from the seeded initialization """
    compile_: bool | None | Unset = UNSET
    """ Run the network's SGD steps through torch.compile (default false; SGD only): a quarter faster on a GPU after
    about 40 s of compilation per worker process and model shape, so for long fits and workers that train many jobs
    of one shape """
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        optimizer: None | str | Unset
        if isinstance(self.optimizer, Unset):
            optimizer = UNSET
        elif isinstance(self.optimizer, str):
            optimizer = self.optimizer
        else:
            optimizer = self.optimizer

        max_iter: int | None | Unset
        if isinstance(self.max_iter, Unset):
            max_iter = UNSET
        else:
            max_iter = self.max_iter

        tol: float | None | Unset
        if isinstance(self.tol, Unset):
            tol = UNSET
        else:
            tol = self.tol

        weight_decay: float | Literal["auto"] | None | Unset
        if isinstance(self.weight_decay, Unset):
            weight_decay = UNSET
        else:
            weight_decay = self.weight_decay

        lr: float | None | Unset
        if isinstance(self.lr, Unset):
            lr = UNSET
        else:
            lr = self.lr

        momentum: float | None | Unset
        if isinstance(self.momentum, Unset):
            momentum = UNSET
        else:
            momentum = self.momentum

        batch_size: int | None | Unset
        if isinstance(self.batch_size, Unset):
            batch_size = UNSET
        else:
            batch_size = self.batch_size

        epochs: int | None | Unset
        if isinstance(self.epochs, Unset):
            epochs = UNSET
        else:
            epochs = self.epochs

        augment: bool | None | Unset
        if isinstance(self.augment, Unset):
            augment = UNSET
        else:
            augment = self.augment

        device: None | str | Unset
        if isinstance(self.device, Unset):
            device = UNSET
        else:
            device = self.device

        mixed_precision: bool | None | Unset
        if isinstance(self.mixed_precision, Unset):
            mixed_precision = UNSET
        else:
            mixed_precision = self.mixed_precision

        seed: int | None | Unset
        if isinstance(self.seed, Unset):
            seed = UNSET
        else:
            seed = self.seed

        warm_start: bool | None | Unset
        if isinstance(self.warm_start, Unset):
            warm_start = UNSET
        else:
            warm_start = self.warm_start

        compile_: bool | None | Unset
        if isinstance(self.compile_, Unset):
            compile_ = UNSET
        else:
            compile_ = self.compile_

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if optimizer is not UNSET:
            field_dict["optimizer"] = optimizer
        if max_iter is not UNSET:
            field_dict["max_iter"] = max_iter
        if tol is not UNSET:
            field_dict["tol"] = tol
        if weight_decay is not UNSET:
            field_dict["weight_decay"] = weight_decay
        if lr is not UNSET:
            field_dict["lr"] = lr
        if momentum is not UNSET:
            field_dict["momentum"] = momentum
        if batch_size is not UNSET:
            field_dict["batch_size"] = batch_size
        if epochs is not UNSET:
            field_dict["epochs"] = epochs
        if augment is not UNSET:
            field_dict["augment"] = augment
        if device is not UNSET:
            field_dict["device"] = device
        if mixed_precision is not UNSET:
            field_dict["mixed_precision"] = mixed_precision
        if seed is not UNSET:
            field_dict["seed"] = seed
        if warm_start is not UNSET:
            field_dict["warm_start"] = warm_start
        if compile_ is not UNSET:
            field_dict["compile"] = compile_

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_optimizer(data: object) -> None | Optimizer | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                optimizer_type_0 = check_optimizer(data)

                return optimizer_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Optimizer | Unset, data)

        optimizer = _parse_optimizer(d.pop("optimizer", UNSET))

        def _parse_max_iter(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_iter = _parse_max_iter(d.pop("max_iter", UNSET))

        def _parse_tol(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        tol = _parse_tol(d.pop("tol", UNSET))

        def _parse_weight_decay(data: object) -> float | Literal["auto"] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            weight_decay_type_1 = cast(Literal["auto"], data)
            if weight_decay_type_1 != "auto":
                raise ValueError(f"weight_decay_type_1 must match const 'auto', got '{weight_decay_type_1}'")
            return weight_decay_type_1
            return cast(float | Literal["auto"] | None | Unset, data)

        weight_decay = _parse_weight_decay(d.pop("weight_decay", UNSET))

        def _parse_lr(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        lr = _parse_lr(d.pop("lr", UNSET))

        def _parse_momentum(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        momentum = _parse_momentum(d.pop("momentum", UNSET))

        def _parse_batch_size(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        batch_size = _parse_batch_size(d.pop("batch_size", UNSET))

        def _parse_epochs(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        epochs = _parse_epochs(d.pop("epochs", UNSET))

        def _parse_augment(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        augment = _parse_augment(d.pop("augment", UNSET))

        def _parse_device(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        device = _parse_device(d.pop("device", UNSET))

        def _parse_mixed_precision(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        mixed_precision = _parse_mixed_precision(d.pop("mixed_precision", UNSET))

        def _parse_seed(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        seed = _parse_seed(d.pop("seed", UNSET))

        def _parse_warm_start(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        warm_start = _parse_warm_start(d.pop("warm_start", UNSET))

        def _parse_compile_(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        compile_ = _parse_compile_(d.pop("compile", UNSET))

        training_spec = cls(
            optimizer=optimizer,
            max_iter=max_iter,
            tol=tol,
            weight_decay=weight_decay,
            lr=lr,
            momentum=momentum,
            batch_size=batch_size,
            epochs=epochs,
            augment=augment,
            device=device,
            mixed_precision=mixed_precision,
            seed=seed,
            warm_start=warm_start,
            compile_=compile_,
        )

        training_spec.additional_properties = d
        return training_spec

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
