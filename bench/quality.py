"""Quality benchmark: METRO against ERM, Koyejo et al.'s two algorithms, Parambath et al. and
scikit-learn's ``TunedThresholdClassifierCV``, on real and synthetic data (the paper's Table 2,
made reproducible with the code the service's workers run).

Every method of a repeat sees the same stratified train / validation / test split
(``metro.experiment.prepare_repeat``: split seed = repeat, trainer seed = repeat) and the same
data budget: it fits on the training part, chooses whatever it chooses (lambda, theta, a
threshold, the cost shift) on the validation part, and is then refitted on training +
validation; the test part is only scored. METRO runs through ``metro.experiment.run_experiment``,
the baselines through ``metro.baselines.fit_baseline``, and all are scored by the same function
as the service's experiments (``metro.experiment._score``).

Methods
    erm, koyejo1, koyejo2, parambath      metro.baselines (logistic surrogate, same trainer)
    sklearn-ttcv                          TunedThresholdClassifierCV(cv=PredefinedSplit(train |
                                          validation), refit=True), scoring = the metric; for
                                          ``linear`` it wraps StandardScaler + LogisticRegression
                                          with C matched to metro's weight decay, for mlp/cnn3 the
                                          same network trained by metro's trainer (ERM)
    metro-{grid,bisection,dinkelbach}-{logistic,hinge,exponential}
                                          run_experiment with that search strategy and surrogate
                                          (library defaults otherwise: shift "auto", 21 lambdas,
                                          refit)
    metro-...-thr                         the same, plus a threshold tuned on validation for the
                                          searched model and kept after the refit (not a library
                                          feature: what adding one would give)

Examples
    python bench/quality.py                                   # the whole table (~25 min, 2 cores)
    python bench/quality.py --task digits-9 --metric f1 --method metro-grid-logistic --seeds 5
    python bench/quality.py --task synthetic --model linear --method metro-grid-logistic \\
        --shift paper --tag shift-paper                       # an ablation, stored separately
    python bench/quality.py --markdown                        # tables from the stored results

Results are merged into ``bench/results/quality.json`` (one record per task/model/metric/method/
tag), so rerunning one cell replaces that cell only.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import math
import multiprocessing as mp
import os
import platform
import sys
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin

import metro.baselines as metro_baselines
from metro.baselines import fit_baseline, theta_cost_tables
from metro.datasets import Dataset, load_dataset
from metro.examples import figure1_data
from metro.experiment import ExperimentResult, FittedMethod, _score, prepare_repeat, run_experiment
from metro.metrics import Metric, get_metric
from metro.models import ModelSpec, StackedModel
from metro.search import SearchConfig
from metro.surrogates import get_surrogate
from metro.thresholds import best_threshold
from metro.trainer import TrainingConfig, fit_cost_sensitive, predict_scores

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "bench/results/quality.json"
LN2 = math.log(2.0)

# -- what is compared ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Task:
    name: str
    description: str
    load: Callable[[bool], Dataset]  # as_images -> dataset
    models: tuple[str, ...]


def _builtin(uri: str, image_uri: str | None = None) -> Callable[[bool], Dataset]:
    def load(as_images: bool) -> Dataset:
        if as_images:
            if image_uri is None:
                raise ValueError(f"{uri} has no image form")
            return load_dataset(image_uri)
        return load_dataset(uri)

    return load


def _figure1(as_images: bool) -> Dataset:
    if as_images:
        raise ValueError("the Figure 1 example has no image form")
    X, y = figure1_data(2000, seed=0)
    return Dataset(
        X=X,
        y=y,
        feature_names=("x", "y"),
        positive_label=1,
        negative_label=0,
        source="metro.examples.figure1_data(2000, seed=0)",
    )


TASKS: dict[str, Task] = {
    t.name: t
    for t in (
        Task(
            "breast_cancer",
            "scikit-learn breast cancer, malignant = positive (37%), 569 x 30",
            _builtin("builtin://breast_cancer"),
            ("linear",),
        ),
        Task(
            "digits-9",
            "digits, 9 vs rest (10%), 1797 x 64 (8x8 images for cnn3)",
            _builtin("builtin://digits?positive=9", "builtin://digits?positive=9&as_images=true"),
            ("linear", "mlp", "cnn3"),
        ),
        Task(
            "digits-3v5",
            "digits, 3 vs 5 (50%), 365 x 64 (8x8 images for cnn3)",
            _builtin(
                "builtin://digits?positive=3&negative=5",
                "builtin://digits?positive=3&negative=5&as_images=true",
            ),
            ("linear", "mlp", "cnn3"),
        ),
        Task(
            "synthetic",
            "make_classification, 5% positives, 5000 x 20, seed 0",
            _builtin(
                "builtin://synthetic?n_samples=5000&n_features=20&positive_fraction=0.05&seed=0"
            ),
            ("linear",),
        ),
        Task(
            "figure1",
            "the Figure 1 mixture (29% positives), 2000 x 2, seed 0",
            _figure1,
            ("linear",),
        ),
    )
}

METRICS: dict[str, tuple[str, dict[str, float]]] = {
    "f1": ("f1", {}),
    "f0.5": ("f_beta", {"beta": 0.5}),
    "f1.5": ("f_beta", {"beta": 1.5}),
    "jaccard": ("jaccard", {}),
    "balanced_accuracy": ("balanced_accuracy", {}),
}

BASELINE_METHODS = ("erm", "koyejo1", "koyejo2", "parambath")
STRATEGIES = ("grid", "bisection", "dinkelbach")
SURROGATES = ("logistic", "hinge")
METHODS: tuple[str, ...] = (
    *BASELINE_METHODS,
    "sklearn-ttcv",
    *(f"metro-{s}-{p}" for p in SURROGATES for s in STRATEGIES),
)
# Accepted on the command line besides METHODS (not in the default table).
EXTRA_METHODS = (
    *(f"metro-{s}-exponential" for s in STRATEGIES),
    *(f"metro-{s}-{p}-thr" for p in SURROGATES for s in STRATEGIES),
)

# Model sizes and training budgets, chosen so that the whole table fits in ~25 minutes on 2 CPU
# cores. Linear: metro's defaults (full-batch L-BFGS, weight decay 1e-4). Networks: the paper's
# SGD recipe (Nesterov 0.9, lr 0.02, weight decay 1e-4, cosine) with smaller batches and fewer
# epochs, since these sets have ~1000 training rows (batch 1024 would be one step per epoch).
MODELS: dict[str, tuple[ModelSpec, dict[str, Any]]] = {
    "linear": (ModelSpec("linear"), {}),
    "mlp": (ModelSpec("mlp", hidden=(32,)), {"batch_size": 64, "epochs": 30, "lr": 0.05}),
    "cnn3": (ModelSpec("cnn3", channels=(8, 16, 32)), {"batch_size": 64, "epochs": 15, "lr": 0.1}),
}

VALIDATION_FRACTION = 0.25
TEST_FRACTION = 0.2


def training_config(model: str) -> TrainingConfig:
    return TrainingConfig(device="cpu", **MODELS[model][1])


# -- a cache of baseline fits -------------------------------------------------------------------
# The baselines' fits do not depend on the metric (only their theta / threshold choice does), and
# the trainer is deterministic on CPU, so a fit repeated for another metric is looked up instead
# of recomputed. Keyed by the bytes of everything the fit depends on; METRO's fits are not cached
# (its cost tables depend on the metric).
_FIT_CACHE: dict[str, Any] = {}


def _digest(*parts: Any) -> str:
    h = hashlib.sha1()
    for part in parts:
        if isinstance(part, np.ndarray):
            h.update(str((part.shape, part.dtype)).encode())
            h.update(np.ascontiguousarray(part).tobytes())
        elif isinstance(part, StackedModel):
            for name, t in part.state_dict().items():
                h.update(name.encode())
                h.update(t.detach().cpu().numpy().tobytes())
        else:
            h.update(repr(part).encode())
    return h.hexdigest()


def cached_fit(
    X: Any, y: Any, costs: Any, *, model: Any, surrogate: Any, config: TrainingConfig, **kwargs: Any
) -> Any:
    if kwargs:
        return fit_cost_sensitive(
            X, y, costs, model=model, surrogate=surrogate, config=config, **kwargs
        )
    key = _digest(
        np.asarray(X), np.asarray(y), np.asarray(costs), model, get_surrogate(surrogate), config
    )
    if key not in _FIT_CACHE:
        _FIT_CACHE[key] = fit_cost_sensitive(
            X, y, costs, model=model, surrogate=surrogate, config=config
        )
    return copy.deepcopy(_FIT_CACHE[key])


metro_baselines.fit_cost_sensitive = cached_fit  # type: ignore[assignment]  # its only trainer


# -- scikit-learn's TunedThresholdClassifierCV --------------------------------------------------


def _sklearn_scorer(metric: Metric) -> Any:
    from sklearn.metrics import make_scorer

    return make_scorer(lambda y_true, y_pred: metric.score(y_true, y_pred))


class _MetroERM(ClassifierMixin, BaseEstimator):
    """metro's trainer fitting the unweighted logistic model (ERM), as a scikit-learn classifier
    so that TunedThresholdClassifierCV can tune its threshold (mlp and cnn3)."""

    def __init__(self, model: ModelSpec | None = None, config: TrainingConfig | None = None):
        self.model = model
        self.config = config

    def fit(self, X: np.ndarray, y: np.ndarray) -> _MetroERM:
        assert self.model is not None and self.config is not None
        self.classes_ = np.array([0, 1])
        self.fit_ = cached_fit(
            X,
            y,
            theta_cost_tables(np.array([0.5])),
            model=self.model,
            surrogate=get_surrogate("logistic"),
            config=self.config,
        )
        return self

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        return predict_scores(self.fit_.model, X)[:, 0].astype(np.float64)

    def predict(self, X: np.ndarray) -> np.ndarray:
        return (self.decision_function(X) >= 0).astype(np.int64)


def sklearn_ttcv(
    model_name: str,
    metric: Metric,
    config: TrainingConfig,
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_val: np.ndarray,
    y_val: np.ndarray,
    *,
    refit: bool = True,
) -> tuple[Any, dict[str, Any]]:
    """TunedThresholdClassifierCV restricted to metro's validation split, refit on train + val."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import PredefinedSplit, TunedThresholdClassifierCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X = np.concatenate([X_train, X_val])
    y = np.concatenate([y_train, y_val])
    fold = np.r_[np.full(len(y_train), -1), np.zeros(len(y_val), dtype=int)]
    details: dict[str, Any] = {}
    if model_name == "linear":
        # metro minimizes mean_i c * log2(1 + e^{-y h}) + wd/2 |w|^2 with c = 1/2 (ERM's cost
        # table) on standardized features, i.e. (after multiplying by 2 ln 2 / ... ) the mean
        # natural log loss + wd ln2 |w|^2; scikit-learn minimizes C sum_i logloss + |w|^2 / 2,
        # the same problem when C = 1 / (2 n wd ln 2). n is the training part's size (the fit
        # whose threshold is tuned); the refit on train + val keeps C, as TTCV does.
        wd = config.resolve_weight_decay(len(y_train), "lbfgs")
        C = 1.0 / (2.0 * len(y_train) * wd * LN2) if wd else 1e12
        base: Any = make_pipeline(
            StandardScaler(), LogisticRegression(C=C, max_iter=5000, tol=1e-8)
        )
        details["C"] = C
        X = X.reshape(len(X), -1)
    else:
        base = _MetroERM(MODELS[model_name][0], config)
    tuned = TunedThresholdClassifierCV(
        base,
        scoring=_sklearn_scorer(metric),
        cv=PredefinedSplit(fold),
        refit=refit,
        response_method="decision_function" if model_name != "linear" else "auto",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tuned.fit(X, y)
    details["threshold"] = float(tuned.best_threshold_)
    return tuned, details


# -- running cells ------------------------------------------------------------------------------


@dataclass
class Cell:
    task: str
    model: str
    metric: str
    method: str
    tag: str = ""
    test: list[float] = field(default_factory=list)
    validation: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    extra: list[dict[str, Any]] = field(default_factory=list)
    # Seeds on which the method raised (e.g. every fit of its search diverged): no score.
    failures: list[dict[str, Any]] = field(default_factory=list)

    @property
    def key(self) -> str:
        return "/".join((self.task, self.model, self.metric, self.method, self.tag))

    def to_dict(self) -> dict[str, Any]:
        t = np.asarray(self.test)
        return {
            "task": self.task,
            "model": self.model,
            "metric": self.metric,
            "method": self.method,
            "tag": self.tag,
            "test_mean": float(t.mean()) if t.size else None,
            "test_std": float(t.std(ddof=1)) if t.size > 1 else 0.0,
            "validation_mean": float(np.mean(self.validation)) if self.validation else None,
            "failures": self.failures,
            "test": self.test,
            "validation": self.validation,
            "seconds": self.seconds,
            "extra": self.extra,
        }


def _parse_method(method: str) -> tuple[str, str] | None:
    """(strategy, surrogate) of a metro method, None for a baseline."""
    if not method.startswith("metro-"):
        return None
    _, strategy, surrogate = method.split("-", 2)
    return strategy, surrogate.removesuffix("-thr")


def run_cell(
    task: str,
    model: str,
    metric_name: str,
    method: str,
    *,
    seeds: int,
    shift: str,
    n_lambdas: int,
    tag: str,
    dataset: Dataset,
    refit: bool = True,
    lr: float | None = None,
    warm_start: bool | None = None,
) -> Cell:
    name, params = METRICS[metric_name]
    metric = get_metric(name, **params)
    spec_model, _ = MODELS[model]
    config = training_config(model)
    if lr is not None:
        config = replace(config, lr=lr)
    if warm_start is not None:
        config = replace(config, warm_start=warm_start)
    cell = Cell(task, model, metric_name, method, tag)
    parsed = _parse_method(method)
    if parsed is not None:
        strategy, surrogate = parsed
        search = SearchConfig(strategy=strategy, shift=shift, n_lambdas=n_lambdas, refit=refit)
        started = time.perf_counter()
        for r in range(seeds):
            # Repeat r of run_experiment(repeats=seeds, seed=0), run alone so that a search that
            # fails on one seed (a diverged fit) costs that seed only.
            try:
                result = run_experiment(
                    dataset,
                    metric=metric,
                    surrogate=get_surrogate(surrogate),
                    model=spec_model,
                    search=search,
                    training=replace(config, seed=config.seed + r),
                    repeats=1,
                    seed=r,
                    validation_fraction=VALIDATION_FRACTION,
                    test_fraction=TEST_FRACTION,
                )
            except ValueError as exc:  # what a service job would end FAILED with
                cell.failures.append({"seed": r, "reason": str(exc)})
                continue
            by_split = {s.split: s for s in result.scores}
            if method.endswith("-thr"):
                # METRO + a tuned threshold: the threshold that maximizes the metric on the
                # validation part for the searched (pre-refit) model, kept for the refitted model
                # (as koyejo1 and parambath do).
                setup = prepare_repeat(
                    dataset,
                    metric=metric,
                    surrogate=get_surrogate(surrogate),
                    model=spec_model,
                    training=config,
                    repeat=r,
                    seed=0,
                    validation_fraction=VALIDATION_FRACTION,
                    test_fraction=TEST_FRACTION,
                )
                best = result.searches[0].best
                va, te = setup.splits.validation, setup.splits.test
                pre = best.model()
                threshold, _ = best_threshold(
                    setup.spec, predict_scores(pre, dataset.X[va])[:, 0], dataset.y[va]
                )
                final = result.model_for("metro", 0)
                final.threshold = threshold
                scored = ExperimentResult(metric=setup.spec)
                _score(
                    scored,
                    setup.spec,
                    final,
                    dataset.X,
                    dataset.y,
                    va,
                    te,
                    "cpu",
                    by_split["test"].seconds,
                    theta=None,
                )
                by_split = {s.split: s for s in scored.scores}
            cell.test.append(by_split["test"].value)
            cell.validation.append(by_split["validation"].value)
            cell.seconds.append(by_split["test"].seconds)
            sr = result.searches[0]
            cell.extra.append(
                {
                    "seed": r,
                    "lambda": sr.lambda_star,
                    "shift": sr.best_shift,
                    "n_fits": sr.n_fits,
                    "strategy": sr.strategy,
                    # grid points left out because their fit diverged
                    "diverged_fits": sum(s.surrogate_loss == math.inf for s in sr.trace),
                }
            )
        cell.extra.append({"total_seconds": time.perf_counter() - started})
        return cell

    for r in range(seeds):
        setup = prepare_repeat(
            dataset,
            metric=metric,
            surrogate=get_surrogate("logistic"),
            model=spec_model,
            training=config,
            repeat=r,
            seed=0,
            validation_fraction=VALIDATION_FRACTION,
            test_fraction=TEST_FRACTION,
        )
        X, y = dataset.X, dataset.y
        tr, va, te = setup.splits.train, setup.splits.validation, setup.splits.test
        dev = np.sort(np.concatenate([tr, va]))
        spec = setup.spec
        scored = ExperimentResult(metric=spec)
        started = time.perf_counter()
        if method == "sklearn-ttcv":
            tuned, details = sklearn_ttcv(
                model, metric, setup.config, X[tr], y[tr], X[va], y[va], refit=refit
            )
            seconds = time.perf_counter() - started
            for split, idx in (("validation", va), ("test", te)):
                Xs = X[idx].reshape(len(idx), -1) if model == "linear" else X[idx]
                pred = tuned.predict(Xs)
                value = spec.score_from_loss(spec.loss(y[idx], pred))
                (cell.validation if split == "validation" else cell.test).append(value)
            cell.seconds.append(seconds)
            cell.extra.append(details)
            continue
        try:
            base = fit_baseline(
                method,
                spec=spec,
                X_train=X[tr],
                y_train=y[tr],
                X_validation=X[va],
                y_validation=y[va],
                model=spec_model,
                config=setup.config,
                X_refit=X[dev] if refit else None,
                y_refit=y[dev] if refit else None,
            )
        except ValueError as exc:  # a diverged fit: no model on this seed
            cell.failures.append({"seed": r, "reason": str(exc)})
            continue
        seconds = time.perf_counter() - started
        fitted = FittedMethod(method=method, repeat=r, model=base.model, threshold=base.threshold)
        _score(scored, spec, fitted, X, y, va, te, "cpu", seconds, theta=base.theta)
        by_split = {s.split: s for s in scored.scores}
        cell.test.append(by_split["test"].value)
        cell.validation.append(by_split["validation"].value)
        cell.seconds.append(seconds)
        cell.extra.append({"threshold": base.threshold, "theta": base.theta})
    return cell


# -- storage and tables -------------------------------------------------------------------------


def load_results(path: Path) -> dict[str, Any]:
    if path.exists():
        return json.loads(path.read_text())
    return {"cells": {}, "runs": []}


def save_results(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=float))
    tmp.replace(path)


