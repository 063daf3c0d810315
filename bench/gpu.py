"""GPU path benchmark: the paper's image protocol on CIFAR-shaped synthetic tensors.

Measures, in one run on one device:

* ``plain-fp32``: the same network written the straightforward way in plain PyTorch (nn.Sequential,
  fp32, torch.optim.SGD with Nesterov momentum, a per-step cosine schedule, data resident on the
  device, the same on-device pad-4 crop + flip) - the floor any user could write - in images/s;
* ``plain-bf16``: the same loop under bf16 autocast with channels_last (a reference point);
* ``steps``: one SGD step of metro's K-stack per candidate (how layers 2 and 3 are stacked, memory
  layout, chunks of the K models, CUDA graphs, cuDNN autotuning, torch.compile), in ms, and a
  kernel profile of the default and the chosen stacking;
* ``metro-k1``: metro's trainer (``fit_cost_sensitive``) with one model, 100 epochs;
* ``search``: the whole 21-lambda, 100-epoch grid search (fit all 21 cost tables at once, score a
  validation split, pick lambda by F1, score the test split), its wall time and test F1;
* ``plain-at-lambda-star``: the plain fp32 loop trained on the same cost-sensitive loss at the
  search's lambda for as many epochs (seeds 0, 1, 2): speed must not come from learning less;
* ``search-compiled``: the same search with ``TrainingConfig(compile=True)``, after a warm-up fit
  that pays the compilation (reported).

``--check-strengths 1.2,2`` first checks how learnable the synthetic signal is (a plain BCE loop,
validation AUC).

Protocol (paper, Section 6): cnn3 (3x3 convs 32/64/128, max-pool after the first two, global
average pool, linear head), SGD Nesterov momentum 0.9, lr 0.02, batch 1024, weight decay 1e-4,
cosine decay over all steps, 100 epochs, pad-4 random crop + horizontal flip on the device.

Imports only torch, numpy and metro's models/trainer/surrogates/costs/metrics modules; when the
``metro`` package itself does not import (its ``__init__`` pulls in scikit-learn through the
estimator), the submodules are loaded without running the package ``__init__``.

    python bench/gpu.py --out bench/results/gpu-cuda.json            # on a GPU
    python bench/gpu.py --device cpu --n 512 --epochs 2 --size 16 --out /tmp/gpu-cpu.json
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import platform
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

ROOT = Path(__file__).resolve().parent.parent


def _import_metro() -> str:
    """Import metro; fall back to its submodules alone when the package __init__ fails."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    try:
        importlib.import_module("metro")
        return "package"
    except ImportError as exc:  # e.g. scikit-learn or pandas missing on the device image
        for name in [m for m in sys.modules if m == "metro" or m.startswith("metro.")]:
            del sys.modules[name]
        stub = types.ModuleType("metro")
        stub.__path__ = [str(ROOT / "metro")]
        sys.modules["metro"] = stub
        return f"submodules ({type(exc).__name__}: {exc})"


IMPORT_MODE = _import_metro()

from metro import grouped_conv  # noqa: E402
from metro import models as metro_models  # noqa: E402
from metro.costs import cost_tables  # noqa: E402
from metro.metrics import f1  # noqa: E402
from metro.models import ModelSpec  # noqa: E402
from metro.surrogates import cost_sensitive_loss, get_surrogate  # noqa: E402
from metro.trainer import (  # noqa: E402
    TrainingConfig,
    augment_images,
    fit_cost_sensitive,
    predict_scores,
)
from metro.trainer.common import costs_by_label, loss_matrix  # noqa: E402
from metro.trainer.sgd import _stack_forward  # noqa: E402

LOGISTIC = get_surrogate("logistic")
# Steps run before the profiler records (profile_step): past cuDNN's and Triton's first-step setup.
PROFILE_WARMUP = 3


