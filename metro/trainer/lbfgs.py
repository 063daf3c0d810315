"""Full-batch L-BFGS run per model on a stack: own history, line search and stopping test each."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial

import torch
from torch import Tensor

from metro.models import StackedModel
from metro.surrogates import Surrogate
from metro.trainer.common import Emit, full_batch_rows, loss_matrix
from metro.trainer.optimizer import FitProblem, OptimizerResult

# Curvature pairs kept per model, Armijo constant, backtracking evaluations per iteration.
_LBFGS_HISTORY = 10
_ARMIJO_C1 = 1e-4
_MAX_BACKTRACKS = 25
# Curvature pairs with s'y below this are skipped (as torch.optim.LBFGS does) so that the inverse
# Hessian estimate stays positive definite on non-convex surrogates.
_MIN_CURVATURE = 1e-10
# L-BFGS state besides the history.
_LBFGS_POINT = ("f", "g", "loss", "active")


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
        self.rows = full_batch_rows(model, Z.shape[0])
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
                losses = loss_matrix(self.surrogate, scores, self.cost[rows])
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
        for label in range(table.shape[0]):  # 0 and 1, or the row groups (fit.py)
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


def fit_lbfgs(problem: FitProblem, *, emit: Emit) -> OptimizerResult:
    """Per-model L-BFGS with a batched backtracking (Armijo) line search. Model k's iterates
    depend only on its own objective, so a K-stack follows the K separate runs; a model stops
    when its gradient, step or objective change falls under ``tol`` and is then frozen. Its line
    search never accepts a step that raises the objective, so only a non-finite loss counts as
    diverged."""
    model, X, y, table = problem.model, problem.X, problem.y, problem.table
    surrogate, config, device = problem.surrogate, problem.config, problem.device
    resume, checkpoint_every = problem.resume, problem.checkpoint_every
    make_checkpoint = problem.make_checkpoint
    K = model.n_models
    flat = _Flat(model)
    with torch.no_grad():
        Z = model.standardize(X)  # once: the data is fixed, only the weights move
    kind = _LinearObjective if model.spec.kind == "linear" else _Objective
    objective = kind(
        model=model, flat=flat, Z=Z, y=y, table=table, surrogate=surrogate,
        weight_decay=float(config.weight_decay),  # resolved by fit_cost_sensitive
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
    return OptimizerResult(losses=loss, steps=step, checkpoint=last, diverged=~torch.isfinite(loss))
