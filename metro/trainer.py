"""Fit K cost-sensitive models, one per cost table, in one pass over the data.

For cost table k (``costs[k, pred, true]``, index 0 = negative, 1 = positive) and example i the
surrogate loss is ``C_k(+1, y_i) Phi(-h_k(x_i)) + C_k(-1, y_i) Phi(h_k(x_i))``; the training
objective is its mean over examples summed over the K models, plus ``weight_decay / 2`` times the
squared norm of the weights. The K models share no parameters, so the gradient of the sum with
respect to model k is the gradient of model k's own objective: one forward/backward pass per
batch serves all K fits, and fitting K tables at once gives the K separate fits (up to float
round-off).

Two optimizers:

* ``lbfgs`` (default for linear models): full-batch L-BFGS run *per model* on the stack. Each
  model keeps its own curvature history, step length and stopping test, so the block-diagonal
  structure is used exactly: a hard cost table does not slow down or perturb an easy one, and a
  model that has converged is frozen while the others go on. One pass over the data evaluates all
  K line-search trials at once; for linear models an iteration reads the data twice (the scores'
  change along the search direction, then the gradient) however many trials it takes.
* ``sgd`` (default otherwise): the paper's recipe, minibatch SGD with Nesterov momentum, weight
  decay and a cosine learning-rate decay over all steps. Every epoch uses one permutation shared by
  all K models; on CUDA the data stays resident on the device and the epoch loop never syncs.

Randomness comes from explicit generators seeded per epoch from (seed, epoch), so a run resumed
from a checkpoint repeats the uninterrupted run exactly and the global RNG is never touched.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field, fields
from functools import partial
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from metro.device import resolve_device
from metro.models import ModelSpec, StackedModel, build_model
from metro.surrogates import Surrogate, cost_sensitive_loss, get_surrogate

__all__ = [
    "OPTIMIZERS",
    "FitResult",
    "TrainingCancelled",
    "TrainingConfig",
    "TrainingEvent",
    "augment_images",
    "fit_cost_sensitive",
    "predict_scores",
]

OPTIMIZERS: tuple[str, ...] = ("auto", "lbfgs", "sgd")
WARM_STARTS: tuple[str, ...] = ("auto", "always", "never")
_DEVICE_RE = re.compile(r"^(auto|cpu|cuda(:\d+)?)$")
_CHECKPOINT_FORMAT = 1
# Config fields that shape the optimization trajectory; a checkpoint only resumes a fit that
# agrees on all of them (device and mixed precision may change between runs).
_TRAJECTORY_FIELDS = (
    "optimizer", "max_iter", "tol", "weight_decay", "lr", "momentum", "batch_size", "epochs",
    "augment", "seed",
)  # fmt: skip

# L-BFGS: curvature pairs kept per model, Armijo constant, backtracking evaluations per iteration.
_LBFGS_HISTORY = 10
_ARMIJO_C1 = 1e-4
_MAX_BACKTRACKS = 25
# Curvature pairs with s'y below this are skipped (as torch.optim.LBFGS does) so that the inverse
# Hessian estimate stays positive definite on non-convex surrogates.
_MIN_CURVATURE = 1e-10
# Activations (floats) per chunk of a full-batch pass, bounding its memory.
_FULL_BATCH_ELEMENTS = 1 << 24
# Pixels of zero padding before the random crop (the standard CIFAR augmentation).
_CROP_PAD = 4
# Seed streams derived from the user's seed.
_PERM_STREAM, _AUGMENT_STREAM = 1, 2
# L-BFGS state besides the history.
_LBFGS_POINT = ("f", "g", "loss", "active")

# emit(step, total_steps, per-model losses, checkpoint factory or None); the factory is only
# called when a checkpoint is due, so steps without one copy nothing to the host.
_Emit = Callable[[int, int, Tensor, Callable[[], dict[str, Any]] | None], None]
_MakeCheckpoint = Callable[[int, Mapping[str, Tensor]], dict[str, Any]]


# -- configuration ------------------------------------------------------------------------------
def _check_int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return int(value)


def _check_float(
    name: str, value: Any, *, low: float = 0.0, low_open: bool = False, high: float = math.inf
) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise ValueError(f"{name} must be a number, got {value!r}")
    v = float(value)
    too_low = v <= low if low_open else v < low
    if not math.isfinite(v) or too_low or v >= high:
        bounds = f"{'>' if low_open else '>='} {low:g}"
        if high < math.inf:
            bounds += f" and < {high:g}"
        raise ValueError(f"{name} must be a finite number {bounds}, got {value!r}")
    return v


def _check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{name} must be true or false, got {value!r}")
    return bool(value)


@dataclass(frozen=True)
class TrainingConfig:
    """How to fit. ``optimizer="auto"`` picks L-BFGS for linear models and SGD otherwise;
    ``max_iter``/``tol`` drive L-BFGS, the SGD fields follow the paper (lr 0.02, batch 1024,
    weight decay 1e-4, Nesterov momentum 0.9, cosine decay over 100 epochs).

    ``warm_start`` says whether a search may start a fit from an earlier one (bisection's next
    step, the final refit): ``"auto"`` does so for L-BFGS only, where it saves iterations and
    ends at the same optimum of a convex problem. An SGD fit runs its fixed number of epochs
    anyway, so a warm start saves nothing there; it restarts the learning-rate schedule at its
    peak on a model whose margins are already large (which made the exponential surrogate
    diverge) and gives later fits more training than earlier ones, so ``"auto"`` starts every SGD
    fit from the same seeded initialization."""

    optimizer: str = "auto"
    max_iter: int = 200
    tol: float = 1e-7
    weight_decay: float = 1e-4
    lr: float = 0.02
    momentum: float = 0.9
    batch_size: int = 1024
    epochs: int = 100
    augment: bool = False
    device: str = "auto"
    mixed_precision: bool = True
    seed: int = 0
    warm_start: str = "auto"

    def __post_init__(self) -> None:
        if not isinstance(self.optimizer, str) or self.optimizer not in OPTIMIZERS:
            raise ValueError(
                f"unknown optimizer {self.optimizer!r}; expected one of {', '.join(OPTIMIZERS)}"
            )
        if not isinstance(self.warm_start, str) or self.warm_start not in WARM_STARTS:
            raise ValueError(
                f"unknown warm_start {self.warm_start!r}; expected one of {', '.join(WARM_STARTS)}"
            )
        if not isinstance(self.device, str) or not _DEVICE_RE.match(self.device):
            raise ValueError(
                f"device must be 'auto', 'cpu', 'cuda' or 'cuda:<index>', got {self.device!r}"
            )
        checked: dict[str, Any] = {
            "max_iter": _check_int("max_iter", self.max_iter, 1),
            "tol": _check_float("tol", self.tol),
            "weight_decay": _check_float("weight_decay", self.weight_decay),
            "lr": _check_float("lr", self.lr, low_open=True),
            "momentum": _check_float("momentum", self.momentum, high=1.0),
            "batch_size": _check_int("batch_size", self.batch_size, 1),
            "epochs": _check_int("epochs", self.epochs, 1),
            "augment": _check_bool("augment", self.augment),
            "mixed_precision": _check_bool("mixed_precision", self.mixed_precision),
            "seed": _check_int("seed", self.seed, 0),
        }
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    def resolve_optimizer(self, spec: ModelSpec) -> str:
        if self.optimizer != "auto":
            return self.optimizer
        return "lbfgs" if spec.kind == "linear" else "sgd"

    def uses_warm_start(self, spec: ModelSpec) -> bool:
        """Whether a fit of ``spec`` offered an earlier fit as its start should take it."""
        if self.warm_start != "auto":
            return self.warm_start == "always"
        return self.resolve_optimizer(spec) == "lbfgs"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrainingConfig:
        if not isinstance(data, Mapping):
            raise ValueError(f"a training config must be a mapping, got {type(data).__name__}")
        unknown = set(data) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"unknown training config field(s) {sorted(unknown)}")
        return cls(**dict(data))


class TrainingCancelled(Exception):  # noqa: N818 - the public name of the API
    """Raised by a callback to stop a fit; it propagates out of :func:`fit_cost_sensitive`."""


@dataclass(frozen=True)
class TrainingEvent:
    """Progress after one step (an L-BFGS iteration or an SGD epoch). ``loss`` is the mean over
    the K models of their mean training surrogate loss (without weight decay); ``checkpoint`` is
    set every ``checkpoint_every`` steps."""

    step: int
    total_steps: int
    loss: float
    n_models: int
    checkpoint: dict[str, Any] | None = None


@dataclass
class FitResult:
    """``surrogate_loss`` is each model's final mean training surrogate loss (no weight decay),
    +inf where that model's fit diverged; ``diverged`` marks those models (see
    :func:`fit_cost_sensitive`)."""

    model: StackedModel  # on CPU, eval mode
    surrogate_loss: np.ndarray  # [K]
    n_steps: int
    seconds: float
    checkpoint: dict[str, Any] | None
    diverged: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))  # [K]

    def __post_init__(self) -> None:
        if self.diverged.size == 0:
            self.diverged = ~np.isfinite(np.asarray(self.surrogate_loss, dtype=np.float64))


# -- input validation ---------------------------------------------------------------------------
def _as_features(X: Any) -> Tensor:
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


def _as_labels(y: Any, n: int) -> Tensor:
    arr = y.detach().cpu().numpy() if isinstance(y, Tensor) else np.asarray(y)
    if arr.ndim != 1:
        raise ValueError(f"y must be one-dimensional, got shape {list(arr.shape)}")
    if arr.shape[0] != n:
        raise ValueError(f"X has {n} rows but y has {arr.shape[0]} labels")
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"y must hold labels 0 and 1, got dtype {arr.dtype}")
    if not np.all((arr == 0) | (arr == 1)):
        bad = np.unique(arr[(arr != 0) & (arr != 1)])[:5]
        raise ValueError(f"y must hold labels 0 (negative) and 1 (positive), got {bad.tolist()}")
    return torch.from_numpy(arr.astype(np.int64))


def _as_costs(costs: Any) -> Tensor:
    arr = costs.detach().cpu().double().numpy() if isinstance(costs, Tensor) else np.asarray(costs)
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"costs must be numbers, got dtype {arr.dtype}")
    if arr.ndim != 3 or arr.shape[1:] != (2, 2) or arr.shape[0] < 1:
        raise ValueError(
            "costs must have shape [K, 2, 2] (K >= 1, indexed [k, pred, true]), "
            f"got {list(arr.shape)}"
        )
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError("costs must be finite and non-negative")
    return torch.from_numpy(arr.astype(np.float32))


def _initial_model(
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


# -- shared pieces ------------------------------------------------------------------------------
def _derive_seed(seed: int, stream: int, epoch: int) -> int:
    """An independent 63-bit seed per (seed, stream, epoch)."""
    state = np.random.SeedSequence([seed, stream, epoch]).generate_state(1, dtype=np.uint64)
    return int(state[0]) & ((1 << 63) - 1)


def _generator(device: torch.device, seed: int) -> torch.Generator:
    return torch.Generator(device=device).manual_seed(seed)


def _costs_by_label(costs: Tensor) -> Tensor:
    """[K, pred, true] -> [true, pred, K], so ``table[y]`` gathers every example's costs for all
    K models in one index op: [..., 2 (pred), K]."""
    return costs.permute(2, 1, 0).contiguous()


def _loss_matrix(surrogate: Surrogate, scores: Tensor, cost: Tensor) -> Tensor:
    """Per-example, per-model surrogate loss [n, K] from gathered costs [n, 2, K]."""
    return cost_sensitive_loss(surrogate, scores.float(), cost[:, 1], cost[:, 0])


def augment_images(images: Tensor, *, generator: torch.Generator, pad: int = _CROP_PAD) -> Tensor:
    """Random ``pad``-pixel translation (zero padding, then a crop back to size) and random
    horizontal flip of a batch [n, C, H, W], with tensor ops on the batch's device.

    The trainer applies it to standardized images, so the zero padding is the channel mean.
    """
    if images.ndim != 4:
        raise ValueError(f"augmentation needs images [n, C, H, W], got {list(images.shape)}")
    n, C, H, W = images.shape
    device = images.device
    padded = F.pad(images, (pad, pad, pad, pad))
    dy = torch.randint(0, 2 * pad + 1, (n,), generator=generator, device=device)
    dx = torch.randint(0, 2 * pad + 1, (n,), generator=generator, device=device)
    flip = torch.randint(0, 2, (n,), generator=generator, device=device).bool()
    rows = dy[:, None] + torch.arange(H, device=device)
    cols = dx[:, None] + torch.arange(W, device=device)
    cols = torch.where(flip[:, None], cols.flip(1), cols)  # a flip reads the crop right to left
    batch = torch.arange(n, device=device)[:, None, None, None]
    channel = torch.arange(C, device=device)[None, :, None, None]
    out = padded[batch, channel, rows[:, None, :, None], cols[:, None, None, :]]
    if images.is_contiguous(memory_format=torch.channels_last) and not images.is_contiguous():
        return out.contiguous(memory_format=torch.channels_last)  # keep the caller's layout
    return out


def _full_batch_rows(model: StackedModel, n: int) -> int:
    """Rows per chunk of a full-batch pass, so the widest activation stays bounded."""
    spec = model.spec
    if spec.kind == "linear":
        width = 1
    elif spec.kind == "mlp":
        width = max(spec.hidden)
    else:
        width = spec.channels[0] * model.input_shape[1] * model.input_shape[2]
    return max(1, min(n, _FULL_BATCH_ELEMENTS // (width * model.n_models)))


def _autocast(device: torch.device, enabled: bool) -> Any:
    if enabled and device.type == "cuda":
        return torch.autocast(device_type="cuda", dtype=torch.bfloat16)
    return nullcontext()


# -- checkpoints --------------------------------------------------------------------------------
def _checkpoint(
    *,
    model: StackedModel,
    optimizer_name: str,
    step: int,
    total_steps: int,
    n_examples: int,
    config: TrainingConfig,
    costs: Tensor,
    state: Mapping[str, Tensor],
) -> dict[str, Any]:
    """Everything needed to resume: tensors in one dict, JSON scalars in the other (so it maps
    directly to a safetensors file plus a JSON document; no pickling)."""
    tensors = {f"model.{k}": v for k, v in model.tensors().items()}
    tensors["costs"] = costs.detach().cpu().clone()
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


def _check_checkpoint(
    checkpoint: Any,
    *,
    optimizer_name: str,
    n_models: int,
    n_examples: int,
    config: TrainingConfig,
    costs: Tensor,
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


def _load_model_tensors(model: StackedModel, tensors: Mapping[str, Tensor]) -> None:
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


# -- L-BFGS -------------------------------------------------------------------------------------
class _Flat:
    """The stack's parameters as one matrix theta [K, P] (row k = model k), so the per-model
    L-BFGS algebra is a handful of batched row operations."""

    def __init__(self, model: StackedModel) -> None:
        self.model = model
        self.params = dict(model.named_parameters())
        shapes = model.per_model_shapes()
        self.shapes = [shapes[name] for name in self.params]
        self.sizes = [math.prod(s) for s in self.shapes]
        mask = [
            torch.full((size,), 1.0 if model.is_weight(name) else 0.0)
            for name, size in zip(self.params, self.sizes, strict=True)
        ]
        self.decay_mask = torch.cat(mask).to(model.mean.device)

    def gather(self, tensors: Mapping[str, Tensor]) -> Tensor:
        K = self.model.n_models
        return torch.cat(
            [self.model.unstack(name, tensors[name]).reshape(K, -1) for name in self.params], dim=1
        )

    def pack(self) -> Tensor:
        return self.gather({k: p.detach() for k, p in self.params.items()})

    def pack_grad(self) -> Tensor:
        grads = {
            name: p.grad if p.grad is not None else torch.zeros_like(p)
            for name, p in self.params.items()
        }
        return self.gather(grads)

    def load(self, theta: Tensor) -> None:
        K = self.model.n_models
        chunks = theta.split(self.sizes, dim=1)
        with torch.no_grad():
            for (name, p), chunk, shape in zip(
                self.params.items(), chunks, self.shapes, strict=True
            ):
                p.copy_(self.model.restack(name, chunk.reshape(K, *shape)))


# Rows per float32 partial sum in _column_sums: short enough that a partial sum keeps float32's
# precision, long enough that the float64 pass over the partials is negligible.
_PARTIAL_ROWS = 256


def _column_sums(values: Tensor) -> Tensor:
    """Column sums of [m, K] values in float64 precision without a float64 copy of the values:
    float32 sums over blocks of rows, then float64 over the blocks (10x cheaper than
    ``sum(dtype=float64)``, which converts every element first)."""
    m, K = values.shape
    full = m - m % _PARTIAL_ROWS
    total = values[full:].sum(0, dtype=torch.float64)
    if full:
        partial = values[:full].reshape(-1, _PARTIAL_ROWS, K).sum(1)
        total = total + partial.sum(0, dtype=torch.float64)
    return total


def _row_sums(values: Tensor) -> Tensor:
    """Row sums of [K, m] values in float64 precision, as :func:`_column_sums`."""
    K, m = values.shape
    full = m - m % _PARTIAL_ROWS
    total = values[:, full:].sum(1, dtype=torch.float64)
    if full:
        partial = values[:, :full].reshape(K, -1, _PARTIAL_ROWS).sum(2)
        total = total + partial.sum(1, dtype=torch.float64)
    return total


class _Objective:
    """Per-model objective f_k(theta_k) = mean_i L_ik + wd/2 |w_k|^2 of the full training set, for
    all K models at once, with the line-search protocol the L-BFGS loop uses:
    ``start_line(theta, d)``, then ``trial(t)`` for per-model steps t [K] (returns objective and
    data loss [K]), ``accept(ok)`` to keep the last trial for the models in ``ok``, and
    ``finish_line(step, theta)`` for the gradient [K, P] at the kept points.

    This generic version runs the model forward and backward over the (pre-standardized,
    device-resident) data for every trial.

    Loss values are accumulated in float64 (the elementwise work stays float32): near the optimum
    an iteration changes the objective by less than a float32 mean can resolve (~1e-7 relative),
    and the Armijo test and the stopping rule would then decide on round-off."""

    def __init__(
        self,
        *,
        model: StackedModel,
        flat: _Flat,
        Z: Tensor,
        y: Tensor,
        table: Tensor,
        surrogate: Surrogate,
        weight_decay: float,
    ) -> None:
        self.model, self.flat, self.Z, self.surrogate = model, flat, Z, surrogate
        self.cost = table[y]  # [n, 2, K]: every example's costs, one gather for the whole fit
        self.decay = weight_decay * flat.decay_mask
        self.rows = _full_batch_rows(model, Z.shape[0])
        self._theta = self._d = self._g_trial = self._g_kept = torch.empty(0)

    def regularizer(self, theta: Tensor) -> Tensor:
        return 0.5 * (self.decay * theta.square()).sum(1, dtype=torch.float64)

    def evaluate(self, theta: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """(objective [K], gradient [K, P], data loss [K]) at theta."""
        n = self.Z.shape[0]
        self.flat.load(theta)
        self.model.zero_grad(set_to_none=True)
        loss = torch.zeros(self.model.n_models, device=theta.device, dtype=torch.float64)
        with torch.enable_grad():
            for start in range(0, n, self.rows):
                rows = slice(start, start + self.rows)
                scores = self.model(self.Z[rows], standardized=True)
                losses = _loss_matrix(self.surrogate, scores, self.cost[rows])
                # Backward in float32 (d mean / d loss_ik = 1/n), the value summed in float64.
                losses.backward(torch.full((), 1.0 / n, device=losses.device).expand_as(losses))
                loss += _column_sums(losses.detach()) / n
        grad = self.flat.pack_grad() + self.decay * theta
        return loss + self.regularizer(theta), grad, loss

    def refresh(self, theta: Tensor) -> None:
        """Recompute anything cached about the iterate ``theta`` from theta alone."""

    def start_line(self, theta: Tensor, d: Tensor) -> None:
        self._theta, self._d = theta, d
        self._g_kept = torch.zeros_like(theta)

    def trial(self, t: Tensor) -> tuple[Tensor, Tensor]:
        f, self._g_trial, loss = self.evaluate(self._theta + t[:, None] * self._d)
        return f, loss

    def accept(self, ok: Tensor) -> None:
        self._g_kept = torch.where(ok[:, None], self._g_trial, self._g_kept)

    def finish_line(self, step: Tensor, theta: Tensor) -> Tensor:
        """End the line search with per-model steps ``step`` (0: nothing accepted) landing at
        ``theta``; returns the gradient there (rows that accepted nothing are unused)."""
        return self._g_kept


@dataclass
class _LabelGroup:
    """The examples of one label for the linear objective. The group's margins, [K, n_l], are
    m = sign * (W' Z' + b) = W' (sign * Z') + sign * b, with the sign chosen so that its first
    surrogate term is Phi(m) itself (no negation pass over the margins)."""

    rows: Tensor  # sign * Z' for the group's examples, [d, n_l] (examples along the columns)
    sign: float
    terms: list[tuple[Tensor, bool]]  # (cost [K], whether the term is Phi(-m) rather than Phi(m))


class _LinearObjective(_Objective):
    """The objective of a linear stack, h = Z W + b, exploiting linearity: along a search
    direction d the scores are H + t U with U = Z d_W + d_b, so an iteration costs two GEMMs
    (U, and G Z for the gradient) however many trial steps the K line searches take, and a trial
    only does elementwise work on the [K, n] scores.

    The examples are split by label once. Within a label group every example has the same costs,
    so the group's loss is C(+1, y) * sum_i Phi(-h_i) + C(-1, y) * sum_i Phi(h_i) per model: the
    same value as summing ``cost_sensitive_loss`` over the rows, with the costs applied to [K]
    sums instead of [n, K] arrays, and a term whose cost is zero for every model (one term per
    label under the "minimal" shift) is not evaluated at all. Elementwise passes over the scores
    are half of this objective's cost, and this halves them."""

    def __init__(
        self,
        *,
        model: StackedModel,
        flat: _Flat,
        Z: Tensor,
        y: Tensor,
        table: Tensor,
        surrogate: Surrogate,
        weight_decay: float,
    ) -> None:
        self.model, self.flat, self.surrogate = model, flat, surrogate
        self.decay = weight_decay * flat.decay_mask
        self.n, self.d = Z.shape
        self.groups: list[_LabelGroup] = []
        for label in (0, 1):
            # Phi(-h) is the term for predicting +1, Phi(h) for predicting -1.
            costs = [(table[label, 1], -1.0), (table[label, 0], 1.0)]
            used = [(cost, side) for cost, side in costs if bool((cost > 0).any())]
            mask = y == label
            if not used or not bool(mask.any()):
                continue
            sign = used[0][1]
            terms = [(cost, side != sign) for cost, side in used]
            # Margins are kept [K, n_l]: W' Z' reads the data in its fast layout (~30% quicker
            # than Z W on CPU for K=21), and each model's margins are contiguous.
            rows = (sign * Z[mask]).T.contiguous()
            self.groups.append(_LabelGroup(rows=rows, sign=sign, terms=terms))
        self.H: list[Tensor] = []  # margins per group at the current iterate
        self.U: list[Tensor] = []  # margin change per unit step along the current direction
        self.S: list[Tensor] = []  # margins at the last trial
        self.G_trial: list[Tensor] = []
        self.G_kept: list[Tensor] = []
        self._theta = self._d = self._t = torch.empty(0)
        self._trials = 0

    def _loss_and_grad(self, M: list[Tensor]) -> tuple[Tensor, list[Tensor]]:
        """Data loss [K] and its gradient with respect to each group's margins."""
        loss = torch.zeros(self.model.n_models, device=self.decay.device, dtype=torch.float64)
        grads = []
        with torch.enable_grad():
            for margins, group in zip(M, self.groups, strict=True):
                m = margins.detach().requires_grad_(True)
                phis, weights = [], []
                for cost, flipped in group.terms:
                    phi = self.surrogate.phi(-m if flipped else m)
                    loss += cost * _row_sums(phi.detach()) / self.n
                    phis.append(phi)
                    weights.append((cost / self.n)[:, None].expand_as(phi))  # d loss / d phi
                # Backward from Phi with the costs as output gradients: float32, no [n, K] cost.
                (grad,) = torch.autograd.grad(phis, m, grad_outputs=weights)
                grads.append(grad)
        return loss, grads

    def _param_grad(self, G: list[Tensor], theta: Tensor) -> Tensor:
        grad_w = torch.zeros_like(theta[:, : self.d])
        grad_b = torch.zeros_like(theta[:, self.d])
        for g, group in zip(G, self.groups, strict=True):
            grad_w += g @ group.rows.T  # [K, d]; the rows carry the margin's sign
            grad_b += group.sign * g.sum(1)
        return torch.cat([grad_w, grad_b[:, None]], dim=1) + self.decay * theta

    def _affine(self, theta: Tensor) -> list[Tensor]:
        W, b = theta[:, : self.d], theta[:, self.d, None]
        return [torch.addmm(group.sign * b, W, group.rows) for group in self.groups]

    def evaluate(self, theta: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        self.H = self._affine(theta)
        loss, G = self._loss_and_grad(self.H)
        return loss + self.regularizer(theta), self._param_grad(G, theta), loss

    def refresh(self, theta: Tensor) -> None:
        # The margins are carried along as H + t U between iterations; at a checkpoint they are
        # recomputed from theta, exactly as a run resumed from that checkpoint computes them.
        self.H = self._affine(theta)

    def start_line(self, theta: Tensor, d: Tensor) -> None:
        self._theta, self._d = theta, d
        self.U = self._affine(d)
        self._trials = 0

    def trial(self, t: Tensor) -> tuple[Tensor, Tensor]:
        self._t = t
        self.S = [torch.addcmul(h, u, t[:, None]) for h, u in zip(self.H, self.U, strict=True)]
        loss, self.G_trial = self._loss_and_grad(self.S)
        return loss + self.regularizer(self._theta + t[:, None] * self._d), loss

    def accept(self, ok: Tensor) -> None:
        # Usually every model accepts its first trial: keep that gradient without a copy.
        self._trials += 1
        if self._trials == 1:
            self.G_kept = self.G_trial
        else:
            self.G_kept = [
                torch.where(ok[:, None], new, kept)
                for new, kept in zip(self.G_trial, self.G_kept, strict=True)
            ]

    def finish_line(self, step: Tensor, theta: Tensor) -> Tensor:
        # H + step U, the same op as the accepted trials, so the margins equal them bit for bit
        # (step 0, nothing accepted, leaves a model's margins as they were). When the last trial
        # used exactly these steps its margins are reused as they are.
        if torch.equal(step, self._t):
            self.H = self.S
        else:
            self.H = [
                torch.addcmul(h, u, step[:, None]) for h, u in zip(self.H, self.U, strict=True)
            ]
        return self._param_grad(self.G_kept, theta)


class _History:
    """Each model's own L-BFGS memory: the last few (s, y) pairs, oldest first. Empty slots hold
    zero vectors and rho = 0, which makes them no-ops in the two-loop recursion, so models with
    different history lengths share one batched computation."""

    def __init__(self, K: int, P: int, device: torch.device) -> None:
        self.S = torch.zeros(K, _LBFGS_HISTORY, P, device=device)
        self.Y = torch.zeros_like(self.S)
        self.rho = torch.zeros(K, _LBFGS_HISTORY, device=device)
        self.gamma = torch.ones(K, device=device)  # initial inverse-Hessian scale s'y / y'y
        self.length = torch.zeros(K, dtype=torch.int64, device=device)

    def state(self) -> dict[str, Tensor]:
        return {
            "S": self.S, "Y": self.Y, "rho": self.rho, "gamma": self.gamma, "n_hist": self.length,
        }  # fmt: skip

    def load(self, state: Mapping[str, Tensor], device: torch.device) -> None:
        if state["S"].shape != self.S.shape:
            raise ValueError("the checkpoint's L-BFGS history does not match the model")
        self.S = state["S"].to(device, torch.float32)
        self.Y = state["Y"].to(device, torch.float32)
        self.rho = state["rho"].to(device, torch.float32)
        self.gamma = state["gamma"].to(device, torch.float32)
        self.length = state["n_hist"].to(device, torch.int64)

    def direction(self, g: Tensor) -> Tensor:
        """-H_k g_k for every model k (the two-loop recursion, batched over models)."""
        q = g.clone()
        alpha = torch.zeros_like(self.rho)
        for i in range(_LBFGS_HISTORY - 1, -1, -1):
            alpha[:, i] = self.rho[:, i] * (self.S[:, i] * q).sum(1)
            q -= alpha[:, i, None] * self.Y[:, i]
        r = self.gamma[:, None] * q
        for i in range(_LBFGS_HISTORY):
            beta = self.rho[:, i] * (self.Y[:, i] * r).sum(1)
            r += self.S[:, i] * (alpha[:, i] - beta)[:, None]
        return -r

    def push(self, mask: Tensor, s: Tensor, y: Tensor, sy: Tensor) -> None:
        """Append (s, y) for the models in ``mask``, dropping their oldest pair."""
        m3, m2 = mask[:, None, None], mask[:, None]
        self.S = torch.where(m3, torch.cat([self.S[:, 1:], s[:, None]], 1), self.S)
        self.Y = torch.where(m3, torch.cat([self.Y[:, 1:], y[:, None]], 1), self.Y)
        rho_new = torch.where(mask, 1.0 / torch.where(mask, sy, 1.0), 0.0)
        self.rho = torch.where(m2, torch.cat([self.rho[:, 1:], rho_new[:, None]], 1), self.rho)
        self.gamma = torch.where(mask, sy / (y * y).sum(1).clamp_min(1e-30), self.gamma)
        self.length = torch.where(mask, (self.length + 1).clamp(max=_LBFGS_HISTORY), self.length)

    def reset(self, mask: Tensor) -> None:
        m3, m2 = mask[:, None, None], mask[:, None]
        self.S = torch.where(m3, 0.0, self.S)
        self.Y = torch.where(m3, 0.0, self.Y)
        self.rho = torch.where(m2, 0.0, self.rho)
        self.gamma = torch.where(mask, 1.0, self.gamma)
        self.length = torch.where(mask, 0, self.length)


def _fit_lbfgs(
    *,
    model: StackedModel,
    X: Tensor,
    y: Tensor,
    table: Tensor,
    surrogate: Surrogate,
    config: TrainingConfig,
    device: torch.device,
    resume: tuple[dict[str, Tensor], int] | None,
    emit: _Emit,
    checkpoint_every: int | None,
    make_checkpoint: _MakeCheckpoint,
) -> tuple[Tensor, int, dict[str, Any] | None]:
    """Per-model L-BFGS with a batched backtracking (Armijo) line search. Model k's iterates
    depend only on its own objective, so a K-stack follows the K separate runs; a model stops
    when its gradient, step or objective change falls under ``tol`` and is then frozen."""
    K = model.n_models
    flat = _Flat(model)
    with torch.no_grad():
        Z = model.standardize(X)  # once: the data is fixed, only the weights move
    kind = _LinearObjective if model.spec.kind == "linear" else _Objective
    objective = kind(
        model=model, flat=flat, Z=Z, y=y, table=table, surrogate=surrogate,
        weight_decay=config.weight_decay,
    )  # fmt: skip
    del Z  # the objective keeps what it needs (the linear one regroups the rows by label)
    theta = flat.pack()
    history = _History(K, theta.shape[1], device)
    if resume is None:
        f, g, loss = objective.evaluate(theta)
        active = g.abs().amax(1) > config.tol
        step = 0
    else:
        state, step = resume
        missing = [k for k in (*_LBFGS_POINT, *history.state()) if k not in state]
        if missing:
            raise ValueError(f"the checkpoint lacks L-BFGS state {missing}")
        f, loss = (state[k].to(device, torch.float64) for k in ("f", "loss"))
        g = state["g"].to(device, torch.float32)
        active = state["active"].to(device).bool()
        if g.shape != theta.shape:
            raise ValueError("the checkpoint's L-BFGS state does not match the model")
        history.load(state, device)
        objective.refresh(theta)

    def state_now() -> dict[str, Tensor]:
        return {"f": f, "g": g, "loss": loss, "active": active.to(torch.uint8), **history.state()}

    while step < config.max_iter and bool(active.any()):
        d = history.direction(g)
        gtd = (g * d).sum(1)
        # Round-off can cost a descent direction; restart those models from steepest descent.
        lost = gtd >= 0
        if bool(lost.any()):
            history.reset(lost)
            d = torch.where(lost[:, None], -g, d)
            gtd = (g * d).sum(1)
        # Without history the step is scaled like torch.optim.LBFGS's first step.
        first = torch.clamp(1.0 / g.abs().sum(1).clamp_min(1e-30), max=1.0)
        t = torch.where(history.length == 0, first, 1.0)
        t = torch.where(active, t, 0.0)
        # Backtracking line search for every model at once: each trial evaluates all K, and each
        # model accepts (Armijo) or shrinks its own step.
        objective.start_line(theta, d)
        pending = active.clone()
        new_f, new_loss, step_t = f, loss, torch.zeros_like(t)
        for _ in range(_MAX_BACKTRACKS):
            f_t, loss_t = objective.trial(t)
            ok = pending & torch.isfinite(f_t) & (f_t <= f + _ARMIJO_C1 * t * gtd)
            objective.accept(ok)
            new_f = torch.where(ok, f_t, new_f)
            new_loss = torch.where(ok, loss_t, new_loss)
            step_t = torch.where(ok, t, step_t)
            pending = pending & ~ok
            if not bool(pending.any()):
                break
            # Safeguarded quadratic interpolation of f along d; halve when it is not usable.
            denom = 2.0 * (f_t - f - gtd * t)
            t_quad = -gtd * t * t / denom
            usable = torch.isfinite(t_quad) & (denom > 0)
            shrunk = torch.where(usable, torch.clamp(t_quad, min=0.1 * t, max=0.5 * t), 0.5 * t)
            t = torch.where(pending, shrunk.to(t.dtype), t)
        # Models that accepted nothing (converged, or a failed search) keep theta: step_t = 0.
        new_theta = torch.where(step_t[:, None] > 0, theta + step_t[:, None] * d, theta)
        new_g = torch.where(step_t[:, None] > 0, objective.finish_line(step_t, new_theta), g)
        accepted = active & ~pending
        s = new_theta - theta
        yv = new_g - g
        sy = (s * yv).sum(1)
        history.push(accepted & (sy > _MIN_CURVATURE), s, yv, sy)
        # A failed line search with history: forget it and retry from steepest descent; without
        # history there is nothing left to try, so the model has stalled.
        stalled = pending & (history.length == 0)
        history.reset(pending)
        converged = accepted & (
            (new_g.abs().amax(1) <= config.tol)
            | ((f - new_f).abs() <= config.tol * torch.clamp(f.abs(), min=1.0))
            | (s.abs().amax(1) <= config.tol)
        )
        theta, f, g, loss = new_theta, new_f, new_g, new_loss
        active = active & ~converged & ~stalled
        step += 1
        due = checkpoint_every is not None and step % checkpoint_every == 0
        if due:
            flat.load(theta)
            objective.refresh(theta)
        factory = partial(make_checkpoint, step, state_now()) if due else None
        emit(step, config.max_iter, loss, factory)

    flat.load(theta)
    last = make_checkpoint(step, state_now()) if checkpoint_every is not None else None
    return loss, step, last


# -- SGD ----------------------------------------------------------------------------------------
def _fit_sgd(
    *,
    model: StackedModel,
    X: Tensor,
    y: Tensor,
    table: Tensor,
    surrogate: Surrogate,
    config: TrainingConfig,
    device: torch.device,
    resume: tuple[dict[str, Tensor], int] | None,
    emit: _Emit,
    checkpoint_every: int | None,
    make_checkpoint: _MakeCheckpoint,
) -> tuple[Tensor, int, dict[str, Any] | None, Tensor]:
    """Returns the final losses, the epochs run, the last checkpoint and which models diverged."""
    n, K = X.shape[0], model.n_models
    params = dict(model.named_parameters())
    decayed = [p for name, p in params.items() if model.is_weight(name)]
    plain = [p for name, p in params.items() if not model.is_weight(name)]
    optimizer = torch.optim.SGD(
        [
            {"params": decayed, "weight_decay": config.weight_decay},
            {"params": plain, "weight_decay": 0.0},
        ],
        lr=config.lr,
        momentum=config.momentum,
        nesterov=config.momentum > 0,
    )
    step = 0
    if resume is not None:
        state, step = resume
        for name, p in params.items():
            buf = state.get(f"momentum.{name}")
            if buf is not None:
                if buf.shape != p.shape:
                    raise ValueError(f"the checkpoint's momentum for {name!r} does not match")
                optimizer.state[p]["momentum_buffer"] = buf.to(device, torch.float32).clone()
    if step > config.epochs:
        raise ValueError(f"the checkpoint is at epoch {step}, past the {config.epochs} configured")
    amp = config.mixed_precision and device.type == "cuda"
    # The loss before the first epoch, the reference for divergence (kept in checkpoints so that
    # a resumed fit judges itself as the uninterrupted one would).
    if resume is not None and "initial_loss" in resume[0]:
        initial = resume[0]["initial_loss"].to(device, torch.float64)
    else:
        model.eval()
        initial = _mean_loss(model, X, y, table, surrogate, device=device, amp=amp)

    def state_now() -> dict[str, Tensor]:
        out = {"initial_loss": initial}
        for name, p in params.items():
            buf = optimizer.state.get(p, {}).get("momentum_buffer")
            if buf is not None:
                out[f"momentum.{name}"] = buf
        return out

    batch = config.batch_size
    per_epoch = math.ceil(n / batch)
    total = config.epochs * per_epoch
    images = X.ndim == 4
    last_checkpoint: dict[str, Any] | None = None
    model.train()
    while step < config.epochs:
        epoch = step
        perm = torch.randperm(
            n, generator=_generator(device, _derive_seed(config.seed, _PERM_STREAM, epoch)),
            device=device,
        )  # fmt: skip
        aug_gen = (
            _generator(device, _derive_seed(config.seed, _AUGMENT_STREAM, epoch))
            if config.augment
            else None
        )
        epoch_loss = torch.zeros(K, device=device, dtype=torch.float64)
        for b in range(per_epoch):
            # Cosine decay over every step of the run (a Python float: no device sync).
            progress = (epoch * per_epoch + b) / total
            lr = 0.5 * config.lr * (1.0 + math.cos(math.pi * progress))
            for group in optimizer.param_groups:
                group["lr"] = lr
            idx = perm[b * batch : (b + 1) * batch]
            xb = X[idx]
            if images and device.type == "cuda":
                xb = xb.contiguous(memory_format=torch.channels_last)
            with _autocast(device, amp):
                z = model.standardize(xb)
                if aug_gen is not None:
                    z = augment_images(z, generator=aug_gen)
                scores = model(z, standardized=True)
            losses = _loss_matrix(surrogate, scores, table[y[idx]])
            optimizer.zero_grad(set_to_none=True)
            (losses.sum() / idx.shape[0]).backward()
            optimizer.step()
            epoch_loss += losses.detach().sum(0, dtype=torch.float64)
        step += 1
        due = checkpoint_every is not None and step % checkpoint_every == 0
        factory = partial(make_checkpoint, step, state_now()) if due else None
        emit(step, config.epochs, epoch_loss / n, factory)

    model.eval()
    final = _mean_loss(model, X, y, table, surrogate, device=device, amp=amp)
    if checkpoint_every is not None:
        last_checkpoint = make_checkpoint(step, state_now())
    reference = torch.maximum(initial, _zero_score_loss(y, table, surrogate))
    return final, step, last_checkpoint, _diverged(final, reference)


@torch.no_grad()
def _mean_loss(
    model: StackedModel,
    X: Tensor,
    y: Tensor,
    table: Tensor,
    surrogate: Surrogate,
    *,
    device: torch.device,
    amp: bool,
) -> Tensor:
    """Mean training surrogate loss per model at the final weights (no augmentation)."""
    n = X.shape[0]
    rows = _full_batch_rows(model, n)
    total = torch.zeros(model.n_models, device=device, dtype=torch.float64)
    for start in range(0, n, rows):
        xb = X[start : start + rows]
        with _autocast(device, amp):
            scores = model(xb)
        losses = _loss_matrix(surrogate, scores, table[y[start : start + rows]])
        total += losses.sum(0, dtype=torch.float64)
    return total / n


# -- entry points -------------------------------------------------------------------------------
def fit_cost_sensitive(
    X: Any,
    y: Any,
    costs: Any,
    *,
    model: ModelSpec | StackedModel,
    surrogate: Surrogate | str,
    config: TrainingConfig = TrainingConfig(),  # frozen, so a shared default is safe
    callback: Callable[[TrainingEvent], None] | None = None,
    resume_from: Mapping[str, Any] | None = None,
    checkpoint_every: int | None = None,
) -> FitResult:
    """Fit one model per cost table ``costs[k]`` ([K, 2, 2], indexed [k, pred, true]).

    ``model`` is a ModelSpec (a fresh stack, standardized on X, seeded with ``config.seed``) or a
    StackedModel to warm-start from (K models, or 1 broadcast to all K; it is copied, not
    modified). ``callback`` gets a :class:`TrainingEvent` after every step; raising
    :class:`TrainingCancelled` from it stops the fit and propagates. ``checkpoint_every=N`` puts a
    resumable checkpoint on every N-th event and on the result; ``resume_from=checkpoint``
    continues that fit as if it had never stopped.
    """
    started = time.perf_counter()
    surrogate = get_surrogate(surrogate)
    if not isinstance(config, TrainingConfig):
        raise ValueError(f"config must be a TrainingConfig, got {type(config).__name__}")
    if checkpoint_every is not None:
        checkpoint_every = _check_int("checkpoint_every", checkpoint_every, 1)
    if callback is not None and not callable(callback):
        raise ValueError("callback must be callable")
    device = resolve_device(config.device)
    Xt = _as_features(X)
    n = Xt.shape[0]
    yt = _as_labels(y, n)
    cost_t = _as_costs(costs)
    K = cost_t.shape[0]
    stack = _initial_model(model, Xt, K, config.seed)
    optimizer_name = config.resolve_optimizer(stack.spec)
    if config.augment:
        if Xt.ndim != 4:
            raise ValueError(f"augment needs image inputs [n, C, H, W], got {list(Xt.shape)}")
        if optimizer_name != "sgd":
            raise ValueError("augment needs the sgd optimizer (L-BFGS is full-batch)")

    resume: tuple[dict[str, Tensor], int] | None = None
    if resume_from is not None:
        model_tensors, state, step = _check_checkpoint(
            resume_from, optimizer_name=optimizer_name, n_models=K, n_examples=n,
            config=config, costs=cost_t,
        )  # fmt: skip
        _load_model_tensors(stack, model_tensors)
        resume = (state, step)

    # Data and model move to the device once and stay there for the whole fit.
    stack = stack.to(device)
    X_dev = Xt.to(device)
    if X_dev.ndim == 4 and device.type == "cuda":
        X_dev = X_dev.contiguous(memory_format=torch.channels_last)
    y_dev = yt.to(device)
    table = _costs_by_label(cost_t).to(device)

    def make_checkpoint(step: int, state: Mapping[str, Tensor]) -> dict[str, Any]:
        return _checkpoint(
            model=stack, optimizer_name=optimizer_name, step=step, n_examples=n,
            total_steps=config.max_iter if optimizer_name == "lbfgs" else config.epochs,
            config=config, costs=cost_t, state=state,
        )  # fmt: skip

    def emit(
        step: int, total: int, losses: Tensor, checkpoint: Callable[[], dict[str, Any]] | None
    ) -> None:
        if callback is None:
            return
        event = TrainingEvent(
            step=step,
            total_steps=total,
            loss=float(losses.mean()),  # the one host sync per step
            n_models=K,
            checkpoint=checkpoint() if checkpoint is not None else None,
        )
        callback(event)

    common: dict[str, Any] = {
        "model": stack, "X": X_dev, "surrogate": surrogate, "config": config, "device": device,
        "resume": resume, "emit": emit, "checkpoint_every": checkpoint_every,
        "make_checkpoint": make_checkpoint,
    }  # fmt: skip
    if optimizer_name == "lbfgs":
        losses, steps, checkpoint = _fit_lbfgs(y=y_dev, table=table, **common)
        diverged = ~torch.isfinite(losses)
    else:
        losses, steps, checkpoint, diverged = _fit_sgd(y=y_dev, table=table, **common)
    loss_np = losses.detach().cpu().double().numpy()
    diverged_np = diverged.cpu().numpy()
    loss_np[diverged_np] = math.inf
    return FitResult(
        model=stack.to("cpu").eval(),
        surrogate_loss=loss_np,
        n_steps=steps,
        seconds=time.perf_counter() - started,
        checkpoint=checkpoint,
        diverged=diverged_np,
    )


def _zero_score_loss(y: Tensor, table: Tensor, surrogate: Surrogate) -> Tensor:
    """[K] mean training surrogate loss of the model that scores every example 0."""
    zeros = torch.zeros(y.shape[0], table.shape[-1], device=y.device)
    return _loss_matrix(surrogate, zeros, table[y]).sum(0, dtype=torch.float64) / y.shape[0]


def _diverged(final: Tensor, reference: Tensor) -> Tensor:
    """[K] which SGD fits blew up: a final loss that is not finite, or more than 1% above both
    the loss the fit started from and that of the all-zero scorer. An SGD run that merely
    trained too little still ends below its start, and one that minimized loss + weight decay
    ends below the zero scorer (whose regularized objective is its loss); SGD's noise at the
    end of a cosine schedule is far below 1%. (L-BFGS needs no such check: its line search never
    accepts a step that raises the objective.)"""
    final = final.double()
    return ~torch.isfinite(final) | ((reference > 0) & (final > 1.01 * reference))


@torch.no_grad()
def predict_scores(
    model: StackedModel, X: Any, *, batch_size: int = 8192, device: str = "cpu"
) -> np.ndarray:
    """Scores h(x) of every model for every example, [n, K] float32 (positive = predict +1)."""
    if not isinstance(model, StackedModel):
        raise ValueError(f"model must be a StackedModel, got {type(model).__name__}")
    batch_size = _check_int("batch_size", batch_size, 1)
    if not isinstance(device, str) or not _DEVICE_RE.match(device):
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:<index>', got {device!r}")
    Xt = _as_features(X)
    if tuple(Xt.shape[1:]) != model.input_shape:
        raise ValueError(
            f"the model takes inputs of shape {model.input_shape}, X has {tuple(Xt.shape[1:])}"
        )
    dev = resolve_device(device)
    # Score with a copy so that the caller's model stays where it is.
    scorer = model.select(list(range(model.n_models))).to(dev).eval()
    out = np.empty((Xt.shape[0], model.n_models), dtype=np.float32)
    for start in range(0, Xt.shape[0], batch_size):
        xb = Xt[start : start + batch_size].to(dev, non_blocking=True)
        out[start : start + batch_size] = scorer(xb).float().cpu().numpy()
    return out