# -- data ---------------------------------------------------------------------------------------
def make_data(
    n: int, size: int, seed: int, positive_fraction: float = 0.2, strength: float = 1.2
) -> tuple[np.ndarray, np.ndarray]:
    """Seeded CIFAR-shaped images [n, 3, size, size] with a learnable, translation-varying
    signal: positives carry a faint coloured 6x6 cross at a random place; all carry smooth noise
    (and 5% of the labels are flipped)."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < positive_fraction).astype(np.int64)
    X = rng.normal(0.0, 1.0, size=(n, 3, size, size)).astype(np.float32)
    # Smooth the noise a little (average with shifted copies) so images have spatial structure.
    X = (X + np.roll(X, 1, axis=2) + np.roll(X, 1, axis=3)) / math.sqrt(3.0)
    p = 6
    cross = np.zeros((3, p, p), dtype=np.float32)
    cross[:, p // 2 - 1 : p // 2 + 1, :] = 1.0
    cross[:, :, p // 2 - 1 : p // 2 + 1] = 1.0
    cross *= np.array([1.0, -0.5, 0.5], dtype=np.float32)[:, None, None]
    pos = np.flatnonzero(y)
    rows = rng.integers(0, size - p + 1, size=pos.size)
    cols = rng.integers(0, size - p + 1, size=pos.size)
    for i, r, c in zip(pos, rows, cols, strict=True):
        X[i, :, r : r + p, c : c + p] += strength * cross
    # Label noise keeps the task from being trivially separable.
    flip = rng.random(n) < 0.05
    y = np.where(flip, 1 - y, y)
    return X, y


# -- the plain PyTorch loop ---------------------------------------------------------------------
def plain_net(channels: tuple[int, int, int]) -> nn.Module:
    c1, c2, c3 = channels
    return nn.Sequential(
        nn.Conv2d(3, c1, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(c1, c2, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(c2, c3, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(c3, 1),
    )


class PlainRun:
    """What :func:`plain_loop` returns: wall seconds of the timed epochs and the trained net."""

    def __init__(self, seconds: float, net: nn.Module, mean: torch.Tensor, std: torch.Tensor):
        self.seconds, self.net, self.mean, self.std = seconds, net, mean, std

    @torch.no_grad()
    def scores(self, X: torch.Tensor) -> np.ndarray:
        self.net.eval()
        out = torch.cat([self.net((xb - self.mean) / self.std) for xb in X.split(4096)])
        return out.squeeze(1).float().cpu().numpy()


def plain_loop(
    X: torch.Tensor,
    y: torch.Tensor,
    *,
    channels: tuple[int, int, int],
    epochs: int,
    batch: int,
    device: torch.device,
    amp: bool = False,
    seed: int = 0,
    table: torch.Tensor | None = None,
) -> PlainRun:
    """Train the straightforward way for ``epochs`` epochs. Without ``table`` the loss is plain
    binary cross-entropy; with one ([true, pred, 1], metro's layout for one lambda) it is the same
    cost-sensitive logistic loss metro minimizes at that lambda."""
    torch.manual_seed(seed)
    net = plain_net(channels).to(device)
    if amp:
        net = net.to(memory_format=torch.channels_last)  # type: ignore[call-overload]
    mean = X.mean(dim=(0, 2, 3), keepdim=True)
    std = X.std(dim=(0, 2, 3), keepdim=True)
    opt = torch.optim.SGD(net.parameters(), lr=0.02, momentum=0.9, nesterov=True, weight_decay=1e-4)
    n = X.shape[0]
    steps = epochs * math.ceil(n / batch)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    yf = y.float()
    gen = torch.Generator(device=device).manual_seed(seed)
    _sync(device)
    started = time.perf_counter()
    net.train()
    for _ in range(epochs):
        perm = torch.randperm(n, device=device)
        for b in range(0, n, batch):
            idx = perm[b : b + batch]
            xb = augment_images((X[idx] - mean) / std, generator=gen)
            if amp:
                xb = xb.contiguous(memory_format=torch.channels_last)
                with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
                    logits = net(xb).squeeze(1)
            else:
                logits = net(xb).squeeze(1)
            if table is None:
                loss = F.binary_cross_entropy_with_logits(logits.float(), yf[idx])
            else:
                cost = table[y[idx], :, 0]  # [b, pred]
                loss = cost_sensitive_loss(LOGISTIC, logits.float(), cost[:, 1], cost[:, 0]).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
    _sync(device)
    return PlainRun(time.perf_counter() - started, net, mean, std)


# -- one training step of the K-stack, by variant -----------------------------------------------
class _AutocastForward(nn.Module):
    """The trainer's step forward (bf16 autocast without the cast cache, as CUDA graphs and
    torch.compile need) as a module, so make_graphed_callables finds the parameters."""

    def __init__(self, model: metro_models.StackedModel, amp: bool) -> None:
        super().__init__()
        self.model, self.amp = model, amp

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return _stack_forward(self.model, z, self.amp).float()


def time_steps(
    X: torch.Tensor,
    y: torch.Tensor,
    tables: np.ndarray,
    *,
    channels: tuple[int, int, int],
    batch: int,
    device: torch.device,
    stacking: str,
    channels_last: bool = True,
    wrap: str = "none",
    cudnn_benchmark: bool = False,
    steps: int = 20,
    warmup: int = 5,
    after_step: Callable[[], None] | None = None,
) -> dict[str, float]:
    """Milliseconds per SGD step of metro's K-stack (the trainer's step: gather the batch,
    standardize, augment, forward, cost-sensitive loss, backward, Nesterov SGD), full batches
    only, timed with CUDA events over ``steps`` steps after ``warmup``. ``stacking`` is one of
    metro's (models._CNN_STACKING); ``wrap`` is ``none``, ``graph``
    (torch.cuda.make_graphed_callables around forward + backward) or ``compile``
    (torch.compile of the forward; its first call's compile time is reported). ``after_step`` is
    called after every step, the warm-up's included (a profiler's schedule)."""
    K = tables.shape[0]
    saved = dict(metro_models._CNN_STACKING)
    metro_models._CNN_STACKING[device.type] = stacking
    torch.backends.cudnn.benchmark = cudnn_benchmark
    try:
        model = metro_models.build_model(
            ModelSpec("cnn3", channels=channels),
            input_shape=tuple(X.shape[1:]),
            n_models=K,
            X_stats=X[:2048].cpu(),
            seed=0,
        ).to(device)
        table = costs_by_label(torch.from_numpy(tables.astype(np.float32))).to(device)
        amp = device.type == "cuda"
        opt = torch.optim.SGD(
            model.parameters(), lr=0.02, momentum=0.9, nesterov=True, weight_decay=1e-4
        )
        fwd: Any = _AutocastForward(model, amp)
        gen = torch.Generator(device=device).manual_seed(0)
        n = X.shape[0]
        perm = torch.randperm(n, device=device)

        def batch_z(i: int) -> tuple[torch.Tensor, torch.Tensor]:
            idx = perm[(i * batch) % (n - batch + 1) :][:batch]
            xb = X[idx]
            if channels_last:
                xb = xb.contiguous(memory_format=torch.channels_last)
            return augment_images(model.standardize(xb), generator=gen), idx

        compile_s = 0.0
        if wrap == "graph":
            z0, _ = batch_z(0)
            fwd = torch.cuda.make_graphed_callables(fwd, (z0,))
        elif wrap == "compile":
            fwd = torch.compile(fwd)
            z0, idx0 = batch_z(0)
            _sync(device)
            t = time.perf_counter()
            loss_matrix(LOGISTIC, fwd(z0), table[y[idx0]]).sum().backward()
            _sync(device)
            compile_s = time.perf_counter() - t
            opt.zero_grad(set_to_none=True)

        def step(i: int) -> None:
            z, idx = batch_z(i)
            losses = loss_matrix(LOGISTIC, fwd(z), table[y[idx]])
            opt.zero_grad(set_to_none=True)
            (losses.sum() / batch).backward()
            opt.step()
            if after_step is not None:
                after_step()

        for i in range(warmup):
            step(i)
        _sync(device)
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for i in range(steps):
                step(warmup + i)
            end.record()
            end.synchronize()
            ms = start.elapsed_time(end) / steps
        else:
            t = time.perf_counter()
            for i in range(steps):
                step(warmup + i)
            ms = 1000 * (time.perf_counter() - t) / steps
        out = {"ms_per_step": round(ms, 3), "n_models": K, "batch": batch}
        out["model_images_per_s"] = round(K * batch / (ms / 1000), 1)
        if wrap == "compile":
            out["compile_s"] = round(compile_s, 2)
        return out
    finally:
        torch.backends.cudnn.benchmark = False
        metro_models._CNN_STACKING.clear()
        metro_models._CNN_STACKING.update(saved)


def profile_step(
    X: torch.Tensor,
    y: torch.Tensor,
    tables: np.ndarray,
    *,
    channels: tuple[int, int, int],
    batch: int,
    device: torch.device,
    stacking: str,
    top: int = 24,
) -> list[dict[str, Any]]:
    """The CUDA kernels of 5 training steps, by total device time (torch.profiler), after
    ``PROFILE_WARMUP`` steps that are not recorded: the first steps hold cuDNN's and Triton's
    one-time setup (autotuning, plan search), which a step of a real fit does not pay."""
    from torch.profiler import ProfilerActivity, profile, schedule

    # wait: the warm-up steps, unrecorded; one profiler warm-up step (recorded, dropped); 5 active.
    plan = schedule(wait=PROFILE_WARMUP, warmup=1, active=5, repeat=1)
    cuda = device.type == "cuda"  # on CPU (a smoke test of this function): the CPU's ops
    activity = ProfilerActivity.CUDA if cuda else ProfilerActivity.CPU
    with profile(activities=[activity], schedule=plan) as prof:
        time_steps(
            X, y, tables, channels=channels, batch=batch, device=device, stacking=stacking,
            steps=6, warmup=PROFILE_WARMUP, after_step=prof.step,
        )  # fmt: skip
    rows = []
    for ev in prof.key_averages():
        t = ev.self_cpu_time_total
        if cuda:
            t = getattr(ev, "self_device_time_total", 0) or getattr(ev, "self_cuda_time_total", 0)
        if t > 0:
            rows.append({"kernel": ev.key[:90], "calls": ev.count, "ms": round(t / 1000, 2)})
    rows.sort(key=lambda r: -r["ms"])
    # Every kernel's time over the 5 steps, then the longest ones.
    total = {"kernel": "(all kernels, 5 steps)", "calls": 0, "ms": sum(r["ms"] for r in rows)}
    return [total, *rows[:top]]


# -- metro --------------------------------------------------------------------------------------
def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def metro_fit(
    X: torch.Tensor,
    y: torch.Tensor,
    costs: np.ndarray,
    *,
    channels: tuple[int, int, int],
    epochs: int,
    batch: int,
    device: torch.device,
    seed: int = 0,
    compile: bool = False,
) -> tuple[Any, float]:
    config = TrainingConfig(
        compile=compile,
        optimizer="sgd",
        epochs=epochs,
        batch_size=batch,
        lr=0.02,
        weight_decay=1e-4,
        momentum=0.9,
        augment=True,
        device=str(device),
        mixed_precision=True,
        seed=seed,
    )
    _sync(device)
    started = time.perf_counter()
    result = fit_cost_sensitive(
        X,
        y,
        costs,
        model=ModelSpec("cnn3", channels=channels),
        surrogate="logistic",
        config=config,
    )
    _sync(device)
    return result, time.perf_counter() - started


def f1_of(pred: np.ndarray, y: np.ndarray) -> np.ndarray:
    """F1 of each column of boolean predictions [n, K]."""
    yy = y[:, None].astype(bool)
    tp = (pred & yy).sum(0)
    fp = (pred & ~yy).sum(0)
    fn = (~pred & yy).sum(0)
    return np.where(2 * tp + fp + fn > 0, 2 * tp / np.maximum(2 * tp + fp + fn, 1), 0.0)


def _auc(scores: np.ndarray, y: np.ndarray) -> float:
    """Area under the ROC curve by ranks (ties averaged)."""
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    sorted_scores = scores[order]
    ranks[order] = np.arange(1, len(scores) + 1)
    for v in np.unique(sorted_scores[np.r_[False, np.diff(sorted_scores) == 0]]):
        tie = scores == v
        ranks[tie] = ranks[tie].mean()
    pos = y == 1
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / max(n_pos * n_neg, 1))


# -- main ---------------------------------------------------------------------------------------
def fresh_search(
    args: argparse.Namespace,
    report: dict[str, Any],
    X: torch.Tensor,
    y: torch.Tensor,
    tables: np.ndarray,
    lambdas: np.ndarray,
    val: tuple[torch.Tensor, np.ndarray],
    test: tuple[torch.Tensor, np.ndarray],
) -> None:
    """The 21-lambda search as the first thing this process trains (``--fresh-search``): what
    a freshly started worker pays, compilation and autotuning included or loaded from disk."""
    device = X.device
    channels = tuple(int(c) for c in args.channels.split(","))
    stacking = args.stacking if args.stacking not in ("library", "fastest") else None
    saved = dict(metro_models._CNN_STACKING)
    if stacking is not None:
        metro_models._CNN_STACKING[device.type] = stacking
    try:
        _sync(device)
        started = time.perf_counter()
        result, fit_sec = metro_fit(
            X, y, tables, channels=channels, epochs=args.epochs, batch=args.batch, device=device,
            compile=args.fresh_search == "compiled",
        )  # fmt: skip
        val_f1 = f1_of(predict_scores(result.model, val[0], device=str(device)) > 0, val[1])
        best = int(np.argmax(val_f1))
        picked = predict_scores(result.model.select([best]), test[0], device=str(device))
        wall = time.perf_counter() - started
    finally:
        metro_models._CNN_STACKING.clear()
        metro_models._CNN_STACKING.update(saved)
    report["results"]["fresh-search"] = {
        "mode": args.fresh_search,
        "stacking": metro_models._CNN_STACKING.get(device.type) if stacking is None else stacking,
        "caches": {v: os.environ.get(v) for v in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")},
        "wall_s": round(wall, 2),
        "fit_s": round(fit_sec, 2),
        "best_lambda": float(lambdas[best]),
        "val_f1": float(val_f1[best]),
        "test_f1": float(f1_of(picked > 0, test[1])[0]),
        "triton_failures": list(grouped_conv._failed),
    }
    print(f"fresh search: {report['results']['fresh-search']}", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="auto")
    ap.add_argument("--n", type=int, default=10_000, help="training images")
    ap.add_argument("--n-eval", type=int, default=2_000, help="validation and test images each")
    ap.add_argument("--size", type=int, default=32)
    ap.add_argument("--channels", default="32,64,128")
    ap.add_argument("--epochs", type=int, default=100, help="epochs of the full fits")
    ap.add_argument("--probe-epochs", type=int, default=3, help="epochs of a timed plain probe")
    ap.add_argument("--steps", type=int, default=20, help="timed steps per step variant")
    ap.add_argument(
        "--variants",
        default="all",
        help="step variants to time: all, none, or a comma list of their names",
    )
    ap.add_argument(
        "--stacking",
        default="library",
        help="the search's stacking: library (metro's default for the device), fastest (the "
        "fastest library stacking timed in this run), or a models._CNN_STACKING value",
    )
    ap.add_argument(
        "--steps-only",
        action="store_true",
        help="stop after timing the step variants (no fits, no search)",
    )
    ap.add_argument(
        "--fresh-search",
        choices=["eager", "compiled"],
        default=None,
        help="only the search, in this fresh process with no warm-up fit: its wall time holds "
        "whatever this process compiles or autotunes first (or loads from the caches that "
        "TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR name), as a restarted worker's would",
    )
    ap.add_argument("--plain-seeds", type=int, default=3, help="plain loops at the chosen lambda")
    ap.add_argument(
        "--no-compiled-search",
        action="store_true",
        help="skip the second search with TrainingConfig(compile=True)",
    )
    ap.add_argument("--strength", type=float, default=1.2, help="the positives' signal strength")
    ap.add_argument(
        "--check-strengths",
        default="",
        help="comma list of signal strengths to check first with a plain BCE loop of the full "
        "epochs (validation AUC and best F1 over thresholds)",
    )
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--k", type=int, default=21, help="lambdas of the search")
    ap.add_argument(
        "--budget-s",
        type=float,
        default=170.0,
        help="stop starting new sections after this many seconds",
    )
    ap.add_argument("--out", default=str(ROOT / "bench/results/gpu.json"))
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    device = torch.device(
        "cuda"
        if args.device == "auto" and torch.cuda.is_available()
        else ("cpu" if args.device == "auto" else args.device)
    )
    channels = tuple(int(c) for c in args.channels.split(","))
    assert len(channels) == 3
    try:
        import sklearn  # noqa: F401

        has_sklearn = True
    except ImportError:
        has_sklearn = False
    report: dict[str, Any] = {
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "device": str(device),
            "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
            "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(),
            "torch_threads": torch.get_num_threads(),
            "metro_import": IMPORT_MODE,
            "sklearn_available": has_sklearn,
        },
        "args": vars(args),
        "protocol": f"cnn3 {list(channels)}, SGD nesterov 0.9, lr 0.02, batch {args.batch}, "
        "wd 1e-4, cosine, pad-4 crop + flip on device",
        "results": {},
        "notes": [],
    }
    res = report["results"]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)

    def save() -> None:
        report["elapsed_s"] = round(time.perf_counter() - t0, 2)
        out.write_text(json.dumps(report, indent=1, default=float))

    def left() -> float:
        return args.budget_s - (time.perf_counter() - t0)

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - t0:7.1f}s] {msg}", flush=True)

    for strength in [float(v) for v in args.check_strengths.split(",") if v]:
        Xc, yc = make_data(args.n, args.size, seed=0, strength=strength)
        Xcv, ycv = make_data(args.n_eval, args.size, seed=1, strength=strength)
        run = plain_loop(
            torch.from_numpy(Xc).to(device), torch.from_numpy(yc).to(device),
            channels=channels, epochs=args.epochs, batch=args.batch, device=device,
        )  # fmt: skip
        sc = run.scores(torch.from_numpy(Xcv).to(device))
        cuts = np.quantile(sc, np.linspace(0.5, 0.97, 48))
        report.setdefault("data_check", []).append(
            {
                "strength": strength,
                "epochs": args.epochs,
                "seconds": round(run.seconds, 2),
                "val_auc": round(_auc(sc, ycv), 4),
                "val_best_f1": round(float(f1_of(sc[:, None] > cuts[None, :], ycv).max()), 4),
                "val_f1_at_zero": round(float(f1_of(sc[:, None] > 0, ycv)[0]), 4),
            }
        )
        log(f"data check: {report['data_check'][-1]}")

    Xtr_np, ytr_np = make_data(args.n, args.size, seed=0, strength=args.strength)
    Xva_np, yva_np = make_data(args.n_eval, args.size, seed=1, strength=args.strength)
    Xte_np, yte_np = make_data(args.n_eval, args.size, seed=2, strength=args.strength)
    X = torch.from_numpy(Xtr_np).to(device)
    y = torch.from_numpy(ytr_np).to(device)
    Xva = torch.from_numpy(Xva_np).to(device)
    Xte = torch.from_numpy(Xte_np).to(device)
    report["data"] = {
        "n_train": args.n,
        "n_val": args.n_eval,
        "n_test": args.n_eval,
        "shape": [3, args.size, args.size],
        "positive_fraction": float(ytr_np.mean()),
        "strength": args.strength,
    }
    n, E, P = args.n, args.epochs, args.probe_epochs
    spec = f1()
    # The search's grid: K evenly spaced lambdas over the metric's range, ends included (F1 is a
    # loss -F1 in metro's convention, so lambda lies in [-1, 0]).
    lo, hi = spec.lambda_range
    lambdas = np.linspace(lo, hi, args.k)
    tables = cost_tables(spec, lambdas, shift="minimal")
    one_table = cost_tables(spec, np.array([(lo + hi) / 2]), shift="minimal")
    report["search"] = {"metric": "f1", "shift": "minimal", "lambdas": lambdas.tolist()}
    save()
    if args.fresh_search is not None:
        fresh_search(args, report, X, y, tables, lambdas, (Xva, yva_np), (Xte, yte_np))
        save()
        return 0

    def ips(seconds: float, epochs: int, k: int = 1) -> dict[str, float]:
        return {
            "seconds": round(seconds, 3),
            "epochs": epochs,
            "n_models": k,
            "images_per_s": round(n * epochs / seconds, 1),
            "model_images_per_s": round(k * n * epochs / seconds, 1),
            "ms_per_epoch": round(1000 * seconds / epochs, 2),
        }

    # (a) plain fp32 loop and its bf16/channels_last variant: warm up one epoch, time P*3 epochs.
    for name, amp in (("plain-fp32", False), ("plain-bf16", True)):
        plain_loop(X, y, channels=channels, epochs=1, batch=args.batch, device=device, amp=amp)
        run = plain_loop(
            X, y, channels=channels, epochs=3 * P, batch=args.batch, device=device, amp=amp
        )
        res[name] = ips(run.seconds, 3 * P)
        log(f"{name}: {res[name]}")
        save()

    # (b) one training step of the K-stack, variant by variant (same batch, same tables).
    K = args.k
    # Layers 2 and 3 each stacked one of metro's ways (models.CONV_STACKINGS), channels-last as the
    # trainer runs; then the other candidates around the library's stackings.
    combos = [
        f"{a}/{b}" if a != b else a
        for a in metro_models.CONV_STACKINGS
        for b in metro_models.CONV_STACKINGS
    ]
    variants: list[tuple[str, dict[str, Any]]] = [(c, {"stacking": c}) for c in combos]
    variants += [
        ("grouped-nchw", {"stacking": "grouped", "channels_last": False}),
        ("gemm-nchw", {"stacking": "gemm", "channels_last": False}),
        ("grouped-cudnn-benchmark", {"stacking": "grouped", "cudnn_benchmark": True}),
        ("loop", {"stacking": "loop"}),
        (f"grouped-3-chunks-of-{K // 3}", {"stacking": "grouped", "chunks": 3}),
        ("grouped-cuda-graph", {"stacking": "grouped", "wrap": "graph"}),
        ("grouped-k1", {"stacking": "grouped", "k": 1}),
        ("grouped-k1-cuda-graph", {"stacking": "grouped", "k": 1, "wrap": "graph"}),
        ("grouped-compile", {"stacking": "grouped", "wrap": "compile"}),
        # The same stacking timed twice in one run: the spread a difference must beat.
        ("grouped/split-again", {"stacking": "grouped/split"}),
        ("triton-again", {"stacking": "triton"}),
        ("grouped/split-compile", {"stacking": "grouped/split", "wrap": "compile"}),
        ("triton-compile", {"stacking": "triton", "wrap": "compile"}),
    ]
    wanted = None if args.variants == "all" else set(args.variants.split(","))
    steps_res: dict[str, Any] = {}
    res["steps"] = steps_res

    def run_variants(which: list[tuple[str, dict[str, Any]]], reserve_s: float) -> None:
        for name, kw in which:
            if args.variants == "none" or (wanted is not None and name not in wanted):
                continue
            if kw.get("wrap") in ("graph", "compile") and device.type != "cuda":
                continue
            if left() < reserve_s:
                report["notes"].append(f"step variant {name} skipped (time budget)")
                continue
            kw = dict(kw)
            chunks, k = kw.pop("chunks", 1), kw.pop("k", K)
            try:
                timed = [
                    time_steps(
                        X,
                        y,
                        tables[part],
                        channels=channels,
                        batch=args.batch,
                        device=device,
                        steps=args.steps,
                        **kw,
                    )
                    for part in np.array_split(np.arange(k), chunks)
                ]
                row = dict(timed[0])
                row["ms_per_step"] = round(sum(t["ms_per_step"] for t in timed), 3)
                row["n_models"] = k
                row["model_images_per_s"] = round(k * args.batch / (row["ms_per_step"] / 1000), 1)
                steps_res[name] = row
            except Exception as exc:  # one variant's failure must not lose the others
                steps_res[name] = {"error": f"{type(exc).__name__}: {exc}"[:500]}
            log(f"step {name}: {steps_res[name]}")
            save()

    # torch.compile's first call compiles for tens of seconds: those variants run last.
    late = [v for v in variants if v[1].get("wrap") == "compile"]
    run_variants([v for v in variants if v not in late], reserve_s=10 if args.steps_only else 60)

    library = metro_models._CNN_STACKING.get(device.type, "loop")
    timed_library = {
        s: steps_res[s]["ms_per_step"]
        for s in [*combos, "loop"]
        if "ms_per_step" in steps_res.get(s, {})
    }
    if args.stacking == "library":
        stacking = library
    elif args.stacking == "fastest":
        stacking = min(timed_library, key=timed_library.__getitem__) if timed_library else library
    else:
        stacking = args.stacking
    report["search_stacking"] = {
        "used": stacking,
        "library_default": library,
        "asked": args.stacking,
    }
    if (
        device.type == "cuda"
        and args.variants != "none"
        and left() > (10 if args.steps_only else 60)
    ):
        for s in dict.fromkeys(["grouped", stacking]):
            try:
                report.setdefault("profile", {})[s] = profile_step(
                    X, y, tables, channels=channels, batch=args.batch, device=device, stacking=s
                )
            except Exception as exc:
                report.setdefault("profile", {})[s] = [{"error": f"{type(exc).__name__}: {exc}"}]
        save()

    compiled_name = f"{stacking}-compile"
    if (
        stacking not in ("grouped", "loop")
        and device.type == "cuda"
        and all(name != compiled_name for name, _ in late)
    ):
        late.append((compiled_name, {"stacking": stacking, "wrap": "compile"}))
    if args.steps_only:
        run_variants(late, reserve_s=30)
        log(f"wrote {out}")
        return 0

    saved_stacking = dict(metro_models._CNN_STACKING)
    metro_models._CNN_STACKING[device.type] = stacking
    try:
        # (c) metro, one model: warm-up fit of 1 epoch, then the full E epochs.
        metro_fit(X, y, one_table, channels=channels, epochs=1, batch=args.batch, device=device)
        _, sec = metro_fit(
            X, y, one_table, channels=channels, epochs=E, batch=args.batch, device=device
        )
        res["metro-k1"] = ips(sec, E)
        res["metro-k1"]["note"] = "whole fit_cost_sensitive call (setup and final loss pass)"
        log(f"metro-k1: {res['metro-k1']}")
        save()

        # (d) the search: K lambdas at once for E epochs (after a 1-epoch warm-up fit), validation
        # F1 at sign(h) picks lambda, the test split scores the pick.
        metro_fit(X, y, tables, channels=channels, epochs=1, batch=args.batch, device=device)
        _sync(device)
        started = time.perf_counter()
        result, fit_sec = metro_fit(
            X, y, tables, channels=channels, epochs=E, batch=args.batch, device=device
        )
        dev_name = str(device)
        val_scores = predict_scores(result.model, Xva, device=dev_name)
        val_f1 = f1_of(val_scores > 0, yva_np)
        best = int(np.argmax(val_f1))
        test_scores = predict_scores(result.model.select([best]), Xte, device=dev_name)
        test_f1 = float(f1_of(test_scores > 0, yte_np)[0])
        search_sec = time.perf_counter() - started
    finally:
        metro_models._CNN_STACKING.clear()
        metro_models._CNN_STACKING.update(saved_stacking)
    res[f"metro-k{K}"] = ips(fit_sec, E, K)
    res["search"] = {
        "n_lambdas": K,
        "epochs": E,
        "stacking": stacking,
        "wall_s": round(search_sec, 2),
        "fit_s": round(fit_sec, 2),
        "best_lambda": float(lambdas[best]),
        "val_f1": float(val_f1[best]),
        "test_f1": test_f1,
        "val_f1_by_lambda": [round(float(v), 4) for v in val_f1],
        "positive_rate_by_lambda": [round(float(v), 4) for v in (val_scores > 0).mean(0)],
        "sequential_k1_estimate_s": round(res["metro-k1"]["seconds"] * K, 1),
        "plain_fp32_sequential_estimate_s": round(
            K * E * res["plain-fp32"]["ms_per_epoch"] / 1000, 1
        ),
    }
    log(f"search: {res['search']}")
    save()

    # (e) the plain fp32 loop trained on the same cost-sensitive loss at the chosen lambda, for
    # as many epochs: the search must learn as much as a user's own loop would.
    best_table = costs_by_label(torch.from_numpy(tables[best : best + 1].astype(np.float32))).to(
        device
    )
    plain_runs = []
    for seed in range(args.plain_seeds):
        if left() < 1.5 * E * res["plain-fp32"]["ms_per_epoch"] / 1000 + 5:
            report["notes"].append(f"plain loop seed {seed} at lambda* skipped (time budget)")
            break
        run = plain_loop(
            X, y, channels=channels, epochs=E, batch=args.batch, device=device, seed=seed,
            table=best_table,
        )  # fmt: skip
        plain_runs.append(
            {
                "seed": seed,
                "seconds": round(run.seconds, 2),
                "val_f1": float(f1_of(run.scores(Xva)[:, None] > 0, yva_np)[0]),
                "test_f1": float(f1_of(run.scores(Xte)[:, None] > 0, yte_np)[0]),
            }
        )
        log(f"plain at lambda*: {plain_runs[-1]}")
    if plain_runs:
        res["plain-at-lambda-star"] = {
            "lambda": float(lambdas[best]),
            "epochs": E,
            "runs": plain_runs,
            "mean_test_f1": round(float(np.mean([r["test_f1"] for r in plain_runs])), 4),
            "metro_test_f1": test_f1,
        }
    # (f) the same search with TrainingConfig(compile=True): the warm-up fit (1 epoch) pays the
    # compilation (both batch shapes of an epoch), then the timed search reuses it.
    if not args.no_compiled_search:
        metro_models._CNN_STACKING[device.type] = stacking
        try:
            _, warm_sec = metro_fit(
                X, y, tables, channels=channels, epochs=1, batch=args.batch, device=device,
                compile=True,
            )  # fmt: skip
            started = time.perf_counter()
            compiled, compiled_fit_sec = metro_fit(
                X, y, tables, channels=channels, epochs=E, batch=args.batch, device=device,
                compile=True,
            )  # fmt: skip
            val_c = f1_of(predict_scores(compiled.model, Xva, device=dev_name) > 0, yva_np)
            best_c = int(np.argmax(val_c))
            test_c = predict_scores(compiled.model.select([best_c]), Xte, device=dev_name)
            compiled_sec = time.perf_counter() - started
        finally:
            metro_models._CNN_STACKING.clear()
            metro_models._CNN_STACKING.update(saved_stacking)
        res[f"metro-k{K}-compiled"] = ips(compiled_fit_sec, E, K)
        res["search-compiled"] = {
            "n_lambdas": K,
            "epochs": E,
            "stacking": stacking,
            "compile": True,
            "warm_up_fit_s": round(warm_sec, 2),
            "wall_s": round(compiled_sec, 2),
            "fit_s": round(compiled_fit_sec, 2),
            "best_lambda": float(lambdas[best_c]),
            "val_f1": float(val_c[best_c]),
            "test_f1": float(f1_of(test_c > 0, yte_np)[0]),
            "val_f1_by_lambda": [round(float(v), 4) for v in val_c],
        }
        log(f"search-compiled: {res['search-compiled']}")
        save()

    if device.type == "cuda":
        report["machine"]["max_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    report["triton_failures"] = list(grouped_conv._failed)
    save()
    run_variants(late, reserve_s=30)
    log(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