def _fmt(mean: float, std: float) -> str:
    return f"{100 * mean:.1f} ± {100 * std:.1f}"


def _group_order(group: tuple[str, str]) -> tuple[int, int]:
    """Tables list the tasks in TASKS order, each task's models as linear, mlp, cnn3."""
    task, model = group
    return list(TASKS).index(task), ("linear", "mlp", "cnn3").index(model)


def _cell_order(cell: tuple[str, str, str]) -> tuple[int, int, int]:
    """(task, model, metric) in table order: the group's, then METRICS order."""
    return (*_group_order(cell[:2]), list(METRICS).index(cell[2]))


def markdown(data: dict[str, Any], *, tag: str = "") -> str:
    """One table per task/model: rows = methods, columns = metrics (test, mean ± std over seeds,
    in percent); the best mean per column in bold, METRO's best row marked."""
    cells = [c for c in data["cells"].values() if c["tag"] == tag]
    out: list[str] = []
    groups = sorted({(c["task"], c["model"]) for c in cells}, key=_group_order)
    for task, model in groups:
        here = {
            (c["method"], c["metric"]): c
            for c in cells
            if c["task"] == task and c["model"] == model
        }
        metrics = [m for m in METRICS if any(k[1] == m for k in here)]
        methods = [m for m in (*METHODS, *EXTRA_METHODS) if any(k[0] == m for k in here)]
        seeds = max(len(c["test"]) for c in here.values())
        out.append(f"### {task} ({model})\n")
        out.append(f"{TASKS[task].description}; test split, {seeds} seeds, mean ± std (%).\n")
        out.append("| method | " + " | ".join(metrics) + " |")
        out.append("|---|" + "---|" * len(metrics))
        best = {
            m: max(
                (c["test_mean"] for (meth, met), c in here.items() if met == m and _complete(c)),
                default=None,
            )
            for m in metrics
        }
        for method in methods:
            row = [method]
            for m in metrics:
                c = here.get((method, m))
                if c is None:
                    row.append("")
                    continue
                failed = len(c.get("failures") or [])
                if c["test_mean"] is None:
                    row.append(f"failed {failed}/{failed}")
                    continue
                text = _fmt(c["test_mean"], c["test_std"])
                top = best[m]
                if top is not None and _complete(c) and c["test_mean"] >= top - 1e-12:
                    text = f"**{text}**"
                if failed:
                    text += f" ({failed} of {failed + len(c['test'])} failed)"
                row.append(text)
            out.append("| " + " | ".join(row) + " |")
        out.append("")
    return "\n".join(out)


