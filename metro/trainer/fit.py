"""The entry points: fit K cost tables at once, and score with a fitted stack."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import torch
from torch import Tensor

from metro.device import resolve_device
from metro.models import ModelSpec, StackedModel
from metro.surrogates import Surrogate, get_surrogate
from metro.trainer.checkpoints import build_checkpoint, check_checkpoint, load_model_tensors
from metro.trainer.common import (
    as_costs,
    as_features,
    as_labels,
    as_row_mask,
    costs_by_label,
    full_batch_rows,
    initial_model,
)
from metro.trainer.config import DEVICE_RE, FitResult, TrainingConfig, TrainingEvent, check_int
from metro.trainer.lbfgs import fit_lbfgs
from metro.trainer.optimizer import FitProblem, Optimizer
from metro.trainer.sgd import fit_sgd

OPTIMIZERS_BY_NAME: dict[str, Optimizer] = {"lbfgs": fit_lbfgs, "sgd": fit_sgd}


def fit_cost_sensitive(
    X: Any,
    y: Any,
    costs: Any,
    *,
    model: ModelSpec | StackedModel,
    surrogate: Surrogate | str,
    config: TrainingConfig = TrainingConfig(),  # noqa: B008 - frozen, so a shared default is safe
    callback: Callable[[TrainingEvent], None] | None = None,
    resume_from: Mapping[str, Any] | None = None,
    checkpoint_every: int | None = None,
    row_mask: Any = None,
) -> FitResult:
    """Fit one model per cost table ``costs[k]`` ([K, 2, 2], indexed [k, pred, true]).

    Row groups: with ``costs`` of shape [K, 2, G] (G > 2), ``y`` holds each row's group in
    ``0 .. G - 1`` and ``costs[k, pred, g]`` is what model k pays for predicting ``pred`` on a
    row of group g. This lets the models of one stack train on different binary targets: the
    one-vs-rest problems of a multi-class fit (group = class; a model of class c prices group c
    as positive and every other as negative), trained in one fit
    (:mod:`metro.search.class_stack`).

    ``model`` is a ModelSpec (a fresh stack, standardized on X, seeded with ``config.seed``) or a
    StackedModel to warm-start from (K models, or 1 broadcast to all K; it is copied, not
    modified). ``callback`` gets a :class:`TrainingEvent` after every step; raising
    :class:`TrainingCancelled` from it stops the fit and propagates. ``checkpoint_every=N`` puts a
    resumable checkpoint on every N-th event and on the result; ``resume_from=checkpoint``
    continues that fit as if it had never stopped.

    ``row_mask`` ([n, K] booleans, SGD only) trains model k on the rows where ``row_mask[:, k]``
    holds and on no other: its loss, gradient, divergence check and reported loss are means over
    its own rows, as if it had been fitted on them alone. This is how the folds of a
    cross-validated grid train as one stack (:class:`metro.search.fold_stack.FoldStackSolver`).
    The standardization statistics still come from all of ``X`` (features only, no labels).
    """
    started = time.perf_counter()
    surrogate = get_surrogate(surrogate)
    if not isinstance(config, TrainingConfig):
        raise ValueError(f"config must be a TrainingConfig, got {type(config).__name__}")
    if checkpoint_every is not None:
        checkpoint_every = check_int("checkpoint_every", checkpoint_every, 1)
    if callback is not None and not callable(callback):
        raise ValueError("callback must be callable")
    device = resolve_device(config.device)
    Xt = as_features(X)
    n = Xt.shape[0]
    cost_t = as_costs(costs)
    yt = as_labels(y, n, int(cost_t.shape[2]))
    K = cost_t.shape[0]
    stack = initial_model(model, Xt, K, config.seed)
    optimizer_name = config.resolve_optimizer(stack.spec)
    config = replace(config, weight_decay=config.resolve_weight_decay(n, optimizer_name))
    config.check_for(stack.spec)
    if config.augment and Xt.ndim != 4:
        raise ValueError(f"augment needs image inputs [n, C, H, W], got {list(Xt.shape)}")
    mask_t = None if row_mask is None else as_row_mask(row_mask, n, K)
    if mask_t is not None and optimizer_name != "sgd":
        raise ValueError(f"row_mask needs the SGD optimizer, not {optimizer_name}")

    resume: tuple[dict[str, Tensor], int] | None = None
    if resume_from is not None:
        model_tensors, state, step = check_checkpoint(
            resume_from, optimizer_name=optimizer_name, n_models=K, n_examples=n,
            config=config, costs=cost_t, row_mask=mask_t,
        )  # fmt: skip
        load_model_tensors(stack, model_tensors)
        resume = (state, step)

    # Data and model move to the device once and stay there for the whole fit.
    stack = stack.to(device)
    X_dev = Xt.to(device)
    if X_dev.ndim == 4 and device.type == "cuda":
        X_dev = X_dev.contiguous(memory_format=torch.channels_last)
    y_dev = yt.to(device)
    table = costs_by_label(cost_t).to(device)

    def make_checkpoint(step: int, state: Mapping[str, Tensor]) -> dict[str, Any]:
        return build_checkpoint(
            model=stack, optimizer_name=optimizer_name, step=step, n_examples=n,
            total_steps=config.max_iter if optimizer_name == "lbfgs" else config.epochs,
            config=config, costs=cost_t, state=state, row_mask=mask_t,
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

    problem = FitProblem(
        model=stack, X=X_dev, y=y_dev, table=table, surrogate=surrogate, config=config,
        device=device, resume=resume, checkpoint_every=checkpoint_every,
        make_checkpoint=make_checkpoint,
        row_mask=None if mask_t is None else mask_t.to(device, torch.float32),
    )  # fmt: skip
    outcome = OPTIMIZERS_BY_NAME[optimizer_name](problem, emit=emit)
    loss_np = outcome.losses.detach().cpu().double().numpy()
    loss_np[outcome.diverged.cpu().numpy()] = math.inf  # FitResult.diverged reads it back
    return FitResult(
        model=stack.to("cpu").eval(),
        surrogate_loss=loss_np,
        n_steps=outcome.steps,
        seconds=time.perf_counter() - started,
        checkpoint=outcome.checkpoint,
    )


@torch.no_grad()
def predict_scores(
    model: StackedModel, X: Any, *, batch_size: int = 8192, device: str = "cpu"
) -> np.ndarray:
    """Scores h(x) of every model for every example, [n, K] float32 (positive = predict +1)."""
    if not isinstance(model, StackedModel):
        raise ValueError(f"model must be a StackedModel, got {type(model).__name__}")
    batch_size = check_int("batch_size", batch_size, 1)
    if not isinstance(device, str) or not DEVICE_RE.match(device):
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:<index>', got {device!r}")
    Xt = as_features(X)
    if tuple(Xt.shape[1:]) != model.input_shape:
        raise ValueError(
            f"the model takes inputs of shape {model.input_shape}, X has {tuple(Xt.shape[1:])}"
        )
    dev = resolve_device(device)
    # Score with a copy so that the caller's model stays where it is.
    scorer = model.select(list(range(model.n_models))).to(dev).eval()
    out = np.empty((Xt.shape[0], model.n_models), dtype=np.float32)
    # A wide stack scores fewer rows at a time: 8,192 images through 105 cnn3 models would
    # need over 100 GiB for the first layer's activations.
    batch_size = min(batch_size, full_batch_rows(scorer, Xt.shape[0], dev))
    for start in range(0, Xt.shape[0], batch_size):
        xb = Xt[start : start + batch_size].to(dev, non_blocking=True)
        out[start : start + batch_size] = scorer(xb).float().cpu().numpy()
    return out


# The largest float32; a score beyond it (or NaN) is no score at all.
FLOAT32_MAX = float(np.finfo(np.float32).max)


def undefined_score_rows(scores: np.ndarray) -> np.ndarray:
    """The rows (a boolean mask) some of whose scores are NaN, infinite or past float32's range:
    finite features far outside the training data's scale overflow inside a model (inf - inf
    after standardizing, say), and such a row has no margin to decide by."""
    scores = np.asarray(scores)
    per_row = scores.reshape(scores.shape[0], -1)
    return ~(np.abs(per_row) <= FLOAT32_MAX).all(axis=1)  # NaN compares False too


def require_defined_scores(scores: np.ndarray) -> np.ndarray:
    """``scores``, or a ``ValueError`` naming the first row that has none (the service's 422):
    a NaN margin was decided as the negative class, and an infinite one as a class of its own."""
    undefined = undefined_score_rows(scores)
    if undefined.any():
        i = int(np.flatnonzero(undefined)[0])
        raise ValueError(
            f"row {i} of X has no score: its values overflow the model (far outside the scale "
            f"of the data it was trained on; {int(undefined.sum())} such row(s))"
        )
    return scores
