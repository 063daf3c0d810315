"""Why constraint floors fail on new data, and which certification rule fixes it: a replay bench.

``--capture`` runs, for every (task, problem, seed) of ``bench/constrained.py`` (same 80 / 20
split, same folds, library defaults with ``refine="off"``), every (shift, mu, lambda) fit of
METRO's constrained grid in every fold *and* refit on the whole 80%, and stores each one's pooled
held-out scores (with their fold), and its refit's scores on the unseen 20%; and the same for the
``threshold`` baseline (logistic regression's out-of-fold scores and its refit's test scores).
``--evaluate`` then replays selection rules on the stored scores: which fit and threshold each
rule chooses, and whether the floor holds on the 20% it never saw. A rule costs seconds to
evaluate instead of a benchmark run, so every candidate rule is measured on the same fits.

Tasks (fixed before any rule was evaluated): all 25 tasks, the 3 problems and the 5 seeds of
``bench/constrained.py`` (375 fits per method), captured in two runs (seeds 0-2, then 3-4).
The refinement step is not replayed (it trains); ``bench/constrained.py`` measures it.

Examples
    python bench/constrained_selection.py --capture --seeds 3 --jobs 2
    python bench/constrained_selection.py --capture --first-seed 3 --seeds 2 --jobs 2
    python bench/constrained_selection.py --evaluate
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from constrained import PROBLEMS, _lr_scores
from defaults import TEST_FRACTION, tasks

CACHE = Path(os.environ.get("METRO_CONSTRAINED_CACHE", "/tmp/metro-constrained-cache"))


class _CapturedError(Exception):
    def __init__(self, data: dict[str, Any]) -> None:
        super().__init__("captured")
        self.data = data


def _capture_metro(X: np.ndarray, y: np.ndarray, X_test: np.ndarray, problem: Any, seed: int):
    import metro.search as search_pkg
    from metro import MetroClassifier
    from metro.search.base import lambda_bounds, shifts_for
    from metro.search.constrained import multiplier_rows
    from metro.search.grid import grid_lambdas
    from metro.trainer.fit import predict_scores

    def capture(solvers, *, config, constraints, refit_solver=None, on_step=None):
        spec = solvers[0].spec
        lo, hi = lambda_bounds(spec, config)
        n = config.n_lambdas if spec.denominator_depends_on_predictions else 1
        lambdas = grid_lambdas(lo, hi, n)
        val, test, keys = [], [], []
        labels = folds = None
        for shift in shifts_for(config):
            for mu in config.multipliers:
                rows = multiplier_rows(constraints, mu, lambdas.size)
                per_fold = [s.solve(lambdas, shift=shift, multipliers=rows) for s in solvers]
                finals = refit_solver.solve(lambdas, shift=shift, multipliers=rows)
                for i in range(lambdas.size):
                    fits = [f[i] for f in per_fold]
                    if any(c.diverged for c in fits) or finals[i].diverged:
                        continue
                    val.append(np.concatenate([np.asarray(c.validation_scores) for c in fits]))
                    if labels is None:
                        labels = np.concatenate([np.asarray(c.validation_labels) for c in fits])
                        folds = np.concatenate([
                            np.full(len(c.validation_labels), k) for k, c in enumerate(fits)
                        ])  # fmt: skip
                    test.append(predict_scores(finals[i].model(), X_test, device="cpu")[:, 0])
                    keys.append((shift, float(mu), float(lambdas[i])))
        raise _CapturedError({
            "val": np.asarray(val, dtype=np.float32), "test": np.asarray(test, dtype=np.float32),
            "labels": labels, "folds": folds, "keys": np.array([str(k) for k in keys]),
        })  # fmt: skip

    original = search_pkg.constrained_grid_search
    search_pkg.constrained_grid_search = capture
    try:
        MetroClassifier(
            metric=problem.objective, constraints=[problem.constraint], random_state=seed,
            refine="off",
        ).fit(X, y)  # fmt: skip
    except _CapturedError as done:
        return done.data
    finally:
        search_pkg.constrained_grid_search = original
    raise RuntimeError("the constrained search did not run")


def capture_one(args: tuple[str, str, int]) -> str:
    import torch
    from sklearn.model_selection import StratifiedKFold, train_test_split

    torch.set_num_threads(1)
    task, problem_name, seed = args
    out = CACHE / f"{task.replace('/', '_').replace(':', '_')}|{problem_name}|{seed}.npz"
    if out.exists():
        return f"cached {out.name}"
    problem = PROBLEMS[problem_name]
    X, y = tasks()[task].load()
    X_tr, X_te, y_tr, y_te = train_test_split(
        X, y, test_size=TEST_FRACTION, stratify=y, random_state=seed
    )
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        metro = _capture_metro(X_tr, y_tr, X_te, problem, seed)
        oof, lr_test = _lr_scores(X_tr, y_tr, X_te, seed, None)
    lr_folds = np.zeros(y_tr.size, dtype=np.int64)
    split = StratifiedKFold(n_splits=5, shuffle=True, random_state=seed)
    for k, (_, va) in enumerate(split.split(X_tr, y_tr)):
        lr_folds[va] = k
    np.savez_compressed(
        out, m_val=metro["val"], m_test=metro["test"], m_labels=metro["labels"],
        m_folds=metro["folds"], m_keys=metro["keys"], lr_val=oof.astype(np.float32),
        lr_test=lr_test.astype(np.float32), lr_labels=np.asarray(y_tr), lr_folds=lr_folds,
        y_test=np.asarray(y_te),
    )  # fmt: skip
    return f"{time.perf_counter() - started:6.1f}s {out.name}"


# -- replaying selection rules ---------------------------------------------------------------


def _counts(constraint: Any, cells: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(k, d): the constrained ratio's numerator and denominator counts at every threshold."""
    return (cells @ constraint.score_numerator_cells) * n, (
        cells @ constraint.metric.denominator_cells
    ) * n


