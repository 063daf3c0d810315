"""Is the no_signal warning's level right? A measurement (no default is changed here).

THE RULE, written before anything was run:

* Settings.
  - small: bench/small_data.py's tier on the main suite: every (task, n) of ``plan()`` (n = 500
    and 1,000 training rows, 6% positives), training and test rows drawn by its ``sample(y, n, s)``.
  - wide: ``make_classification(n_samples=2200, n_features=500, n_informative=20, n_redundant=0,
    weights=[0.7], flip_y=0.02, random_state=s)``, 200 training rows drawn by
    ``train_test_split(train_size=200, stratify=y, random_state=s)``, the other 2,000 rows test.
* Metrics: F1 and F2 (Jaccard only if time allows, run after all of F1/F2, reported apart).
* Seeds: 0-4 (fewer only if the timing of ONE fit says the 60-minute budget requires it; decided
  before any result is looked at).
* Method: ``MetroClassifier(metric=..., metric_params=..., random_state=s)``, the defaults;
  torch at 1 thread, at most 2 processes.
* Per fit, recorded:
  - ``p_current``: the probability warn_without_signal uses, computed exactly as it does on the
    fitted ``search_result_``: ``held_out_decisions(result)``, ``constant_decisions(spec,
    labels)``, ``win_probability(spec, labels, choice, constant)`` (None where the choice is the
    constant, where the function returns early); ``warned``: the result carries NO_SIGNAL (must
    equal p_current < the warning's level, NO_SIGNAL_LEVEL: checked; 0.9 when the stored fits
    ran).
  - ``test``: the fit's test metric (points); ``constant``: the better constant's (all-positive,
    all-negative) test metric (points); ``below`` = test < constant; ``above2`` = test > constant+2.
  - ``p_select`` (selection-aware): the grid's candidates are captured during the fit (each
    (lambda, shift) as judged: its pooled held-out scores, by patching metro.search.grid.judge).
    In each of 2,000 bootstrap resamples of the pooled held-out rows (multinomial row counts,
    seed 0), every candidate's threshold is tuned on the resample (the argmin over all distinct
    thresholds, as best_threshold does) and the candidate with the lowest resample loss is chosen;
    its loss on the out-of-resample rows (count 0) is compared with the better constant's
    (constant_decisions on all held-out labels) on those rows; p = P(chosen < constant) + 1/2 P(=).
  - ``p_select_refine``: the same with the refinement stages' held-out decisions (captured by
    patching metro.search.refine.cells_from_predictions) added as fixed candidates (they were
    refined from the original choice: an approximation, reported beside the grid-only one).
* Report: for levels 0.8, 0.9, 0.95, 0.99 of each probability: warned fits; caught = warned and
  below / all below; false alarms = warned and above2 / all warned. A fit whose choice is the
  constant (p None) counts as not warned by no_signal (predicts_one_class covers it), listed apart.

Run: python bench/no_signal.py --time-one; --run [--metrics f1 f2]; --report (the tables
docs/quality.md quotes, from bench/results/no-signal-fits.jsonl).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.append(str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))
OUT_DIR = ROOT / "bench" / "results"
RESAMPLES = 2000
LEVELS = (0.8, 0.9, 0.95, 0.99)
METRIC_PARAMS = {"f1": ("f1", {}), "f2": ("f_beta", {"beta": 2.0}), "jaccard": ("jaccard", {})}


# -- data -----------------------------------------------------------------------------------------


def settings() -> list[tuple[str, str, int]]:
    """(kind, task, n) of every setting of the rule."""
    from small_data import plan

    out = [("small", task, n) for task, n, _, _ in plan("main")]
    out.append(("wide", "wide", 200))
    return out


def data(kind: str, task: str, n: int, seed: int):  # type: ignore[no-untyped-def]
    if kind == "wide":
        from sklearn.datasets import make_classification
        from sklearn.model_selection import train_test_split

        X, y = make_classification(
            n_samples=2200, n_features=500, n_informative=20, n_redundant=0, weights=[0.7],
            flip_y=0.02, random_state=seed,
        )  # fmt: skip
        Xtr, Xte, ytr, yte = train_test_split(
            X.astype(np.float32), y.astype(np.int64), train_size=200, stratify=y,
            random_state=seed,
        )  # fmt: skip
        return Xtr, ytr, Xte, yte
    from defaults import tasks
    from small_data import sample

    X, y = tasks()[task].load()
    train, test = sample(y, n, seed)
    return X[train], y[train], X[test], y[test]


# -- capture --------------------------------------------------------------------------------------

CAPTURED: dict[str, list[Any]] = {"grid": [], "refine": []}


_PATCHED = False


def install_patches() -> None:
    global _PATCHED
    if _PATCHED:
        return
    _PATCHED = True
    import metro.search.grid as grid
    import metro.search.refine as refine

    original_judge = grid.judge
    original_cells = refine.cells_from_predictions

    def judge(spec, folds, *, tune):  # type: ignore[no-untyped-def]
        out = original_judge(spec, folds, tune=tune)
        if all(c.validation_scores is not None for c in folds):
            scores = np.concatenate([np.asarray(c.validation_scores) for c in folds])
            labels = np.concatenate([np.asarray(c.validation_labels) for c in folds])
            CAPTURED["grid"].append((float(folds[0].lam), scores, labels, out))
        return out

    def cells_from_predictions(y, predictions, *args, **kwargs):  # type: ignore[no-untyped-def]
        CAPTURED["refine"].append((np.asarray(y).copy(), np.asarray(predictions)[:, 0].copy()))
        return original_cells(y, predictions, *args, **kwargs)

    grid.judge = judge
    refine.cells_from_predictions = cells_from_predictions


# -- the selection-aware probability -----------------------------------------------------------


def fast_losses(spec: Any, cells: np.ndarray) -> np.ndarray:
    """spec.losses_of_cells for a ratio metric num.cells / den.cells (F-beta, Jaccard), 15x
    faster; 0/0 is the loss of zero_division (checked against spec.losses_of_cells in tests)."""
    num = cells @ np.asarray(spec.numerator_cells, dtype=np.float64)
    den = cells @ np.asarray(spec.denominator_cells, dtype=np.float64)
    zero = np.abs(den) <= 1e-12 * (np.abs(cells).sum(-1) + 1e-300)
    with np.errstate(all="ignore"):
        out = num / np.where(zero, 1.0, den)
    zd = -spec.zero_division if spec.greater_is_better else spec.zero_division
    return np.where(zero, zd, out)


def selection_aware(
    spec: Any,
    labels: np.ndarray,
    candidates: list[np.ndarray],
    fixed: list[np.ndarray],
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> tuple[float, float]:
    """(p grid only, p grid + fixed decisions): see the rule."""
    from metro.search.safeguard import constant_decisions

    y = labels.astype(bool)
    n = y.size
    rng = np.random.default_rng(seed)
    w = rng.multinomial(n, np.full(n, 1.0 / n), size=resamples).astype(np.float64)  # B x n
    o = (w == 0).astype(np.float64)
    yf = y.astype(np.float64)
    pos_in, pos_oob = w @ yf, o @ yf
    all_in, all_oob = w.sum(1), o.sum(1)

    def cells(tp: np.ndarray, fp: np.ndarray, pos: np.ndarray, tot: np.ndarray) -> np.ndarray:
        p = pos[:, None] if tp.ndim == 2 else pos
        t = tot[:, None] if tp.ndim == 2 else tot
        return np.stack([tp, fp, p - tp, (t - p) - fp], axis=-1)

    best_in = np.full(resamples, np.inf)
    best_oob = np.full(resamples, np.nan)
    for s in candidates:
        order = np.argsort(-s, kind="stable")
        ss = s[order]
        ends = np.flatnonzero(np.r_[ss[1:] != ss[:-1], True])
        ws, os_, ys = w[:, order], o[:, order], yf[order]
        zero = np.zeros((resamples, 1))
        tp_in = np.c_[zero, np.cumsum(ws * ys, 1)[:, ends]]
        fp_in = np.c_[zero, np.cumsum(ws, 1)[:, ends]] - tp_in
        loss_in = fast_losses(spec, cells(tp_in, fp_in, pos_in, all_in))  # B x G
        j = np.argmin(loss_in, axis=1)
        rows = np.arange(resamples)
        li = loss_in[rows, j]
        # out of the resample, at the chosen cut only: the top (ends[j-1] + 1) sorted rows
        k = np.where(j > 0, ends[np.maximum(j - 1, 0)] + 1, 0)
        top = np.arange(s.size)[None, :] < k[:, None]
        tp_o = np.sum(os_ * ys * top, 1)
        fp_o = np.sum(os_ * top, 1) - tp_o
        lo = fast_losses(spec, cells(tp_o, fp_o, pos_oob, all_oob))
        better = li < best_in - 1e-12
        best_in = np.where(better, li, best_in)
        best_oob = np.where(better, lo, best_oob)

    constant = constant_decisions(spec, y).astype(np.float64)
    tp_c, fp_c = o @ (constant * yf), o @ (constant * (1 - yf))
    loss_c = fast_losses(spec, cells(tp_c, fp_c, pos_oob, all_oob))

    def prob(chosen: np.ndarray) -> float:
        return float(np.mean(chosen < loss_c) + 0.5 * np.mean(chosen == loss_c))

    p_grid = prob(best_oob)
    bi, bo = best_in.copy(), best_oob.copy()
    for d in fixed:
        df = d.astype(np.float64)
        li = fast_losses(spec, cells(w @ (df * yf), w @ (df * (1 - yf)), pos_in, all_in))
        lo = fast_losses(spec, cells(o @ (df * yf), o @ (df * (1 - yf)), pos_oob, all_oob))
        better = li < bi - 1e-12
        bi, bo = np.where(better, li, bi), np.where(better, lo, bo)
    return p_grid, prob(bo)


# -- one fit --------------------------------------------------------------------------------------


def one_fit(job: tuple[str, str, int, str, int]) -> dict[str, Any]:
    kind, task, n, metric_name, seed = job
    import torch

    torch.set_num_threads(1)
    from metro import MetroClassifier
    from metro.metrics import get_metric
    from metro.search.base import WarningCode
    from metro.search.config import NO_SIGNAL_LEVEL
    from metro.search.safeguard import constant_decisions, held_out_decisions, win_probability

    install_patches()
    preset, params = METRIC_PARAMS[metric_name]
    metric = get_metric(preset, **params)
    Xtr, ytr, Xte, yte = data(kind, task, n, seed)
    CAPTURED["grid"].clear()
    CAPTURED["refine"].clear()
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = MetroClassifier(metric=preset, metric_params=params, random_state=seed).fit(Xtr, ytr)
    seconds = time.perf_counter() - started
    t_sel = time.perf_counter()
    result = clf.search_result_
    spec = metric
    warned = any(w.code == WarningCode.NO_SIGNAL for w in result.warnings)
    decided = held_out_decisions(result)
    p_current = None
    is_constant = False
    if decided is not None:
        labels, choice = decided
        constant = constant_decisions(spec, labels)
        if np.array_equal(choice.astype(bool), constant):
            is_constant = True
        else:
            p_current = win_probability(spec, labels, choice, constant)
    consistent = warned == (p_current is not None and p_current < NO_SIGNAL_LEVEL)

    p_sel = p_sel_ref = None
    grid = CAPTURED["grid"]
    if decided is not None and grid:
        labels = decided[0]
        cands = [s for _, s, lab, _ in grid if np.array_equal(lab, labels)]
        fixed = [d for lab, d in CAPTURED["refine"] if np.array_equal(lab, labels)]
        if len(cands) == len(grid):
            p_sel, p_sel_ref = selection_aware(spec, labels, cands, fixed)

    seconds_select = time.perf_counter() - t_sel
    predicted = np.asarray(clf.predict(Xte))
    test = 100.0 * float(metric.score(yte, predicted))
    c_pos = 100.0 * float(metric.score(yte, np.ones_like(yte)))
    c_neg = 100.0 * float(metric.score(yte, np.zeros_like(yte)))
    ref = result.refinement
    return {
        "kind": kind,
        "task": f"{task}@{n}",
        "metric": metric_name,
        "seed": seed,
        "n_train": int(ytr.size),
        "train_positives": int(ytr.sum()),
        "n_test": int(yte.size),
        "test_positives": int(yte.sum()),
        "seconds": seconds,
        "seconds_select": seconds_select,
        "p_current": p_current,
        "choice_is_constant": is_constant,
        "warned": warned,
        "warning_consistent": consistent,
        "p_select": p_sel,
        "p_select_refine": p_sel_ref,
        "n_grid_candidates": len(grid),
        "n_refine_stages": len(CAPTURED["refine"]),
        "refine_kept": bool(ref is not None and ref.kept),
        "safeguard_used": bool(result.safeguard is not None and result.safeguard.used),
        "selection_score": 100.0 * spec.score_from_loss(result.selection_loss),
        "selection_counts": list(result.selection_counts) if result.selection_counts else None,
        "test": test,
        "constant_positive": c_pos,
        "constant_negative": c_neg,
        "constant": max(c_pos, c_neg),
        "test_predicted_positive": float(predicted.mean()),
        "warnings": [str(w.code) for w in result.warnings],
    }


# -- run and report -------------------------------------------------------------------------------


def run(metrics: list[str], seeds: list[int], out: Path, procs: int) -> None:
    import multiprocessing as mp

    done = set()
    if out.exists():
        for line in out.read_text().splitlines():
            r = json.loads(line)
            done.add((r["task"], r["metric"], r["seed"]))
    jobs = [
        (kind, task, n, m, s)
        for m in metrics
        for kind, task, n in settings()
        for s in seeds
        if (f"{task}@{n}", m, s) not in done
    ]
    print(f"{len(jobs)} fits to run", flush=True)
    ctx = mp.get_context("spawn")
    with ctx.Pool(procs, maxtasksperchild=20) as pool, out.open("a") as fh:
        for i, rec in enumerate(pool.imap_unordered(one_fit, jobs)):
            fh.write(json.dumps(rec) + "\n")
            fh.flush()
            print(
                f"{i + 1}/{len(jobs)} {rec['task']} {rec['metric']} s{rec['seed']} "
                f"{rec['seconds']:.1f}s p={rec['p_current']} ps={rec['p_select']} "
                f"test={rec['test']:.1f} const={rec['constant']:.1f}",
                flush=True,
            )


def table(records: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    below = [r for r in records if r["test"] < r["constant"]]
    rows = []
    for level in LEVELS:
        warned = [r for r in records if r[key] is not None and r[key] < level]
        caught = [r for r in warned if r["test"] < r["constant"]]
        false = [r for r in warned if r["test"] > r["constant"] + 2.0]
        rows.append({
            "level": level, "warned": len(warned), "caught": len(caught), "below": len(below),
            "false_alarms": len(false), "fits": len(records),
        })  # fmt: skip
    return rows


def report(paths: list[Path], out_json: Path | None) -> None:
    records = [json.loads(line) for p in paths if p.exists() for line in p.read_text().splitlines()]
    summary: dict[str, Any] = {"n_fits": len(records), "tables": {}}
    groups = {
        "all F1+F2": [r for r in records if r["metric"] in ("f1", "f2")],
        "small F1+F2": [r for r in records if r["metric"] in ("f1", "f2") and r["kind"] == "small"],
        "wide F1+F2": [r for r in records if r["metric"] in ("f1", "f2") and r["kind"] == "wide"],
        "jaccard": [r for r in records if r["metric"] == "jaccard"],
    }
    for name, recs in groups.items():
        if not recs:
            continue
        summary["tables"][name] = {}
        print(f"\n## {name}: {len(recs)} fits, below constant on test: "
              f"{sum(r['test'] < r['constant'] for r in recs)}, "
              f"choice = constant: {sum(r['choice_is_constant'] for r in recs)}, "
              f"warned now: {sum(r['warned'] for r in recs)}")  # fmt: skip
        for key in ("p_current", "p_select", "p_select_refine"):
            rows = table(recs, key)
            summary["tables"][name][key] = rows
            print(f"{key}: " + "; ".join(
                f"<{r['level']}: warned {r['warned']}, caught {r['caught']}/{r['below']}, "
                f"false {r['false_alarms']}/{r['warned']}" for r in rows
            ))  # fmt: skip
    summary["inconsistent_warning"] = [
        (r["task"], r["metric"], r["seed"]) for r in records if not r["warning_consistent"]
    ]
    summary["records"] = records
    if out_json is not None:  # after a run; a report alone only reads what is committed
        out_json.write_text(json.dumps(summary, indent=1))
        print(f"\nwrote {out_json}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--time-one", action="store_true")
    parser.add_argument("--run", action="store_true")
    parser.add_argument("--report", action="store_true")
    parser.add_argument("--metrics", nargs="+", default=["f1", "f2"])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--procs", type=int, default=2)
    args = parser.parse_args()
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    if args.time_one:
        for job in [("small", "digits-9", 1000, "f1", 0), ("wide", "wide", 200, "f1", 0)]:
            t = time.perf_counter()
            rec = one_fit(job)
            print(job, f"{time.perf_counter() - t:.1f}s total, fit {rec['seconds']:.1f}s, "
                  f"p_select {rec['seconds_select']:.1f}s",
                  "grid", rec["n_grid_candidates"], "stages", rec["n_refine_stages"],
                  "consistent", rec["warning_consistent"])  # fmt: skip
        print(len(settings()), "settings")
    if args.run:
        run(args.metrics, list(range(args.seeds)), OUT_DIR / "no-signal-fits.jsonl", args.procs)
    if args.report or args.run:
        summary = OUT_DIR / "no-signal.json" if args.run else None
        report([OUT_DIR / "no-signal-fits.jsonl"], summary)


if __name__ == "__main__":
    main()
