"""GPU path benchmark: the paper's image protocol on CIFAR-shaped synthetic tensors.

Measures images per second (training images processed per second, augmentation included) for

* ``plain-fp32``: the same network written the straightforward way in plain PyTorch (nn.Sequential,
  fp32, torch.optim.SGD with Nesterov momentum, a per-step cosine schedule, data resident on the
  device, the same on-device pad-4 crop + flip) - the floor any user could write;
* ``plain-bf16``: the same loop under bf16 autocast with channels_last (a reference point);
* ``metro-k1``: metro's trainer (``fit_cost_sensitive``) with one model;
* ``metro-k21``: metro's K-at-once trainer fitting 21 lambdas at once;

and the wall time of a whole 21-lambda, 100-epoch grid search (fit all 21 cost tables at once, score
a validation split, pick lambda by F1, score the test split), plus short probes of alternatives
(cuDNN autotuning, the per-model loop instead of grouped convolutions, chunks of 7 lambdas).

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
import platform
import sys
import time
import types
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

from metro import models as metro_models  # noqa: E402
from metro.costs import cost_tables  # noqa: E402
from metro.metrics import f1  # noqa: E402
from metro.models import ModelSpec  # noqa: E402
from metro.trainer import (  # noqa: E402
    TrainingConfig,
    augment_images,
    fit_cost_sensitive,
    predict_scores,
)


# -- data ---------------------------------------------------------------------------------------
def make_data(
    n: int, size: int, seed: int, positive_fraction: float = 0.2
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
    strength = 1.2
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
) -> float:
    """Train the straightforward way; returns wall seconds of ``epochs`` epochs (after sync)."""
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
            loss = F.binary_cross_entropy_with_logits(logits.float(), yf[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
    _sync(device)
    return time.perf_counter() - started


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
) -> tuple[Any, float]:
    config = TrainingConfig(
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


# -- main ---------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="auto")
    ap.add_argument("--n", type=int, default=10_000, help="training images")
    ap.add_argument("--n-eval", type=int, default=2_000, help="validation and test images each")
    ap.add_argument("--size", type=int, default=32)
    ap.add_argument("--channels", default="32,64,128")
    ap.add_argument("--epochs", type=int, default=100, help="epochs of the full fits")
    ap.add_argument("--probe-epochs", type=int, default=3, help="epochs of a timed probe")
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

    Xtr_np, ytr_np = make_data(args.n, args.size, seed=0)
    Xva_np, yva_np = make_data(args.n_eval, args.size, seed=1)
    Xte_np, yte_np = make_data(args.n_eval, args.size, seed=2)
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
        sec = plain_loop(
            X, y, channels=channels, epochs=3 * P, batch=args.batch, device=device, amp=amp
        )
        res[name] = ips(sec, 3 * P)
        log(f"{name}: {res[name]}")
        save()

    # (b) metro, one model: warm-up fit of 1 epoch, then the full E epochs.
    metro_fit(X, y, one_table, channels=channels, epochs=1, batch=args.batch, device=device)
    _, sec = metro_fit(
        X, y, one_table, channels=channels, epochs=E, batch=args.batch, device=device
    )
    res["metro-k1"] = ips(sec, E)
    res["metro-k1"]["note"] = "whole fit_cost_sensitive call (setup and final loss pass included)"
    log(f"metro-k1: {res['metro-k1']}")
    save()

    # (c) metro, K lambdas at once: warm-up, a probe of P epochs, then the full search if it fits.
    K = args.k
    metro_fit(X, y, tables, channels=channels, epochs=1, batch=args.batch, device=device)
    _, sec = metro_fit(X, y, tables, channels=channels, epochs=P, batch=args.batch, device=device)
    res[f"metro-k{K}-probe"] = ips(sec, P, K)
    log(f"metro-k{K} probe: {res[f'metro-k{K}-probe']}")
    save()
    per_epoch = sec / P
    full_epochs = E if per_epoch * E * 1.1 < left() - 10 else max(P, int((left() - 15) / per_epoch))
    if full_epochs < E:
        report["notes"].append(
            f"search ran {full_epochs} of {E} epochs (time budget); "
            f"its {E}-epoch wall time is extrapolated"
        )
    started = time.perf_counter()
    result, fit_sec = metro_fit(
        X, y, tables, channels=channels, epochs=full_epochs, batch=args.batch, device=device
    )
    dev_name = str(device)
    val_scores = predict_scores(result.model, Xva, device=dev_name)
    val_f1 = f1_of(val_scores > 0, yva_np)
    best = int(np.argmax(val_f1))
    test_scores = predict_scores(result.model.select([best]), Xte, device=dev_name)
    test_f1 = float(f1_of(test_scores > 0, yte_np)[0])
    search_sec = time.perf_counter() - started
    res[f"metro-k{K}"] = ips(fit_sec, full_epochs, K)
    res["search"] = {
        "n_lambdas": K,
        "epochs": full_epochs,
        "wall_s": round(search_sec, 2),
        "fit_s": round(fit_sec, 2),
        f"wall_s_for_{E}_epochs": round(
            search_sec if full_epochs == E else search_sec * E / full_epochs, 2
        ),
        "extrapolated": full_epochs != E,
        "best_lambda": float(lambdas[best]),
        "val_f1": float(val_f1[best]),
        "test_f1": test_f1,
        "val_f1_by_lambda": [round(float(v), 4) for v in val_f1],
        "sequential_k1_estimate_s": round(res["metro-k1"]["seconds"] * K * E / E, 1),
        "plain_fp32_sequential_estimate_s": round(
            K * E * res["plain-fp32"]["ms_per_epoch"] / 1000, 1
        ),
    }
    log(f"search: {res['search']}")
    save()

    # Probes of alternatives (each: 1 warm-up epoch + P timed), while time is left.
    probes: list[tuple[str, Any]] = []

    def with_benchmark() -> float:
        torch.backends.cudnn.benchmark = True
        try:
            metro_fit(X, y, tables, channels=channels, epochs=1, batch=args.batch, device=device)
            return metro_fit(
                X, y, tables, channels=channels, epochs=P, batch=args.batch, device=device
            )[1]
        finally:
            torch.backends.cudnn.benchmark = False

    def with_loop() -> float:
        saved = dict(metro_models._CNN_STACKING)
        metro_models._CNN_STACKING[device.type] = "loop"
        try:
            metro_fit(X, y, tables, channels=channels, epochs=1, batch=args.batch, device=device)
            return metro_fit(
                X, y, tables, channels=channels, epochs=P, batch=args.batch, device=device
            )[1]
        finally:
            metro_models._CNN_STACKING.clear()
            metro_models._CNN_STACKING.update(saved)

    def chunks_of_7() -> float:
        total = 0.0
        for part in np.array_split(np.arange(K), max(1, K // 7)):
            if total == 0.0:
                metro_fit(
                    X, y, tables[part], channels=channels, epochs=1, batch=args.batch, device=device
                )
            total += metro_fit(
                X, y, tables[part], channels=channels, epochs=P, batch=args.batch, device=device
            )[1]
        return total

    def plain_benchmark_bf16() -> float:
        torch.backends.cudnn.benchmark = True
        try:
            plain_loop(X, y, channels=channels, epochs=1, batch=args.batch, device=device, amp=True)
            return (
                plain_loop(
                    X, y, channels=channels, epochs=3 * P, batch=args.batch, device=device, amp=True
                )
                / 3
            )  # per P epochs
        finally:
            torch.backends.cudnn.benchmark = False

    probes = [
        (f"metro-k{K}-cudnn-benchmark", with_benchmark),
        ("plain-bf16-cudnn-benchmark", plain_benchmark_bf16),
        (f"metro-k{K}-as-3-chunks-of-{K // 3}", chunks_of_7),
        (f"metro-k{K}-loop-stacking", with_loop),
    ]
    est = per_epoch * (P + 1) * 1.5 + 5
    for name, fn in probes:
        if left() < est:
            report["notes"].append(f"probe {name} skipped (time budget)")
            continue
        try:
            sec = fn()
            k = 1 if name.startswith("plain") else K
            res[name] = ips(sec, P, k)
            log(f"{name}: {res[name]}")
        except Exception as exc:  # a probe must not lose the main numbers
            res[name] = {"error": f"{type(exc).__name__}: {exc}"}
        save()
    if device.type == "cuda":
        report["machine"]["max_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    save()
    log(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