def _complete(cell: dict[str, Any]) -> bool:
    """Scored on every seed (the comparisons pair seeds, so a cell with failed seeds is left
    out of them; the per-task tables still show it, with its failures)."""
    return not cell.get("failures") and cell["test_mean"] is not None


def paired(data: dict[str, Any], method: str, against: str, *, tag: str = "") -> str:
    """Per task/model/metric: the per-seed difference ``method - against`` on the test split
    (same splits, so the difference removes the split-to-split variation), mean ± std and wins."""
    cells = {
        (c["task"], c["model"], c["metric"], c["method"]): c
        for c in data["cells"].values()
        if c["tag"] == tag and _complete(c)
    }
    lines = [
        f"| task (model) | metric | {method} - {against} (points) | wins / ties / losses |",
        "|---|---|---|---|",
    ]
    for task, model, metric, meth in cells:
        if meth != method or (task, model, metric, against) not in cells:
            continue
        a = np.asarray(cells[(task, model, metric, method)]["test"])
        b = np.asarray(cells[(task, model, metric, against)]["test"])
        d = 100 * (a - b)
        wins, ties = int((d > 1e-9).sum()), int((np.abs(d) <= 1e-9).sum())
        lines.append(
            f"| {task} ({model}) | {metric} | {d.mean():+.1f} ± {d.std(ddof=1):.1f} | "
            f"{wins} / {ties} / {d.size - wins - ties} |"
        )
    return "\n".join(lines)


