"""Minibatch SGD (Nesterov momentum, weight decay, cosine decay) with on-device augmentation."""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable
from functools import partial
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from metro.models import StackedModel
from metro.surrogates import Surrogate
from metro.trainer.common import (
    Emit,
    autocast,
    derive_seed,
    loss_matrix,
    mean_loss,
    rows_per_model,
    seeded_generator,
)
from metro.trainer.optimizer import FitProblem, OptimizerResult

# Pixels of zero padding before the random crop (the standard CIFAR augmentation).
_CROP_PAD = 4
# Seed streams derived from the user's seed.
_PERM_STREAM, _AUGMENT_STREAM = 1, 2


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


def _stack_forward(model: StackedModel, z: Tensor, amp: bool) -> Tensor:
    """Scores [n, K] of standardized (and augmented) images, under bf16 autocast when ``amp``
    (without the cast cache, since torch.compile traces this function)."""
    with autocast(z.device, amp, cache_enabled=False):
        return model(z, standardized=True)


@functools.cache
def _compiled_forward() -> Callable[[StackedModel, Tensor, bool], Tensor]:
    """One compiled forward per process: torch.compile caches its graphs by the shapes it sees,
    and a new stack of the same shape reuses them (the parameters are the graph's inputs)."""
    return torch.compile(_stack_forward)


class _Forward:
    """The step's forward: compiled when asked, falling back to eager (with a warning) if the
    compiler fails, e.g. without a working Triton or C++ toolchain."""

    def __init__(self, compiled: bool) -> None:
        self.compiled = compiled

    def __call__(self, model: StackedModel, z: Tensor, amp: bool) -> Tensor:
        if self.compiled:
            try:
                return _compiled_forward()(model, z, amp)
            except Exception as exc:  # any compiler failure: train eager instead
                warnings.warn(
                    f"torch.compile failed ({type(exc).__name__}: {exc}); training without it",
                    RuntimeWarning,
                    stacklevel=2,
                )
                self.compiled = False
        return _stack_forward(model, z, amp)


def fit_sgd(problem: FitProblem, *, emit: Emit) -> OptimizerResult:
    """Minibatch SGD over ``config.epochs`` epochs; a fit whose loss blew up is marked diverged
    (:func:`_diverged`)."""
    model, X, y, table = problem.model, problem.X, problem.y, problem.table
    surrogate, config, device = problem.surrogate, problem.config, problem.device
    resume, checkpoint_every = problem.resume, problem.checkpoint_every
    make_checkpoint, mask = problem.make_checkpoint, problem.row_mask
    n, K = X.shape[0], model.n_models
    params = dict(model.named_parameters())
    decayed = [p for name, p in params.items() if model.is_weight(name)]
    plain = [p for name, p in params.items() if not model.is_weight(name)]
    optimizer = torch.optim.SGD(
        [
            {"params": decayed, "weight_decay": float(config.weight_decay)},
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
    forward = _Forward(config.compile)
    # The loss before the first epoch, the reference for divergence (kept in checkpoints so that
    # a resumed fit judges itself as the uninterrupted one would).
    if resume is not None and "initial_loss" in resume[0]:
        initial = resume[0]["initial_loss"].to(device, torch.float64)
    else:
        model.eval()
        initial = mean_loss(model, X, y, table, surrogate, device=device, amp=amp, row_mask=mask)

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
            n, generator=seeded_generator(device, derive_seed(config.seed, _PERM_STREAM, epoch)),
            device=device,
        )  # fmt: skip
        aug_gen = (
            seeded_generator(device, derive_seed(config.seed, _AUGMENT_STREAM, epoch))
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
            z = model.standardize(xb)
            if aug_gen is not None:
                z = augment_images(z, generator=aug_gen)
            scores = forward(model, z, amp)
            losses = loss_matrix(surrogate, scores, table[y[idx]])
            optimizer.zero_grad(set_to_none=True)
            if mask is None:
                (losses.sum() / idx.shape[0]).backward()
            else:
                # Each model's mean over its own rows of the batch (the models share no
                # parameters, so the sum of their means gives each its own gradient).
                weights = mask[idx]
                losses = losses * weights
                (losses.sum(0) / weights.sum(0).clamp(min=1.0)).sum().backward()
            optimizer.step()
            epoch_loss += losses.detach().sum(0, dtype=torch.float64)
        step += 1
        due = checkpoint_every is not None and step % checkpoint_every == 0
        factory = partial(make_checkpoint, step, state_now()) if due else None
        emit(step, config.epochs, epoch_loss / rows_per_model(mask, n), factory)

    model.eval()
    final = mean_loss(model, X, y, table, surrogate, device=device, amp=amp, row_mask=mask)
    if checkpoint_every is not None:
        last_checkpoint = make_checkpoint(step, state_now())
    reference = torch.maximum(initial, _zero_score_loss(y, table, surrogate, mask))
    return OptimizerResult(
        losses=final, steps=step, checkpoint=last_checkpoint, diverged=_diverged(final, reference)
    )


def _zero_score_loss(
    y: Tensor, table: Tensor, surrogate: Surrogate, mask: Tensor | None = None
) -> Tensor:
    """[K] mean training surrogate loss of the model that scores every example 0 (over each
    model's own rows under a mask)."""
    zeros = torch.zeros(y.shape[0], table.shape[-1], device=y.device)
    losses = loss_matrix(surrogate, zeros, table[y])
    if mask is not None:
        losses = losses * mask
    return losses.sum(0, dtype=torch.float64) / rows_per_model(mask, y.shape[0])


def _diverged(final: Tensor, reference: Tensor) -> Tensor:
    """[K] which SGD fits blew up: a final loss that is not finite, or more than 1% above both
    the loss the fit started from and that of the all-zero scorer. An SGD run that merely
    trained too little still ends below its start, and one that minimized loss + weight decay
    ends below the zero scorer (whose regularized objective is its loss); SGD's noise at the
    end of a cosine schedule is far below 1%. (L-BFGS needs no such check: its line search never
    accepts a step that raises the objective.)"""
    final = final.double()
    return ~torch.isfinite(final) | ((reference > 0) & (final > 1.01 * reference))
