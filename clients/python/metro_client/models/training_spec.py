from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

from ..models.optimizer import Optimizer, check_optimizer
from ..types import UNSET, Unset

T = TypeVar("T", bound="TrainingSpec")


@_attrs_define
class TrainingSpec:
    """How each model is fitted (metro.trainer.TrainingConfig). Fields left out take the defaults shown."""

    optimizer: Optimizer | Unset = UNSET
    """ 'auto': L-BFGS for linear models, SGD for networks. Server default: "auto" """
    max_iter: int | Unset = UNSET
    """ L-BFGS: at most this many iterations. Server default: 200 """
    tol: float | Unset = UNSET
    """ L-BFGS: the tolerance it stops at. Server default: 1e-07 """
    weight_decay: float | Literal["auto"] | Unset = UNSET
    """ 'auto': 1 / (2 ln 2 n) for linear models, scikit-learn's C=1 penalty on the fit's n rows; 1e-4 for networks.
    Server default: "auto" """
    lr: float | Unset = UNSET
    """ SGD: the learning rate (cosine decay over the fit). Server default: 0.02 """
    momentum: float | Unset = UNSET
    """ SGD: Nesterov momentum. Server default: 0.9 """
    batch_size: int | Unset = UNSET
    """ SGD: rows per step. Server default: 1024 """
    epochs: int | Unset = UNSET
    """ SGD: passes over the training rows. Server default: 100 """
    augment: bool | Unset = UNSET
    """ SGD on images: a random 4-pixel translation and horizontal flip per step. Server default: false """
    device: str | Unset = UNSET
    """ auto (a GPU when the worker has one), cpu, cuda or cuda:<index> (0 to 99). Server default: "auto" """
    mixed_precision: bool | Unset = UNSET
    """ bf16 autocast on a CUDA device. Server default: true """
    seed: int | Unset = UNSET
    """ Seeds the splits, the initialization and the batches. Server default: 0 """
    warm_start: bool | Unset = UNSET
    """ Whether bisection and Dinkelbach steps and the final refit start from an earlier fit; false starts every fit
    from the seeded initialization. Server default: true """
    compile_: bool | Unset = UNSET
    """ Run the network's SGD steps through torch.compile (SGD only): a quarter faster on a GPU after about 40 s of
    compilation per worker process and model shape, so for long fits and workers that train many jobs of one shape.
    Server default: false """

    def to_dict(self) -> dict[str, Any]:
        optimizer: str | Unset = UNSET
        if not isinstance(self.optimizer, Unset):
            optimizer = self.optimizer

        max_iter = self.max_iter

        tol = self.tol

        weight_decay: float | Literal["auto"] | Unset
        if isinstance(self.weight_decay, Unset):
            weight_decay = UNSET
        else:
            weight_decay = self.weight_decay

        lr = self.lr

        momentum = self.momentum

        batch_size = self.batch_size

        epochs = self.epochs

        augment = self.augment

        device = self.device

        mixed_precision = self.mixed_precision

        seed = self.seed

        warm_start = self.warm_start

        compile_ = self.compile_

        field_dict: dict[str, Any] = {}

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
        _optimizer = d.pop("optimizer", UNSET)
        optimizer: Optimizer | Unset
        if isinstance(_optimizer, Unset):
            optimizer = UNSET
        else:
            optimizer = check_optimizer(_optimizer)

        max_iter = d.pop("max_iter", UNSET)

        tol = d.pop("tol", UNSET)

        def _parse_weight_decay(data: object) -> float | Literal["auto"] | Unset:
            if isinstance(data, Unset):
                return data
            try:
                if not data == "auto":
                    raise TypeError(f"got {type(data).__name__}")
                weight_decay_type_1 = cast(Literal["auto"], data)
                if weight_decay_type_1 != "auto":
                    raise ValueError(f"weight_decay_type_1 must match const 'auto', got '{weight_decay_type_1}'")
                return weight_decay_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(float | Literal["auto"] | Unset, data)

        weight_decay = _parse_weight_decay(d.pop("weight_decay", UNSET))

        lr = d.pop("lr", UNSET)

        momentum = d.pop("momentum", UNSET)

        batch_size = d.pop("batch_size", UNSET)

        epochs = d.pop("epochs", UNSET)

        augment = d.pop("augment", UNSET)

        device = d.pop("device", UNSET)

        mixed_precision = d.pop("mixed_precision", UNSET)

        seed = d.pop("seed", UNSET)

        warm_start = d.pop("warm_start", UNSET)

        compile_ = d.pop("compile", UNSET)

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

        if d:  # the schema forbids other fields (the server's 422 extra_forbidden)
            raise ValueError("unknown field(s) of TrainingSpec: " + ", ".join(sorted(map(str, d))))
        return training_spec