def aggregate(data: dict[str, Any], *, tag: str = "") -> str:
    """Across every task/model/metric that has all methods: each method's mean test score, mean
    difference to ERM, mean rank (1 = best; ties share the average rank) and the number of cells
    where it is best (ties count for every tied method)."""
    cells = [c for c in data["cells"].values() if c["tag"] == tag and _complete(c)]
    methods = [m for m in METHODS if any(c["method"] == m for c in cells)]  # the main table's
    keys = dict.fromkeys((c["task"], c["model"], c["metric"]) for c in cells)
    table = {
        k: {c["method"]: c["test_mean"] for c in cells if (c["task"], c["model"], c["metric"]) == k}
        for k in keys
    }
    full = {k: v for k, v in table.items() if all(m in v for m in methods)}
    if not full:
        return "(no task/model/metric with every method)"
    ranks: dict[str, list[float]] = {m: [] for m in methods}
    best = dict.fromkeys(methods, 0)
    for v in full.values():
        vals = np.array([round(v[m], 12) for m in methods])
        order = (-vals).argsort(kind="stable")
        r = np.empty(len(vals))
        r[order] = np.arange(1, len(vals) + 1)
        for val in np.unique(vals):  # average ranks of ties
            r[vals == val] = r[vals == val].mean()
        for m, rank in zip(methods, r, strict=True):
            ranks[m].append(rank)
        for m in methods:
            best[m] += int(v[m] >= vals.max() - 1e-12)
    lines = [
        f"{len(full)} task/model/metric cells with every method.",
        "",
        "| method | mean test (%) | mean - ERM (points) | mean rank | best in |",
        "|---|---|---|---|---|",
    ]
    for m in methods:
        mean = 100 * np.mean([v[m] for v in full.values()])
        d = 100 * np.mean([v[m] - v["erm"] for v in full.values()]) if "erm" in methods else 0
        lines.append(f"| {m} | {mean:.2f} | {d:+.2f} | {np.mean(ranks[m]):.2f} | {best[m]} |")
    return "\n".join(lines)


