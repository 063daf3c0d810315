"""The seam between the entry point and the two optimizers: what a fit is given, what it gives
back, and the one signature both optimizers have."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import torch
from torch import Tensor

from metro.models import StackedModel
from metro.surrogates import Surrogate
from metro.trainer.common import Emit, MakeCheckpoint
from metro.trainer.config import TrainingConfig

__all__ = ["FitProblem", "Optimizer", "OptimizerResult"]


@dataclass(frozen=True)
class FitProblem:
    """K cost-sensitive fits, everything already on ``device``.

    ``table`` is the per-example cost rows by label ([2, K, 2]); ``config.weight_decay`` is
    resolved to a number. ``resume`` is (optimizer state, step) from a checkpoint, and
    ``make_checkpoint(step, state)`` builds one; ``checkpoint_every`` says how often one is due
    (None: never). ``row_mask`` ([n, K] float 0/1, or None: every model sees every row) says which
    rows each model trains on: a model's loss is the mean over its own rows only.
    """

    model: StackedModel
    X: Tensor
    y: Tensor
    table: Tensor
    surrogate: Surrogate
    config: TrainingConfig
    device: torch.device
    resume: tuple[dict[str, Tensor], int] | None
    checkpoint_every: int | None
    make_checkpoint: MakeCheckpoint
    row_mask: Tensor | None = None


@dataclass(frozen=True)
class OptimizerResult:
    """``losses``: each model's final mean training surrogate loss ([K], no weight decay);
    ``steps``: iterations (L-BFGS) or epochs (SGD) run; ``checkpoint``: the last one when
    checkpoints were asked for; ``diverged``: [K] booleans, the fits that blew up."""

    losses: Tensor
    steps: int
    checkpoint: dict[str, Any] | None
    diverged: Tensor


class Optimizer(Protocol):
    """Fits the K models of ``problem.model`` in place, reporting every step through ``emit``."""

    def __call__(self, problem: FitProblem, *, emit: Emit) -> OptimizerResult: ...
