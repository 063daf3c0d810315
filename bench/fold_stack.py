"""The folds of a cross-validated grid trained as one stack, against fold by fold, in one run.

The task is ``bench/gpu.py``'s: CIFAR-shaped synthetic images (``make_data``, signal strength
1.2), cnn3 with the paper's protocol (SGD Nesterov, lr 0.02, batch 1,024, weight decay 1e-4,
cosine decay, pad-4 crop + flip, bf16 autocast on CUDA), F1, 21 lambdas, 5 folds: the default
job's grid. Both ways fit the same 105 models on the same folds and are judged by the same grid
(``metro.search.grid_search``):

* ``per-fold``: 5 stacked fits of 21 models, one per fold (what a job did before);
* ``stacked``: one fit of 105 models on the development rows with per-fold row masks
  (``metro.search.fold_stack.FoldStackSolver``).

Reported per way: wall seconds of the fits (device synchronized), the lambda chosen, the pooled
held-out F1 at it, and the peak GPU memory. ``--k-probe`` then fits stacks of growing K for one
epoch and reports images/s and peak memory up to the first K that does not fit.

    python bench/fold_stack.py --epochs 10 --out bench/results/fold-stack-cuda.json   # a GPU
    python bench/fold_stack.py --device cpu --n 600 --size 16 --epochs 1 --channels 4,8,8 \
        --n-lambdas 3 --k-probe 6,12 --out /tmp/fold-stack-cpu.json                     # smoke
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.gpu import make_data  # noqa: E402
from metro.costs import cost_tables  # noqa: E402
from metro.datasets import Dataset  # noqa: E402
from metro.experiment import prepare_repeat  # noqa: E402
from metro.metrics import get_metric  # noqa: E402
from metro.models import ModelSpec  # noqa: E402
from metro.search import SearchConfig, grid_search  # noqa: E402
from metro.surrogates import get_surrogate  # noqa: E402
from metro.trainer import TrainingConfig, fit_cost_sensitive  # noqa: E402


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _peak_gib(device: str) -> float | None:
    if not device.startswith("cuda"):
        return None
    return round(torch.cuda.max_memory_allocated() / 2**30, 2)


def _reset_peak(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def tabular(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Seeded tabular rows: 64 features, 20% positives by a noisy non-linear rule."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 64)).astype(np.float32)
    z = X[:, :8] @ rng.normal(size=8) + np.sin(2 * X[:, 8]) + rng.normal(size=n)
    return X, (z > np.quantile(z, 0.8)).astype(np.int64)


def compare(args: argparse.Namespace) -> dict[str, Any]:
    images = args.model == "cnn3"
    X, y = make_data(args.n, args.size, seed=0) if images else tabular(args.n)
    data = Dataset(
        X=X, y=y, feature_names=None, positive_label=1, negative_label=0, source="synthetic"
    )
    channels = tuple(int(c) for c in args.channels.split(","))
    model = ModelSpec("cnn3", channels=channels) if images else ModelSpec("mlp", hidden=(64,))
    training = TrainingConfig(
        optimizer="sgd", device=args.device, epochs=args.epochs, batch_size=1024, lr=0.02,
        momentum=0.9, weight_decay=1e-4, augment=images, mixed_precision=True, seed=0,
    )  # fmt: skip
    # No test split: the folds are the whole point, and they use training + validation.
    setup = prepare_repeat(
        data, metric=get_metric("f1"), surrogate=get_surrogate("logistic"), model=model,
        training=training, repeat=0, validation_fraction=0.25, test_fraction=0.2,
    )  # fmt: skip
    config = SearchConfig(n_lambdas=args.n_lambdas, cv=args.folds, refit=False)
    folds = [setup.solver(f"fold{k}of{args.folds}") for k in range(args.folds)]
    out: dict[str, Any] = {"development_rows": int(setup.development.size)}
    # A warm-up fit first, so neither way pays the kernels' first-use cost (cuDNN autotuning).
    folds[0].fit(np.array([-0.5]), shift="minimal")
    for way in args.ways.split(","):
        _reset_peak(args.device)
        _sync(args.device)
        started = time.perf_counter()
        stack = setup.solver(f"folds{args.folds}") if way == "stacked" else None
        result = grid_search(folds, config=config, fold_stack=stack)
        _sync(args.device)
        seconds = time.perf_counter() - started
        fit_seconds = sum(step.seconds for step in result.trace)
        out[way] = {
            "seconds": round(seconds, 2),
            "fit_seconds": round(fit_seconds, 2),
            "lambda": result.best_lambda,
            "held_out_f1": round(setup.spec.score_from_loss(result.selection_loss), 4),
            "curve": [
                [p.lam, round(setup.spec.score_from_loss(p.loss), 4)]
                for p in result.selection_curve
            ],
            "peak_gib": _peak_gib(args.device),
            "batch_size": (
                stack.fit_config.batch_size  # type: ignore[attr-defined]
                if stack is not None
                else training.batch_size
            ),
        }
        print(way, json.dumps({k: v for k, v in out[way].items() if k != "curve"}), flush=True)
    return out


def k_probe(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Stacks of K models for one epoch on the images: images/s (model-images/s) and memory."""
    X, y = make_data(args.n, args.size, seed=1)
    channels = tuple(int(c) for c in args.channels.split(","))
    spec = get_metric("f1").resolve(y)
    rows: list[dict[str, Any]] = []
    for K in (int(k) for k in args.k_probe.split(",")):
        lambdas = np.linspace(-0.95, -0.05, K)
        costs = cost_tables(spec, lambdas, shift="minimal")
        config = TrainingConfig(
            optimizer="sgd", device=args.device, epochs=args.probe_epochs, batch_size=1280,
            augment=True, mixed_precision=True, seed=0,
        )  # fmt: skip
        _reset_peak(args.device)
        _sync(args.device)
        started = time.perf_counter()
        try:
            fit_cost_sensitive(
                X, y, costs, model=ModelSpec("cnn3", channels=channels), surrogate="logistic",
                config=config,
            )  # fmt: skip
        except torch.OutOfMemoryError as exc:
            rows.append({"k": K, "error": f"out of memory: {str(exc)[:200]}"})
            print(rows[-1], flush=True)
            break
        _sync(args.device)
        seconds = time.perf_counter() - started
        images = args.n * args.probe_epochs
        rows.append({
            "k": K, "seconds": round(seconds, 2), "images_per_s": round(images / seconds),
            "model_images_per_s": round(K * images / seconds), "peak_gib": _peak_gib(args.device),
        })  # fmt: skip
        print(rows[-1], flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--n", type=int, default=10_000)
    p.add_argument("--size", type=int, default=32)
    p.add_argument("--model", choices=("cnn3", "mlp"), default="cnn3")
    p.add_argument("--channels", default="32,64,128")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--n-lambdas", type=int, default=21)
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--ways", default="stacked,per-fold")
    p.add_argument("--k-probe", default="", help="comma-separated K values (empty: none)")
    p.add_argument("--probe-epochs", type=int, default=1)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    report: dict[str, Any] = {
        "args": vars(args) | {"out": str(args.out)},
        "torch": torch.__version__,
        "python": platform.python_version(),
        "device_name": torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu",
    }
    if args.ways:
        report["compare"] = compare(args)
    if args.k_probe and args.model == "cnn3":
        report["k_probe"] = k_probe(args)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