def rule_slacks(rule: str, constraint: Any, cells: np.ndarray, n: int, folds: int) -> np.ndarray:
    """The slack each rule certifies at every threshold (>= 0: certified)."""
    from statistics import NormalDist

    from scipy.special import betaincinv

    name, _, level = rule.partition("@")
    c = float(level) if level else 0.9
    z = NormalDist().inv_cdf(c)
    at_least = constraint.sense == "at_least"
    b = constraint.bound
    k, d = _counts(constraint, cells, n)
    k = np.round(k)
    d = np.round(d)
    p = np.where(d > 0, k / np.maximum(d, 1), constraint.metric.zero_division)
    point = p - b if at_least else b - p
    if name == "point":
        return point
    if name == "lib":  # the library's rule (metro.constraints, metro.search.constrained)
        import dataclasses

        judged = dataclasses.replace(constraint, confidence=c)
        return judged.slacks(cells, n, new_fraction=1.0 / folds)
    if name == "wald":
        return _wald(constraint, cells, n, z)
    if name == "cp":
        if at_least:
            low = np.where(k > 0, betaincinv(np.maximum(k, 1), d - k + 1, 1 - c), 0.0)
            return np.where(d > 0, low - b, point)
        up = np.where(k < d, betaincinv(k + 1, np.maximum(d - k, 1), c), 1.0)
        return np.where(d > 0, b - up, point)
    if name in ("score", "wpred", "jpred"):
        # a new sample as large as one fold: denominator d / folds
        m = np.maximum(d / folds, 1.0)
        smooth = (k + 0.5) / (d + 1.0)
        var = {"score": b * (1 - b), "wpred": p * (1 - p), "jpred": smooth * (1 - smooth)}[name]
        se = np.sqrt(var * (1.0 / np.maximum(d, 1) + 1.0 / m))
        return np.where(d > 0, point - z * se, point)
    if name == "bb":
        from scipy.stats import betabinom

        m = np.maximum(np.round(d / folds), 1)
        out = np.full(point.shape, -1.0)
        idx = np.flatnonzero((d > 0) & (point >= 0))
        for i in idx:
            if at_least:
                j = np.ceil(b * m[i] - 1e-9)
                prob = betabinom.sf(j - 1, m[i], k[i], d[i] - k[i] + 1) if k[i] > 0 else 0.0
            else:
                j = np.floor(b * m[i] + 1e-9)
                prob = betabinom.cdf(j, m[i], k[i] + 1, d[i] - k[i]) if k[i] < d[i] else 0.0
            out[i] = prob - c
        return out
    raise ValueError(rule)


def _wald(constraint: Any, cells: np.ndarray, n: int, z: float) -> np.ndarray:
    u = constraint.score_numerator_cells
    v = constraint.metric.denominator_cells
    num, den = cells @ u, cells @ v
    zero = np.abs(den) <= 1e-12
    safe = np.where(zero, 1.0, den)
    value = np.where(zero, constraint.metric.zero_division, num / safe)
    dd = u[None, :] - value[:, None] * v[None, :]
    se = np.sqrt((cells * dd**2).sum(axis=1) / n) / safe
    value = value - z * se if constraint.sense == "at_least" else value + z * se
    return value - constraint.bound if constraint.sense == "at_least" else constraint.bound - value


