"""How a fit is configured, and what it reports: settings, events, results."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from metro.models import ModelSpec, StackedModel
from metro.options import option, shown

OPTIMIZERS: tuple[str, ...] = ("auto", "lbfgs", "sgd")
# A GPU's index: 0 to 99, written as torch writes it (cuda:99999999999999999999 was accepted,
# and its job could only fail on a worker).
DEVICE_RE = re.compile(r"^(auto|cpu|cuda(:(0|[1-9][0-9]?))?)$")

# The bounds of a fit's settings: every value inside them is one a trainer can honour.
# The seed seeds NumPy's and scikit-learn's generators, which take 0 .. 2**32 - 1 (a repeat's seed
# is seed + repeat, wrapped into that range: metro.experiment.repeat_seed).
MAX_SEED = 2**32 - 1
# Passes over the data: the paper trains 100 epochs and L-BFGS converges in a few hundred
# iterations; these leave two orders of magnitude beyond and bound the time of a fit.
MAX_EPOCHS = 10_000
MAX_ITER = 100_000
MAX_BATCH_SIZE = 2**20
# lr, weight decay: torch multiplies float32 parameters by them, and a value past float32's range
# (3.4e38) raises instead of training; a large lr within these bounds diverges, which a fit reports
# (its loss +inf, see FitResult.diverged). tol: L-BFGS's tolerance, meaningless above 1.
MAX_LR = 1e6
MAX_WEIGHT_DECAY = 1e6
MAX_TOL = 1.0


def check_int(name: str, value: Any, minimum: int, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < minimum or (maximum is not None and value > maximum):
        if maximum is None:
            raise ValueError(f"{name} must be at least {minimum}, got {value}")
        raise ValueError(f"{name} must be an integer between {minimum} and {maximum}, got {value}")
    return int(value)


def _check_float(
    name: str,
    value: Any,
    *,
    low: float = 0.0,
    low_open: bool = False,
    high: float = math.inf,
    high_open: bool = False,
) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise ValueError(f"{name} must be a number, got {value!r}")
    try:
        v = float(value)
    except OverflowError:  # an integer past float64's range
        v = math.inf
    too_low = v <= low if low_open else v < low
    too_high = v >= high if high_open else v > high
    if not math.isfinite(v) or too_low or too_high:
        bounds = f"{'>' if low_open else '>='} {low:g}"
        if high < math.inf:
            bounds += f" and {'<' if high_open else '<='} {high:g}"
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
    weight decay 1e-4, Nesterov momentum 0.9, cosine decay over 100 epochs). ``weight_decay``
    ``"auto"`` depends on the fit's size (:meth:`resolve_weight_decay`).

    ``warm_start`` says whether a search starts a fit from an earlier one it offers (bisection's
    and Dinkelbach's next step, the final refit on all the data). For L-BFGS it saves iterations
    and ends at the same optimum of a convex problem. For SGD the fit still runs all its epochs,
    from a better starting point; measured on the quality benchmark's networks (docs/quality.md)
    it was better than starting every fit from the seeded initialization, most for methods that
    keep a threshold tuned before the refit. ``False`` starts every fit fresh, as scikit-learn's
    refits do (path-independent steps, a refit that repeats the validated procedure).

    ``compile`` runs the network's forward and backward through ``torch.compile`` (SGD only).
    Measured on cnn3 with K = 21 on an H100 (docs/benchmarks.md, "GPU"), it took a 100-epoch
    search from 38.1 s to 28.8 s but cost 37 s of compilation first: one graph per process and
    stack shape (the number of models, the batch size, the last, smaller batch of an epoch). So
    it pays on long fits and on a worker that trains many jobs of one shape, not on one short fit
    in a fresh process. Off by default."""

    optimizer: str = option(
        "auto", "'auto': L-BFGS for linear models, SGD for networks", choices=OPTIMIZERS
    )
    max_iter: int = option(200, "L-BFGS: at most this many iterations", ge=1, le=MAX_ITER)
    tol: float = option(1e-7, "L-BFGS: the tolerance it stops at", ge=0, le=MAX_TOL)
    weight_decay: float | str = option(
        "auto",
        "'auto': 1 / (2 ln 2 n) for linear models, scikit-learn's C=1 penalty on the fit's n "
        "rows; 1e-4 for networks",
        choices=("auto",),
        ge=0,
        le=MAX_WEIGHT_DECAY,
    )
    lr: float = option(0.02, "SGD: the learning rate (cosine decay over the fit)", gt=0, le=MAX_LR)
    momentum: float = option(0.9, "SGD: Nesterov momentum", ge=0, lt=1.0)
    batch_size: int = option(1024, "SGD: rows per step", ge=1, le=MAX_BATCH_SIZE)
    epochs: int = option(100, "SGD: passes over the training rows", ge=1, le=MAX_EPOCHS)
    augment: bool = option(
        False, "SGD on images: a random 4-pixel translation and horizontal flip per step"
    )
    device: str = option(
        "auto",
        "auto (a GPU when the worker has one), cpu, cuda or cuda:<index> (0 to 99)",
        pattern=DEVICE_RE.pattern,
    )
    mixed_precision: bool = option(True, "bf16 autocast on a CUDA device")
    seed: int = option(0, "Seeds the splits, the initialization and the batches", ge=0, le=MAX_SEED)
    warm_start: bool = option(
        True,
        "Whether bisection and Dinkelbach steps and the final refit start from an earlier fit; "
        "false starts every fit from the seeded initialization",
    )
    compile: bool = option(
        False,
        "Run the network's SGD steps through torch.compile (SGD only): a quarter faster on a GPU "
        "after about 40 s of compilation per worker process and model shape, so for long fits "
        "and workers that train many jobs of one shape",
    )

    def __post_init__(self) -> None:
        if not isinstance(self.optimizer, str) or self.optimizer not in OPTIMIZERS:
            raise ValueError(
                f"unknown optimizer {self.optimizer!r}; expected one of {', '.join(OPTIMIZERS)}"
            )
        if not isinstance(self.device, str) or not DEVICE_RE.match(self.device):
            raise ValueError(
                "device must be 'auto', 'cpu', 'cuda' or 'cuda:<index>' (0 to 99), got "
                f"{shown(self.device, 100)}"
            )
        checked: dict[str, Any] = {
            "max_iter": check_int("max_iter", self.max_iter, 1, MAX_ITER),
            "tol": _check_float("tol", self.tol, high=MAX_TOL),
            "weight_decay": (
                "auto"
                if self.weight_decay == "auto"
                else _check_float("weight_decay", self.weight_decay, high=MAX_WEIGHT_DECAY)
            ),
            "lr": _check_float("lr", self.lr, low_open=True, high=MAX_LR),
            "momentum": _check_float("momentum", self.momentum, high=1.0, high_open=True),
            "batch_size": check_int("batch_size", self.batch_size, 1, MAX_BATCH_SIZE),
            "epochs": check_int("epochs", self.epochs, 1, MAX_EPOCHS),
            "augment": _check_bool("augment", self.augment),
            "mixed_precision": _check_bool("mixed_precision", self.mixed_precision),
            "seed": check_int("seed", self.seed, 0, MAX_SEED),
            "warm_start": _check_bool("warm_start", self.warm_start),
            "compile": _check_bool("compile", self.compile),
        }
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    def resolve_weight_decay(self, n_rows: int, optimizer: str) -> float:
        """The weight decay of a fit on ``n_rows`` rows. ``"auto"``: for L-BFGS (linear models),
        1 / (2 ln 2 n), the penalty of scikit-learn's ``LogisticRegression(C=1)`` written in this
        trainer's objective (mean of c * log2(1 + e^(-yh)) with ERM's c = 1/2, plus wd/2 |w|^2),
        so it shrinks as the data grows; measured on the default benchmark (docs/quality.md),
        the fixed 1e-4 it replaces overfitted the small and wide tasks. For SGD the paper's 1e-4."""
        if self.weight_decay != "auto":
            return float(self.weight_decay)
        if optimizer == "lbfgs":
            return 1.0 / (2.0 * math.log(2.0) * max(int(n_rows), 1))
        return 1e-4

    def resolve_optimizer(self, spec: ModelSpec) -> str:
        if self.optimizer != "auto":
            return self.optimizer
        return "lbfgs" if spec.kind == "linear" else "sgd"

    def check_for(self, spec: ModelSpec) -> None:
        """Raise ValueError for options the model's optimizer cannot honour: augmentation and
        compilation belong to the SGD minibatch step (L-BFGS is full-batch)."""
        if self.resolve_optimizer(spec) == "sgd":
            return
        if self.augment:
            raise ValueError("augment needs the sgd optimizer (L-BFGS is full-batch)")
        if self.compile:
            raise ValueError("compile needs the sgd optimizer (it compiles the minibatch step)")

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


# What "diverged" means (metro.trainer.sgd._diverged), worded once for every error that says so.
DIVERGENCE_RULE = (
    "the training loss ended non-finite, or higher than both where it started and the loss of "
    "scoring every example 0"
)


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

    @property
    def diverged(self) -> np.ndarray:
        """[K] bool: the models whose fit diverged (their loss is +inf)."""
        return ~np.isfinite(np.asarray(self.surrogate_loss, dtype=np.float64))