def summary(data: dict[str, Any], *, tag: str = "") -> str:
    """Per task/model/metric: the best METRO row against the best baseline and against TTCV."""
    cells = [c for c in data["cells"].values() if c["tag"] == tag and _complete(c)]
    keys = sorted({(c["task"], c["model"], c["metric"]) for c in cells}, key=_cell_order)
    lines = [
        "| task (model) | metric | best baseline | sklearn-ttcv | metro-grid-logistic | "
        "best metro | metro - best baseline |",
        "|---|---|---|---|---|---|---|",
    ]
    for task, model, metric in keys:
        here = {
            c["method"]: c
            for c in cells
            if (c["task"], c["model"], c["metric"]) == (task, model, metric)
        }
        bases = {m: c for m, c in here.items() if not m.startswith("metro")}
        metros = {m: c for m, c in here.items() if m.startswith("metro")}
        if not bases or not metros:
            continue
        bb = max(bases.values(), key=lambda c: c["test_mean"])
        bm = max(metros.values(), key=lambda c: c["test_mean"])
        tt = here.get("sklearn-ttcv")
        grid = here.get("metro-grid-logistic")
        tt_text = "" if tt is None else f"{100 * tt['test_mean']:.1f}"
        grid_text = "" if grid is None else f"{100 * grid['test_mean']:.1f}"
        lines.append(
            f"| {task} ({model}) | {metric} | {bb['method']} {100 * bb['test_mean']:.1f} | "
            f"{tt_text} | {grid_text} | {bm['method']} {100 * bm['test_mean']:.1f} | "
            f"{100 * (bm['test_mean'] - bb['test_mean']):+.1f} |"
        )
    return "\n".join(lines)