def choose(
    spec: Any, constraint: Any, val: np.ndarray, labels: np.ndarray, rule: str, folds: int
) -> tuple[int, float, bool, float]:
    """(candidate, threshold, certified, pooled loss) chosen by ``rule`` among the rows of val."""
    from metro.thresholds import _losses, _place, cells_at_all_thresholds

    best: tuple[Any, ...] | None = None
    for i in range(val.shape[0]):
        thresholds, cells = cells_at_all_thresholds(val[i], labels)
        losses = _losses(spec, cells)
        slack = rule_slacks(rule, constraint, cells, labels.size, folds)
        ok = slack >= -1e-12
        if ok.any():
            cand = np.flatnonzero(ok)
            j = int(cand[np.argmin(losses[cand])])
            rank = (0, float(losses[j]), i)
        else:
            j = int(np.lexsort((losses, -np.minimum(slack, 0.0)))[0])
            rank = (1, float(-min(slack[j], 0.0)), i)
        if best is None or rank < best[0]:
            best = (rank, i, _place(thresholds, j), bool(ok.any()), float(losses[j]))
    assert best is not None
    return best[1], best[2], best[3], best[4]


def evaluate_file(args: tuple[Path, tuple[str, ...]]) -> list[dict[str, Any]]:
    from metro.constraints import get_constraints
    from metro.metrics import confusion_fractions, get_metric

    path, rules = args
    task, problem_name, seed = path.stem.split("|")
    problem = PROBLEMS[problem_name]
    d = np.load(path)
    y_te = d["y_test"]
    out = []
    for method in ("metro", "threshold"):
        val = d["m_val"] if method == "metro" else d["lr_val"][None, :]
        test = d["m_test"] if method == "metro" else d["lr_test"][None, :]
        labels = d["m_labels"] if method == "metro" else d["lr_labels"]
        spec = get_metric(problem.objective).resolve(labels)
        cons = get_constraints([problem.constraint], labels)[0]
        for rule in rules:
            i, thr, ok, loss = choose(spec, cons, val, labels, rule, 5)
            cells = confusion_fractions(y_te, (test[i] >= thr).astype(int))
            obj = get_metric(problem.objective).resolve(y_te)
            con_te = get_constraints([problem.constraint], y_te)[0]
            out.append({
                "task": task, "problem": problem_name, "seed": int(seed), "method": method,
                "rule": rule, "certified": ok, "cv_loss": loss,
                "objective": 100 * obj.score_from_loss(obj.loss_from_fractions(cells)),
                "holds": bool(con_te.holds(cells)), "value": 100 * con_te.value(cells),
            })  # fmt: skip
    return out


def summarize(rows: list[dict[str, Any]]) -> str:
    from scipy.stats import wilcoxon

    lines = []
    for problem in PROBLEMS:
        lines.append(f"### {problem}")
        lines.append(
            "| method | rule | fits | held on test | certified | objective | vs metro/point |"
        )
        lines.append("|---|---|---|---|---|---|---|")
        ref = {
            (r["task"], r["seed"]): r["objective"]
            for r in rows
            if r["problem"] == problem and r["method"] == "metro" and r["rule"] == "point"
        }
        combos = sorted({(r["method"], r["rule"]) for r in rows if r["problem"] == problem})
        for method, rule in combos:
            rs = [
                r
                for r in rows
                if r["problem"] == problem and r["method"] == method and r["rule"] == rule
            ]
            diff = np.array([r["objective"] - ref[(r["task"], r["seed"])] for r in rs])
            p = wilcoxon(diff).pvalue if np.any(diff != 0) else 1.0
            lines.append(
                f"| {method} | {rule} | {len(rs)} | {np.mean([r['holds'] for r in rs]):.1%} | "
                f"{np.mean([r['certified'] for r in rs]):.0%} | "
                f"{np.mean([r['objective'] for r in rs]):.2f} | {diff.mean():+.2f} (p={p:.2g}) |"
            )
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--capture", action="store_true")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--task", action="append")
    parser.add_argument("--evaluate", action="store_true")
    parser.add_argument("--rule", action="append")
    parser.add_argument("--out", type=Path, default=CACHE / "replay.json")
    args = parser.parse_args(argv)
    CACHE.mkdir(parents=True, exist_ok=True)
    if args.capture:
        plan = [
            (t, p, s)
            for s in range(args.first_seed, args.first_seed + args.seeds)
            for t in (args.task or list(tasks()))
            for p in PROBLEMS
        ]
        started = time.perf_counter()
        with mp.get_context("spawn").Pool(args.jobs) as pool:
            for line in pool.imap_unordered(capture_one, plan):
                print(f"{time.perf_counter() - started:7.1f}s {line}", flush=True)
    if args.evaluate:
        import json

        rules = tuple(args.rule or ("point", "wald@0.9", "cp@0.9", "score@0.9"))
        files = sorted(CACHE.glob("*.npz"))
        with mp.get_context("spawn").Pool(args.jobs) as pool:
            rows = [
                r for part in pool.map(evaluate_file, [(f, rules) for f in files]) for r in part
            ]
        args.out.write_text(json.dumps(rows))
        print(summarize(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
