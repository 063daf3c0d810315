"""What both optimizers share: input checks, the initial stack, seeds, cost gathering and
full-batch passes."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import nullcontext
from typing import Any

import numpy as np
import torch
from torch import Tensor

from metro.models import ModelSpec, StackedModel, build_model
from metro.surrogates import Surrogate, cost_sensitive_loss

# Activations (floats) per chunk of a full-batch pass, bounding its memory: 64 MiB of float32
# on a CPU; 1 GiB on a GPU, where a chunk must be large enough to keep the card busy (a stack of
# 105 cnn3 models at 32x32 then scores 78 images per chunk).
_FULL_BATCH_ELEMENTS = 1 << 24
_FULL_BATCH_ELEMENTS_CUDA = 1 << 28

# emit(step, total_steps, per-model losses, checkpoint factory or None); the factory is only
# called when a checkpoint is due, so steps without one copy nothing to the host.
Emit = Callable[[int, int, Tensor, Callable[[], dict[str, Any]] | None], None]
MakeCheckpoint = Callable[[int, Mapping[str, Tensor]], dict[str, Any]]


def as_features(X: Any) -> Tensor:
    """X as a float32 tensor [n, ...] (no copy for float32 input), checked finite."""
    if isinstance(X, Tensor):
        t = X.detach()
    else:
        arr = np.asarray(X)
        if arr.dtype.kind not in "biuf":
            raise ValueError(f"X must hold real numbers, got dtype {arr.dtype}")
        t = torch.from_numpy(np.ascontiguousarray(arr))
    if t.is_complex() or t.dtype == torch.bool:
        raise ValueError(f"X must hold real numbers, got dtype {t.dtype}")
    t = t.to(torch.float32)
    if t.ndim < 2:
        raise ValueError(f"X must have shape [n, features...], got {list(t.shape)}")
    if t.shape[0] < 1:
        raise ValueError("X must hold at least one example")
    if not bool(torch.isfinite(t).all()):
        raise ValueError("X must be finite (found NaN or infinity)")
    return t


def as_labels(y: Any, n: int, n_values: int = 2) -> Tensor:
    """Labels as int64: 0 (negative) and 1 (positive), or with ``n_values`` > 2 the row groups
    ``0 .. n_values - 1`` that a cost table of ``n_values`` columns prices (see
    :func:`as_costs`)."""
    arr = y.detach().cpu().numpy() if isinstance(y, Tensor) else np.asarray(y)
    if arr.ndim != 1:
        raise ValueError(f"y must be one-dimensional, got shape {list(arr.shape)}")
    if arr.shape[0] != n:
        raise ValueError(f"X has {n} rows but y has {arr.shape[0]} labels")
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"y must hold labels 0 and 1, got dtype {arr.dtype}")
    valid = (arr == np.round(arr)) & (arr >= 0) & (arr < n_values)
    if not np.all(valid):
        bad = np.unique(arr[~valid])[:5]
        if n_values == 2:
            raise ValueError(
                f"y must hold labels 0 (negative) and 1 (positive), got {bad.tolist()}"
            )
        raise ValueError(f"y must hold row groups 0 to {n_values - 1}, got {bad.tolist()}")
    return torch.from_numpy(arr.astype(np.int64))


def as_costs(costs: Any) -> Tensor:
    arr = costs.detach().cpu().double().numpy() if isinstance(costs, Tensor) else np.asarray(costs)
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"costs must be numbers, got dtype {arr.dtype}")
    if arr.ndim != 3 or arr.shape[1] != 2 or arr.shape[2] < 2 or arr.shape[0] < 1:
        raise ValueError(
            "costs must have shape [K, 2, 2] (K >= 1, indexed [k, pred, true]), or [K, 2, G] "
            f"for G >= 2 row groups, got {list(arr.shape)}"
        )
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError("costs must be finite and non-negative")
    return torch.from_numpy(arr.astype(np.float32))


def as_row_mask(mask: Any, n: int, n_models: int) -> Tensor:
    """A row mask as a bool tensor [n, K], checked: booleans of that shape, every model with at
    least one row."""
    arr = mask.detach().cpu().numpy() if isinstance(mask, Tensor) else np.asarray(mask)
    if arr.dtype != np.bool_:
        raise ValueError(f"row_mask must hold booleans, got dtype {arr.dtype}")
    if arr.shape != (n, n_models):
        raise ValueError(
            f"row_mask must have shape [n, K] = [{n}, {n_models}], got {list(arr.shape)}"
        )
    empty = np.flatnonzero(~arr.any(axis=0))
    if empty.size:
        raise ValueError(f"row_mask gives model(s) {empty[:5].tolist()} no rows to train on")
    return torch.from_numpy(np.ascontiguousarray(arr))


def initial_model(
    model: ModelSpec | StackedModel, X: Tensor, n_models: int, seed: int
) -> StackedModel:
    """A fresh stack for a spec, or a copy of a warm start (never the caller's object)."""
    input_shape = tuple(X.shape[1:])
    if isinstance(model, ModelSpec):
        model.check_input(input_shape)
        return build_model(model, input_shape=input_shape, n_models=n_models, X_stats=X, seed=seed)
    if not isinstance(model, StackedModel):
        raise ValueError(f"model must be a ModelSpec or a StackedModel, got {type(model).__name__}")
    if model.input_shape != input_shape:
        raise ValueError(
            f"the warm-start model takes inputs of shape {model.input_shape}, X has {input_shape}"
        )
    if model.n_models not in (1, n_models):
        raise ValueError(
            f"the warm-start model stacks {model.n_models} models but costs has {n_models} tables "
            "(it must stack 1, broadcast to every table, or exactly as many)"
        )
    # A warm start keeps its own mean/std: its weights live in that standardized space.
    indices = [0] * n_models if model.n_models == 1 else list(range(n_models))
    return model.select(indices).to("cpu", torch.float32)


def derive_seed(seed: int, stream: int, epoch: int) -> int:
    """An independent 63-bit seed per (seed, stream, epoch)."""
    state = np.random.SeedSequence([seed, stream, epoch]).generate_state(1, dtype=np.uint64)
    return int(state[0]) & ((1 << 63) - 1)


def seeded_generator(device: torch.device, seed: int) -> torch.Generator:
    return torch.Generator(device=device).manual_seed(seed)


def costs_by_label(costs: Tensor) -> Tensor:
    """[K, pred, true] -> [true, pred, K], so ``table[y]`` gathers every example's costs for all
    K models in one index op: [..., 2 (pred), K] (``true`` ranges over the row groups when there
    are more than two)."""
    return costs.permute(2, 1, 0).contiguous()


def loss_matrix(surrogate: Surrogate, scores: Tensor, cost: Tensor) -> Tensor:
    """Per-example, per-model surrogate loss [n, K] from gathered costs [n, 2, K]."""
    return cost_sensitive_loss(surrogate, scores.float(), cost[:, 1], cost[:, 0])


def full_batch_rows(model: StackedModel, n: int, device: torch.device | None = None) -> int:
    """Rows per chunk of a full-batch pass, so the widest activation stays bounded."""
    spec = model.spec
    if spec.kind == "linear":
        width = 1
    elif spec.kind == "mlp":
        width = max(spec.hidden)
    else:
        width = spec.channels[0] * model.input_shape[1] * model.input_shape[2]
    budget = (
        _FULL_BATCH_ELEMENTS_CUDA
        if device is not None and device.type == "cuda"
        else _FULL_BATCH_ELEMENTS
    )
    return max(1, min(n, budget // (width * model.n_models)))


def autocast(device: torch.device, enabled: bool, *, cache_enabled: bool = True) -> Any:
    """bf16 autocast on CUDA when ``enabled``, else nothing. ``cache_enabled=False`` for code
    that torch.compile traces, which cannot keep autocast's cast cache."""
    if enabled and device.type == "cuda":
        return torch.autocast(device_type="cuda", dtype=torch.bfloat16, cache_enabled=cache_enabled)
    return nullcontext()


@torch.no_grad()
def mean_loss(
    model: StackedModel,
    X: Tensor,
    y: Tensor,
    table: Tensor,
    surrogate: Surrogate,
    *,
    device: torch.device,
    amp: bool,
    row_mask: Tensor | None = None,
) -> Tensor:
    """Mean training surrogate loss per model at the final weights (no augmentation), over
    each model's own rows when a ``row_mask`` [n, K] (0/1 floats) says which."""
    n = X.shape[0]
    rows = full_batch_rows(model, n, device)
    total = torch.zeros(model.n_models, device=device, dtype=torch.float64)
    for start in range(0, n, rows):
        xb = X[start : start + rows]
        with autocast(device, amp):
            scores = model(xb)
        losses = loss_matrix(surrogate, scores, table[y[start : start + rows]])
        if row_mask is not None:
            losses = losses * row_mask[start : start + rows]
        total += losses.sum(0, dtype=torch.float64)
    return total / rows_per_model(row_mask, n)


def rows_per_model(row_mask: Tensor | None, n: int) -> Tensor | float:
    """How many rows each model trains on: [K] counts under a mask, else ``n``."""
    if row_mask is None:
        return float(n)
    return row_mask.sum(0, dtype=torch.float64)
