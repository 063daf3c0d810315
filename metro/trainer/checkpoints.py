"""Resumable checkpoints: tensors in one dict, JSON scalars in the other (no pickling)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import Tensor

from metro.models import StackedModel
from metro.trainer.config import TrainingConfig

_CHECKPOINT_FORMAT = 1
# Config fields that shape the optimization trajectory; a checkpoint only resumes a fit that
# agrees on all of them (device and mixed precision may change between runs).
_TRAJECTORY_FIELDS = (
    "optimizer", "max_iter", "tol", "weight_decay", "lr", "momentum", "batch_size", "epochs",
    "augment", "seed",
)  # fmt: skip


def build_checkpoint(
    *,
    model: StackedModel,
    optimizer_name: str,
    step: int,
    total_steps: int,
    n_examples: int,
    config: TrainingConfig,
    costs: Tensor,
    state: Mapping[str, Tensor],
    row_mask: Tensor | None = None,
) -> dict[str, Any]:
    """Everything needed to resume: tensors in one dict, JSON scalars in the other (so it maps
    directly to a safetensors file plus a JSON document; no pickling)."""
    tensors = {f"model.{k}": v for k, v in model.tensors().items()}
    tensors["costs"] = costs.detach().cpu().clone()
    if row_mask is not None:
        tensors["row_mask"] = row_mask.detach().to("cpu", torch.uint8).contiguous()
    for key, value in state.items():
        tensors[f"optim.{key}"] = value.detach().to("cpu", copy=True).contiguous()
    scalars: dict[str, Any] = {
        "format": _CHECKPOINT_FORMAT,
        "optimizer": optimizer_name,
        "step": step,
        "total_steps": total_steps,
        "n_models": model.n_models,
        "n_examples": n_examples,
        **{f"config.{k}": v for k, v in config.to_dict().items() if k in _TRAJECTORY_FIELDS},
    }
    return {"tensors": tensors, "scalars": scalars}


def check_checkpoint(
    checkpoint: Any,
    *,
    optimizer_name: str,
    n_models: int,
    n_examples: int,
    config: TrainingConfig,
    costs: Tensor,
    row_mask: Tensor | None = None,
) -> tuple[dict[str, Tensor], dict[str, Tensor], int]:
    """Validate a checkpoint against this fit; return (model tensors, optimizer state, step)."""
    if not isinstance(checkpoint, Mapping) or not {"tensors", "scalars"} <= set(checkpoint):
        raise ValueError("resume_from must be a checkpoint dict with 'tensors' and 'scalars'")
    tensors, scalars = checkpoint["tensors"], checkpoint["scalars"]
    if not isinstance(tensors, Mapping) or not isinstance(scalars, Mapping):
        raise ValueError("a checkpoint's 'tensors' and 'scalars' must be mappings")
    if scalars.get("format") != _CHECKPOINT_FORMAT:
        raise ValueError(f"unsupported checkpoint format {scalars.get('format')!r}")
    expected = {
        "optimizer": optimizer_name,
        "n_models": n_models,
        "n_examples": n_examples,
        **{f"config.{k}": v for k, v in config.to_dict().items() if k in _TRAJECTORY_FIELDS},
    }
    mismatched = [k for k, v in expected.items() if scalars.get(k) != v]
    if mismatched:
        details = ", ".join(f"{k}: {scalars.get(k)!r} != {expected[k]!r}" for k in mismatched)
        raise ValueError(f"the checkpoint belongs to a different fit ({details})")
    saved_costs = tensors.get("costs")
    if saved_costs is None or not torch.equal(torch.as_tensor(saved_costs).float(), costs):
        raise ValueError("the checkpoint belongs to a different fit (its cost tables differ)")
    saved_mask = tensors.get("row_mask")
    if (saved_mask is None) != (row_mask is None) or (
        row_mask is not None
        and not torch.equal(torch.as_tensor(saved_mask).bool(), row_mask.cpu().bool())
    ):
        raise ValueError("the checkpoint belongs to a different fit (its row masks differ)")
    step = scalars.get("step")
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise ValueError(f"the checkpoint's step must be a non-negative integer, got {step!r}")
    model_tensors = {
        k.removeprefix("model."): torch.as_tensor(v)
        for k, v in tensors.items()
        if k.startswith("model.")
    }
    state = {
        k.removeprefix("optim."): torch.as_tensor(v)
        for k, v in tensors.items()
        if k.startswith("optim.")
    }
    return model_tensors, state, step


def load_model_tensors(model: StackedModel, tensors: Mapping[str, Tensor]) -> None:
    own = model.state_dict()
    if set(own) != set(tensors):
        raise ValueError(
            f"the checkpoint's model tensors {sorted(tensors)} "
            f"do not match the model's {sorted(own)}"
        )
    with torch.no_grad():
        for name, target in own.items():
            value = tensors[name]
            if tuple(value.shape) != tuple(target.shape):
                raise ValueError(
                    f"checkpoint tensor {name!r} has shape {list(value.shape)}, "
                    f"expected {list(target.shape)}"
                )
            target.copy_(value)