def plot(data: dict[str, Any], path: Path, *, tag: str = "") -> None:
    """Heat maps, one per metric: rows task (model), columns methods, colour = test mean minus the
    best baseline's (percentage points), the number printed = test mean (%)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = [c for c in data["cells"].values() if c["tag"] == tag and _complete(c)]
    rows = sorted({(c["task"], c["model"]) for c in cells}, key=_group_order)
    metrics = [m for m in METRICS if any(c["metric"] == m for c in cells)]
    methods = [m for m in (*METHODS, *EXTRA_METHODS) if any(c["method"] == m for c in cells)]
    fig, axes = plt.subplots(
        len(metrics),
        1,
        figsize=(1.0 * len(methods) + 3, 0.45 * len(rows) * len(metrics) + 1.5 * len(metrics)),
    )
    axes = np.atleast_1d(axes)
    for ax, metric in zip(axes, metrics, strict=True):
        value = np.full((len(rows), len(methods)), np.nan)
        for c in cells:
            if c["metric"] == metric:
                value[rows.index((c["task"], c["model"])), methods.index(c["method"])] = c[
                    "test_mean"
                ]
        base_cols = [i for i, m in enumerate(methods) if not m.startswith("metro")]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # rows not run yet
            best_base = np.nanmax(value[:, base_cols], axis=1, keepdims=True)
        diff = 100 * (value - best_base)
        im = ax.imshow(diff, cmap="RdBu", vmin=-5, vmax=5, aspect="auto")
        for i in range(len(rows)):
            for j in range(len(methods)):
                if np.isfinite(value[i, j]):
                    dark = abs(diff[i, j]) > 3.5
                    ax.text(
                        j,
                        i,
                        f"{100 * value[i, j]:.1f}",
                        ha="center",
                        va="center",
                        fontsize=7,
                        color="white" if dark else "black",
                    )
        ax.set_xticks(
            range(len(methods)),
            [m.replace("metro-", "M-") for m in methods],
            rotation=35,
            ha="right",
            fontsize=8,
        )
        ax.set_yticks(range(len(rows)), [f"{t} ({m})" for t, m in rows], fontsize=8)
        ax.set_title(
            f"{metric}: test mean (%), colour = minus the best baseline (points)", fontsize=9
        )
        fig.colorbar(im, ax=ax, fraction=0.02, pad=0.01)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


ABLATION_TAGS = (
    "",
    "shift-minimal",
    "shift-paper",
    "lambdas-81",
    "lambdas-81-paper",
    "no-refit",
    "fresh-start",
)


def plot_ablation(data: dict[str, Any], path: Path, method: str = "metro-grid-logistic") -> None:
    """One heat map: rows task (model) / metric, columns the ablation tags ('' = the library
    defaults), number = test mean (%), colour = minus the defaults' (points)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = {
        (c["task"], c["model"], c["metric"], c["tag"]): c["test_mean"]
        for c in data["cells"].values()
        if c["method"] == method
    }
    rows = [
        k[:3] for k in cells if k[3] == "" and any((*k[:3], t) in cells for t in ABLATION_TAGS[1:])
    ]
    rows = sorted(dict.fromkeys(rows), key=_cell_order)
    tags = [t for t in ABLATION_TAGS if any((*r, t) in cells for r in rows)]
    value = np.array([[cells.get((*r, t), np.nan) for t in tags] for r in rows])
    diff = 100 * (value - value[:, :1])
    fig, ax = plt.subplots(figsize=(1.3 * len(tags) + 3.5, 0.28 * len(rows) + 1.2))
    im = ax.imshow(diff, cmap="RdBu", vmin=-5, vmax=5, aspect="auto")
    for i in range(len(rows)):
        for j in range(len(tags)):
            if np.isfinite(value[i, j]):
                ax.text(
                    j,
                    i,
                    f"{100 * value[i, j]:.1f}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if abs(diff[i, j]) > 3.5 else "black",
                )
    ax.set_xticks(
        range(len(tags)),
        [t or "defaults (auto, 21, refit)" for t in tags],
        rotation=20,
        ha="right",
        fontsize=8,
    )
    ax.set_yticks(range(len(rows)), [f"{t} ({m}) {x}" for t, m, x in rows], fontsize=7)
    ax.set_title(f"{method}: test mean (%), colour = minus the defaults (points)", fontsize=9)
    fig.colorbar(im, ax=ax, fraction=0.03, pad=0.01)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# Rough relative cost of one cell per task/model (measured on 2 cores), to balance --jobs.
