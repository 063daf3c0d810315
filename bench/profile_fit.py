"""Where the time of one ``fit_cost_sensitive`` call goes, for K=1 and K=21.

Prints, per (model, K): median wall time, optimizer steps, milliseconds per step, objective
evaluations (L-BFGS line-search trials), and the torch profiler's top operators. ``--patch``
applies, in this process only, prototypes of the library changes suggested in
docs/benchmarks.md, so their effect can be measured before anyone edits the library:

* ``linear-closed-form``: the linear L-BFGS objective computes the logistic loss and its
  derivative in closed form (softplus and sigmoid, 1/ln 2 folded into the costs) instead of
  building an autograd graph per line-search trial.
* ``mlp-fused``: the MLP's first layer for all K models as one [d, K*h] GEMM (``addmm``) instead
  of a broadcast ``matmul`` against [K, d, h] (which runs as K small GEMMs), and the output layer
  as a multiply-and-sum, for one-hidden-layer MLPs.

    python bench/profile_fit.py --model linear --threads 1
    python bench/profile_fit.py --model mlp --epochs 2 --patch mlp-fused
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from metro import ModelSpec, TrainingConfig
from metro import models as metro_models
from metro.baselines import theta_cost_tables
from metro.costs import cost_tables
from metro.datasets import load_dataset
from metro.metrics import get_metric
from metro.search import grid_lambdas
from metro.trainer import fit_cost_sensitive
from metro.trainer import lbfgs as metro_trainer

DATASETS = {
    "synthetic": "builtin://synthetic?n_samples=50000&n_features=50&positive_fraction=0.1&seed=0",
    "digits": "builtin://digits?positive=9",
}
_LN2 = math.log(2.0)


# -- prototypes of suggested library changes (monkeypatched, this process only) ------------------
def _closed_form_loss_and_grad(self: Any, M: list[Tensor]) -> tuple[Tensor, list[Tensor]]:
    """Logistic surrogate only. For a term cost * Phi(a) with a = +-m and Phi(a) =
    softplus(-a) / ln 2: value cost * softplus(-a) / ln 2, derivative with respect to m
    -+ cost * sigmoid(-a) / ln 2, computed directly instead of through an autograd graph (one
    softplus and one sigmoid pass per term instead of the negation, softplus, division and their
    backward passes)."""
    if self.surrogate.name != "logistic":
        return _ORIGINAL["loss_and_grad"](self, M)
    loss = torch.zeros(self.model.n_models, device=self.decay.device, dtype=torch.float64)
    grads = []
    for m, group in zip(M, self.groups, strict=True):
        grad = None
        for cost, flipped in group.terms:
            arg = m if flipped else -m  # softplus(-a) with a = -m if flipped else m
            loss += cost * metro_trainer._row_sums(F.softplus(arg)) / (self.n * _LN2)
            scale = (cost / (self.n * _LN2))[:, None]
            term = torch.sigmoid(arg).mul_(scale if flipped else -scale)
            grad = term if grad is None else grad.add_(term)
        grads.append(grad if grad is not None else torch.zeros_like(m))
    return loss, grads


def _fused_mlp(self: Any, z: Tensor) -> Tensor:
    if len(self.spec.hidden) != 1:
        return _ORIGINAL["mlp"](self, z)
    p = dict(self.named_parameters())
    K, d, h = p["hidden0_weight"].shape
    w = p["hidden0_weight"].permute(1, 0, 2).reshape(d, K * h)  # [d, K*h]: one GEMM for all K
    a = torch.relu(torch.addmm(p["hidden0_bias"].reshape(K * h), z, w)).view(-1, K, h)
    return (a * p["out_weight"]).sum(-1) + p["out_bias"]


_ORIGINAL: dict[str, Any] = {
    "loss_and_grad": metro_trainer._LinearObjective._loss_and_grad,
    "mlp": metro_models.StackedModel._mlp,
}
PATCHES = {
    "linear-closed-form": lambda: setattr(
        metro_trainer._LinearObjective, "_loss_and_grad", _closed_form_loss_and_grad
    ),
    "mlp-fused": lambda: setattr(metro_models.StackedModel, "_mlp", _fused_mlp),
}


# -- measurement ----------------------------------------------------------------------------------
def count_trials() -> dict[str, int]:
    """Count objective evaluations of the L-BFGS line searches (wraps the class methods)."""
    counter = {"trials": 0}
    for cls in (metro_trainer._Objective, metro_trainer._LinearObjective):
        original = cls.__dict__["trial"]

        def wrapped(self: Any, t: Tensor, _original: Any = original) -> Any:
            counter["trials"] += 1
            return _original(self, t)

        cls.trial = wrapped  # type: ignore[method-assign]
    return counter


def _tables(K: int) -> np.ndarray:
    if K == 1:
        return theta_cost_tables(np.array([0.5]))
    metric = get_metric("f1")
    return cost_tables(metric, grid_lambdas(*metric.lambda_range, K))


def ab_test(args: argparse.Namespace) -> int:
    """Alternate unpatched and patched fits so both see the same machine load."""
    ds = load_dataset(DATASETS[args.dataset])
    X, y = ds.X.reshape(ds.X.shape[0], -1), ds.y
    model = ModelSpec(args.model, hidden=(64,))
    config = TrainingConfig(device="cpu", epochs=args.epochs)
    print(
        f"A/B {args.ab}: {args.dataset} {X.shape} {args.model} threads={torch.get_num_threads()} "
        f"epochs={args.epochs}"
    )
    attr = {"linear-closed-form": (metro_trainer._LinearObjective, "_loss_and_grad"),
            "mlp-fused": (metro_models.StackedModel, "_mlp")}[args.ab]  # fmt: skip
    original = getattr(*attr)
    PATCHES[args.ab]()
    patched = getattr(*attr)
    out = []
    for K in args.K:
        tables = _tables(K)
        times: dict[str, list[float]] = {"A": [], "B": []}
        losses = {}
        for r in range(args.repeats + 1):  # the first round warms up and is not kept
            for arm, fn in (("A", original), ("B", patched)):
                setattr(*attr, fn)
                started = time.perf_counter()
                fit = fit_cost_sensitive(
                    X, y, tables, model=model, surrogate="logistic", config=config
                )
                if r:
                    times[arm].append(time.perf_counter() - started)
                losses[arm] = fit.surrogate_loss
        a, b = times["A"], times["B"]
        row = {
            "K": K, "A_min": min(a), "B_min": min(b), "A_median": statistics.median(a),
            "B_median": statistics.median(b), "A": a, "B": b,
            "max_loss_difference": float(np.abs(losses["A"] - losses["B"]).max()),
        }  # fmt: skip
        out.append(row)
        print(
            f"K={K:>3}: without {row['A_median']:.3f}s (min {row['A_min']:.3f}), with "
            f"{row['B_median']:.3f}s (min {row['B_min']:.3f}): speedup "
            f"{row['A_median'] / row['B_median']:.2f}x median, {row['A_min'] / row['B_min']:.2f}x "
            f"min; largest surrogate-loss difference {row['max_loss_difference']:.2e}"
        )
    if len(out) >= 2:
        k1, kk = out[0], out[-1]
        for arm in ("A", "B"):
            print(
                f"{'without' if arm == 'A' else 'with':>7}: K={kk['K']} at once vs {kk['K']} "
                f"K={k1['K']} fits one after another (same step counts assumed): "
                f"{kk['K'] * k1[arm + '_min'] / kk[arm + '_min']:.2f}x (minima)"
            )
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"args": {**vars(args), "out": str(args.out)},
                                        "ab": out}, indent=1))  # fmt: skip
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", default="synthetic", choices=sorted(DATASETS))
    p.add_argument("--model", default="linear", choices=("linear", "mlp"))
    p.add_argument("--K", type=int, nargs="+", default=[1, 21])
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--patch", choices=sorted(PATCHES), action="append", default=[])
    p.add_argument(
        "--ab",
        choices=sorted(PATCHES),
        default=None,
        help="interleaved A/B: alternate fits without and with this patch, same process",
    )
    p.add_argument("--top", type=int, default=10, help="profiler rows to print (0: none)")
    p.add_argument("--out", type=Path, default=None, help="write the numbers as JSON here")
    args = p.parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    for name in args.patch:
        PATCHES[name]()
    counter = count_trials()
    if args.ab is not None:
        return ab_test(args)

    ds = load_dataset(DATASETS[args.dataset])
    X, y = ds.X.reshape(ds.X.shape[0], -1), ds.y
    model = ModelSpec(args.model, hidden=(64,))
    config = TrainingConfig(device="cpu", epochs=args.epochs)
    metric = get_metric("f1")
    print(
        f"{args.dataset} {X.shape} {args.model} threads={torch.get_num_threads()} "
        f"patches={args.patch or 'none'} optimizer={config.resolve_optimizer(model)}"
    )
    results = []
    for K in args.K:
        tables = (
            theta_cost_tables(np.array([0.5]))
            if K == 1
            else cost_tables(metric, grid_lambdas(*metric.lambda_range, K))
        )
        fit_cost_sensitive(X, y, tables, model=model, surrogate="logistic", config=config)
        walls = []
        for _ in range(args.repeats):
            counter["trials"] = 0
            started = time.perf_counter()
            fit = fit_cost_sensitive(X, y, tables, model=model, surrogate="logistic", config=config)
            walls.append(time.perf_counter() - started)
        wall = statistics.median(walls)
        row = {
            "K": K, "wall_s": wall, "walls": walls, "steps": fit.n_steps,
            "ms_per_step": 1e3 * wall / fit.n_steps, "trials": counter["trials"],
            "surrogate_loss_mean": float(fit.surrogate_loss.mean()),
        }  # fmt: skip
        results.append(row)
        print(
            f"K={K:>3}: {wall:.3f}s median of {args.repeats} "
            f"(min {min(walls):.3f}), {fit.n_steps} steps, {row['ms_per_step']:.2f} ms/step, "
            f"{counter['trials']} line-search trials, mean surrogate loss "
            f"{row['surrogate_loss_mean']:.5f}"
        )
        if args.top:
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
                fit_cost_sensitive(X, y, tables, model=model, surrogate="logistic", config=config)
            print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.top))
    if len(results) >= 2:
        a, b = results[0], results[-1]
        print(
            f"K={b['K']} costs {b['wall_s'] / a['wall_s']:.2f}x one K={a['K']} fit; per step "
            f"{b['ms_per_step'] / a['ms_per_step']:.2f}x; sequential estimate "
            f"{b['K'] * a['wall_s'] / b['wall_s']:.2f}x slower than at-once (same step counts)"
        )
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"args": {**vars(args), "out": str(args.out)},
                                        "results": results}, indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
