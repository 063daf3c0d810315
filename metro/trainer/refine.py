"""Refinement: a linear model moved to a local minimum of the metric itself, smoothed.

The search trains cost-sensitive *surrogate* models: a convex loss whose minimizer, when the model
class is wrong for the data (most real tables), puts the decision boundary where the surrogate
wants it, not where the metric does. Refinement starts from the chosen model (its tuned threshold
folded into the bias) and minimizes the metric's loss with every confusion cell counted softly,

    soft TP = mean(y * s), soft FP = mean((1 - y) * s), soft FN = mean(y * (1 - s)), ...
    s = sigmoid(h(x) / T),  loss = (numerator . cells) / (denominator . cells),

with full-batch L-BFGS in float64. The problem is not convex; the start is what makes it work, so
this is a local step from the surrogate's answer, not a search of its own.

The temperature ``T`` is a fraction of the standard deviation of the starting model's scores on
the training rows, so one setting means the same thing on every dataset. With ``sharpen=True``
the weights are free: by growing them the step may also sharpen the sigmoid towards the 0-1 loss,
which ``max_iter`` (100 L-BFGS iterations) bounds. With ``sharpen=False`` the scores are divided
by their own spread inside the objective (times the start's), so growing the weights changes
nothing and ``T`` stays the smoothing it names. Either way the refined weights are scaled back to
the start's norm (a positive factor changes no decision). Whether the step helps at all, and at
which scale, is for held-out data to say (see :mod:`metro.search.refine`).

Above :data:`MAX_ROWS` rows the step runs on a stratified sample of that many (a soft count over
100,000 rows is already a precise estimate); the returned model is scored on every row.

Under constraints the objective adds an exact penalty on each constraint's soft shortfall
(:func:`constraint_penalty`), so the step may not buy the metric with the constraint.

Only linear models (``ModelSpec(kind="linear")``) are refined; their weights live in the model's
standardized input space, which is where the step runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch.optim.lbfgs import _strong_wolfe

from metro.constraints import Constraint
from metro.metrics import MetricSpec
from metro.models import StackedModel

__all__ = [
    "MAX_ROWS",
    "PENALTY",
    "constraint_penalty",
    "refine_linear",
    "smoothed_cells",
    "smoothed_ratio_loss",
]

MAX_ROWS = 100_000
# The weight of a constraint's soft shortfall against the metric's loss (an exact penalty: large
# enough that trading the constraint for the objective never pays at the start's scale; the
# held-out check in metro.search.refine decides whether the result is kept).
PENALTY = 100.0
_MAX_ITER = 100
_TOLERANCE_GRAD = 1e-9
_TOLERANCE_CHANGE = 1e-12
_HISTORY = 100


def smoothed_cells(scores: torch.Tensor, y: torch.Tensor, temperature: float) -> torch.Tensor:
    """Soft confusion fractions (tp, fp, fn, tn): each row counts sigmoid(score / T) as
    predicted positive."""
    s = torch.sigmoid(scores / temperature)
    yf = y.to(scores.dtype)
    n = float(y.numel())
    return torch.stack(
        [
            (yf * s).sum() / n,
            ((1 - yf) * s).sum() / n,
            (yf * (1 - s)).sum() / n,
            ((1 - yf) * (1 - s)).sum() / n,
        ]
    )


def smoothed_ratio_loss(
    spec: MetricSpec, scores: torch.Tensor, y: torch.Tensor, temperature: float
) -> torch.Tensor:
    """The metric's loss with soft confusion cells (:func:`smoothed_cells`). At T -> 0 this is
    the loss of sign(score) (with score 0 counted as half a positive)."""
    cells = smoothed_cells(scores, y, temperature)
    num = cells @ torch.as_tensor(spec.numerator_cells, dtype=scores.dtype, device=scores.device)
    den = cells @ torch.as_tensor(spec.denominator_cells, dtype=scores.dtype, device=scores.device)
    return num / den


def constraint_penalty(
    constraints: Sequence[Constraint], scores: torch.Tensor, y: torch.Tensor, temperature: float
) -> torch.Tensor:
    """An exact penalty for the constraints on the soft cells: PENALTY times the sum of each
    constraint's shortfall ``max(0, -g . C)``, with g (:attr:`Constraint.cells`, g . C >= 0 where
    it holds) divided by its largest weight so every constraint counts on one scale."""
    cells = smoothed_cells(scores, y, temperature)
    total = torch.zeros((), dtype=scores.dtype, device=scores.device)
    for c in constraints:
        g = np.asarray(c.cells, dtype=np.float64)
        g = g / max(float(np.abs(g).max()), 1e-12)
        weights = torch.as_tensor(g, dtype=scores.dtype, device=scores.device)
        total = total + torch.relu(-(cells @ weights))
    return PENALTY * total


def _sample(y: np.ndarray, max_rows: int, seed: int) -> np.ndarray | None:
    """A stratified sample of at most ``max_rows`` row indices (None: keep every row)."""
    if y.size <= max_rows:
        return None
    rng = np.random.default_rng(seed)
    keep = []
    for label in (0, 1):
        rows = np.flatnonzero(y == label)
        take = max(1, round(max_rows * rows.size / y.size)) if rows.size else 0
        keep.append(rng.choice(rows, size=min(take, rows.size), replace=False))
    return np.sort(np.concatenate(keep))


def refine_linear(
    model: StackedModel,
    X: np.ndarray,
    y: np.ndarray,
    spec: MetricSpec,
    *,
    offset: float = 0.0,
    temperature: float,
    max_iter: int = _MAX_ITER,
    max_rows: int = MAX_ROWS,
    seed: int = 0,
    constraints: Sequence[Constraint] = (),
    sharpen: bool = True,
) -> StackedModel:
    """A copy of ``model`` (a linear stack of one) refined on (X, y) for ``spec``'s metric.

    ``offset`` is added to the scores first (pass ``-threshold`` to start from the model with its
    tuned threshold), ``temperature`` is relative to the spread of the starting scores (see the
    module docstring). With ``constraints`` the soft shortfall of each is added to the loss
    (:func:`constraint_penalty`). ``sharpen=False`` holds the scores' spread at the start's
    (see the module docstring). The result decides by its own sign: h(x) >= 0 is positive.
    """
    if model.spec.kind != "linear":
        raise ValueError(f"only linear models can be refined, got a {model.spec.kind} model")
    if model.n_models != 1:
        raise ValueError(f"refine_linear takes a stack of one model, got {model.n_models}")
    if not (math.isfinite(temperature) and temperature > 0):
        raise ValueError(f"temperature must be a positive number, got {temperature!r}")
    if not math.isfinite(float(offset)):
        raise ValueError(f"offset must be finite, got {offset!r}")
    y = np.asarray(y).astype(np.int64)
    if y.ndim != 1 or y.size != len(X) or not np.isin(y, (0, 1)).all():
        raise ValueError("y must be a 1-D array of 0/1 labels, one per row of X")
    rows = _sample(y, max_rows, seed)
    X_fit, y_fit = (X, y) if rows is None else (X[rows], y[rows])

    params = dict(model.named_parameters())
    device = params["weight"].device
    with torch.no_grad():
        z = model.standardize(
            torch.as_tensor(np.asarray(X_fit, dtype=np.float32), device=device)
        ).double()
        w0 = params["weight"].detach()[:, 0].double()
        b0 = params["bias"].detach()[0].double() + float(offset)
    labels = torch.as_tensor(y_fit, device=device)
    if int(y_fit.sum()) in (0, y_fit.size):
        return model.shifted(float(offset))  # one class: no boundary to move
    spread = float((z @ w0).std())
    tau = temperature * (spread if spread > 0 else 1.0)
    d = w0.numel()

    def objective(x: torch.Tensor) -> torch.Tensor:
        raw = z @ x[:d]
        scores = raw + x[d]
        if not sharpen:
            # Scale-free: the scores keep the start's spread, so tau stays what it names.
            scores = scores * (spread / raw.std().clamp_min(1e-12))
        loss = smoothed_ratio_loss(spec, scores, labels, tau)
        if constraints:
            loss = loss + constraint_penalty(constraints, scores, labels, tau)
        return loss

    x = _lbfgs(objective, torch.cat([w0, b0.reshape(1)]), max_iter=max_iter)
    w, b = x[:d], x[d]
    with torch.no_grad():
        if not bool(torch.isfinite(w).all() and torch.isfinite(b)):
            return model.shifted(float(offset))  # a failed step never replaces the start
        # Back to the start's scale (a positive factor changes no decision): the step tends to
        # grow the weights a hundredfold, and margins should stay comparable to the search's.
        scale = float(w0.norm()) / float(w.norm()) if float(w.norm()) > 0 else 1.0
        w, b = w * scale, b * scale
        refined = model.select([0])
        new = dict(refined.named_parameters())
        new["weight"].copy_(w.to(params["weight"].dtype)[:, None])
        new["bias"].copy_(b.to(params["bias"].dtype).reshape(1))
    return refined


def _lbfgs(
    objective: Callable[[torch.Tensor], torch.Tensor], x0: torch.Tensor, *, max_iter: int
) -> torch.Tensor:
    """The minimizer ``torch.optim.LBFGS(params, lr=1, max_iter=max_iter,
    line_search_fn="strong_wolfe", tolerance_grad=1e-9, tolerance_change=1e-12).step`` reaches
    from ``x0`` (one flat parameter), step for step (a test holds the two equal), without
    ``torch.optim.Optimizer``: its first use in a process imports TorchDynamo, which costs one to
    three seconds, more than a refinement takes. The line search is torch's own function."""

    def evaluate(x: torch.Tensor) -> tuple[float, torch.Tensor]:
        leaf = x.detach().clone().requires_grad_(True)
        with torch.enable_grad():
            loss = objective(leaf)
            (grad,) = torch.autograd.grad(loss, leaf)
        return float(loss.detach()), grad

    def directional(x: torch.Tensor, t: float, d: torch.Tensor) -> tuple[float, torch.Tensor]:
        return evaluate(x.clone().add_(d, alpha=t))

    max_eval = max_iter * 5 // 4
    x = x0.detach().clone()
    loss, flat_grad = evaluate(x)
    evals = 1
    if flat_grad.abs().max() <= _TOLERANCE_GRAD:
        return x
    old_dirs: list[torch.Tensor] = []
    old_stps: list[torch.Tensor] = []
    ro: list[torch.Tensor] = []
    al: list[torch.Tensor] = [torch.zeros(())] * _HISTORY
    h_diag: torch.Tensor | float = 1.0
    d = flat_grad.neg()
    t: torch.Tensor | float = 0.0
    prev_flat_grad: torch.Tensor | None = None
    for n_iter in range(1, max_iter + 1):
        if n_iter > 1:
            assert prev_flat_grad is not None
            y = flat_grad.sub(prev_flat_grad)
            s = d.mul(t)
            ys = y.dot(s)
            if ys > 1e-10:
                if len(old_dirs) == _HISTORY:
                    old_dirs.pop(0)
                    old_stps.pop(0)
                    ro.pop(0)
                old_dirs.append(y)
                old_stps.append(s)
                ro.append(1.0 / ys)
                h_diag = ys / y.dot(y)
            q = flat_grad.neg()
            # 0-d tensors as alpha, as torch's own L-BFGS passes them (the stubs want numbers).
            for i in range(len(old_dirs) - 1, -1, -1):
                al[i] = old_stps[i].dot(q) * ro[i]
                q.add_(old_dirs[i], alpha=-al[i])  # type: ignore[arg-type]
            d = r = torch.mul(q, h_diag)
            for i in range(len(old_dirs)):
                be_i = old_dirs[i].dot(r) * ro[i]
                r.add_(old_stps[i], alpha=al[i] - be_i)  # type: ignore[arg-type]
        prev_flat_grad = flat_grad.clone(memory_format=torch.contiguous_format)
        prev_loss = loss
        t = min(1.0, 1.0 / flat_grad.abs().sum()) if n_iter == 1 else 1.0  # type: ignore[assignment]
        gtd = flat_grad.dot(d)
        if gtd > -_TOLERANCE_CHANGE:
            break
        with torch.no_grad():
            loss, flat_grad, t, ls_evals = _strong_wolfe(
                directional, x.clone(), t, d, loss, flat_grad, gtd, max_ls=max_eval - evals
            )
            x.add_(d, alpha=t)  # type: ignore[arg-type]
        evals += ls_evals
        if n_iter == max_iter or evals >= max_eval:
            break
        if flat_grad.abs().max() <= _TOLERANCE_GRAD:
            break
        if d.mul(t).abs().max() <= _TOLERANCE_CHANGE:
            break
        if abs(loss - prev_loss) < _TOLERANCE_CHANGE:
            break
    return x