_COST = {
    ("digits-9", "cnn3"): 30.0,
    ("digits-3v5", "cnn3"): 5.0,
    ("digits-9", "mlp"): 3.0,
    ("digits-3v5", "mlp"): 1.0,
}


def _key(record: dict[str, Any]) -> str:
    return "/".join(record[k] for k in ("task", "model", "metric", "method", "tag"))


def _split_plan(plan: list[tuple[str, str, str, str]], jobs: int) -> list[list[Any]]:
    """Whole task/model groups onto ``jobs`` workers, largest first onto the least loaded."""
    by_group: dict[tuple[str, str], list[Any]] = {}
    for cell in plan:
        by_group.setdefault(cell[:2], []).append(cell)
    bins: list[tuple[float, list[Any]]] = [(0.0, []) for _ in range(max(1, jobs))]
    for group, cells in sorted(by_group.items(), key=lambda g: -_COST.get(g[0], 1.0) * len(g[1])):
        i = min(range(len(bins)), key=lambda j: bins[j][0])
        load, members = bins[i]
        bins[i] = (load + _COST.get(group, 1.0) * len(cells), members + cells)
    return [members for _, members in bins if members]


def _run_cells(cells: list[Any], args: argparse.Namespace, t0: float) -> Iterable[dict[str, Any]]:
    torch.set_num_threads(args.threads)
    datasets: dict[tuple[str, bool], Dataset] = {}
    for task, model, metric, method in cells:
        images = model == "cnn3"
        if (task, images) not in datasets:
            datasets[(task, images)] = TASKS[task].load(images)
        started = time.perf_counter()
        cell = run_cell(
            task,
            model,
            metric,
            method,
            seeds=args.seeds,
            shift=args.shift,
            n_lambdas=args.n_lambdas,
            tag=args.tag,
            dataset=datasets[(task, images)],
            refit=not args.no_refit,
            lr=args.lr,
            warm_start=args.warm_start,
        )
        record = cell.to_dict()
        record["shift_setting"] = args.shift
        record["n_lambdas"] = args.n_lambdas
        record["refit"] = not args.no_refit
        record["lr"] = args.lr
        record["warm_start"] = args.warm_start
        record["wall_s"] = time.perf_counter() - started
        yield record


def _worker(cells: list[Any], args: argparse.Namespace, t0: float, queue: Any) -> None:
    try:
        for record in _run_cells(cells, args, t0):
            queue.put(record)
    finally:
        queue.put(None)


def _drain(queue: Any, n_workers: int) -> Iterable[dict[str, Any]]:
    finished = 0
    while finished < n_workers:
        item = queue.get()
        if item is None:
            finished += 1
        else:
            yield item


# -- command line -------------------------------------------------------------------------------


def _choices(values: Iterable[str] | None, allowed: Iterable[str], what: str) -> list[str]:
    allowed = list(allowed)
    if not values:
        return allowed
    out = []
    for v in values:
        for item in v.split(","):
            if item and item not in allowed:
                raise SystemExit(f"unknown {what} {item!r}; expected one of {', '.join(allowed)}")
            if item:
                out.append(item)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--task", action="append", help=f"any of {', '.join(TASKS)} (default all)")
    ap.add_argument("--model", action="append", help="linear, mlp, cnn3 (default: the task's)")
    ap.add_argument("--metric", action="append", help=f"any of {', '.join(METRICS)}")
    ap.add_argument(
        "--method", action="append", help=f"any of {', '.join((*METHODS, *EXTRA_METHODS))}"
    )
    ap.add_argument("--seeds", type=int, default=5, help="repeats (split and trainer seeds 0..N-1)")
    ap.add_argument(
        "--shift",
        default="auto",
        choices=("auto", "minimal", "paper"),
        help="METRO's cost shift (default: the library default, auto)",
    )
    ap.add_argument("--n-lambdas", type=int, default=21, help="METRO grid size (library default)")
    ap.add_argument("--tag", default="", help="store under this tag (ablations); '' = main table")
    ap.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads (default 1: faster for these small fits, and two "
        "processes can share a 2-core machine)",
    )
    ap.add_argument(
        "--no-refit",
        action="store_true",
        help="no method refits on train + validation (ablation; use with --tag)",
    )
    ap.add_argument(
        "--lr", type=float, help="SGD learning rate for mlp/cnn3 (ablation; use with --tag)"
    )
    ap.add_argument(
        "--fresh-start",
        dest="warm_start",
        action="store_false",
        default=None,
        help="training.warm_start=False: every SGD/L-BFGS fit from the seeded initialization "
        "(ablation; use with --tag)",
    )
    ap.add_argument(
        "--jobs",
        type=int,
        default=2,
        help="worker processes (default 2: the full table in ~26 min on 2 cores)",
    )
    ap.add_argument("--merge", type=Path, nargs="+", help="merge these result files into --out")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--markdown", action="store_true", help="print the stored tables and exit")
    ap.add_argument(
        "--paired",
        nargs=2,
        metavar=("METHOD", "AGAINST"),
        help="print per-seed paired differences of two methods and exit",
    )
    ap.add_argument("--plot-ablation", type=Path, help="draw the ablation heat map to this PNG")
    ap.add_argument("--plot", type=Path, help="draw the stored table's heat maps to this PNG")
    ap.add_argument("--dry-run", action="store_true", help="list the cells and exit")
    args = ap.parse_args(argv)

    data = load_results(args.out)
    if args.merge:
        for path in args.merge:
            other = load_results(path)
            data["cells"].update(other["cells"])
            data["runs"].extend(other["runs"])
        save_results(args.out, data)
        print(f"{len(data['cells'])} cells in {args.out}")
        return 0
    if args.paired:
        print(paired(data, *args.paired, tag=args.tag))
        return 0
    if args.plot_ablation:
        plot_ablation(data, args.plot_ablation)
        print(f"wrote {args.plot_ablation}")
        return 0
    if args.plot:
        plot(data, args.plot, tag=args.tag)
        print(f"wrote {args.plot}")
        return 0
    if args.markdown:
        print(markdown(data, tag=args.tag))
        print(summary(data, tag=args.tag))
        print()
        print(aggregate(data, tag=args.tag))
        return 0
    if args.threads:
        torch.set_num_threads(args.threads)
    tasks = _choices(args.task, TASKS, "task")
    metrics = _choices(args.metric, METRICS, "metric")
    methods = _choices(args.method, (*METHODS, *EXTRA_METHODS), "method")
    if not args.method:
        methods = list(METHODS)
    plan = []
    for task in tasks:
        models = _choices(args.model, ("linear", "mlp", "cnn3"), "model")
        for model in models if args.model else TASKS[task].models:
            if model not in TASKS[task].models:
                continue
            for metric in metrics:
                for method in methods:
                    plan.append((task, model, metric, method))
    if args.dry_run:
        for p in plan:
            print(*p)
        print(f"{len(plan)} cells")
        return 0
    run_info = {
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "argv": sys.argv[1:],
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
    }
    t0 = time.perf_counter()
    groups = _split_plan(plan, args.jobs)
    done = 0
    if len(groups) == 1:
        results: Iterable[dict[str, Any]] = _run_cells(groups[0], args, t0)
    else:
        # Fork one worker per group (a task/model stays in one worker, so its baseline fits are
        # cached there); each streams its records back through a queue.
        ctx = mp.get_context("fork")
        queue = ctx.Queue()
        workers = [ctx.Process(target=_worker, args=(g, args, t0, queue)) for g in groups]
        for w in workers:
            w.start()
        results = _drain(queue, len(workers))
    for record in results:
        done += 1
        data["cells"][_key(record)] = record
        save_results(args.out, data)
        print(
            f"[{time.perf_counter() - t0:7.1f}s {done}/{len(plan)}] {record['task']}/"
            f"{record['model']} {record['metric']:<17} {record['method']:<24} test "
            f"{_fmt(record['test_mean'], record['test_std'])}  val "
            f"{100 * record['validation_mean']:.1f}  ({record['wall_s']:.1f}s)",
            flush=True,
        )
    if done != len(plan):
        print(f"only {done} of {len(plan)} cells finished", file=sys.stderr)
        return 1
    run_info["seconds"] = time.perf_counter() - t0
    run_info["cells"] = len(plan)
    data["runs"].append(run_info)
    save_results(args.out, data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
