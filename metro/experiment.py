"""One experiment: METRO and the baselines on the same splits, scored on validation and test.

This is what a training job runs (the service's worker calls it) and what the benchmarks and the
``metro demo`` command run, so the numbers people read come from the code that trains their
models. Each repeat draws its own stratified train/validation/test split and trainer seed; no
selection step ever sees the test split.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
from sklearn.model_selection import StratifiedKFold

from metro.baselines import BASELINES, baseline_models, fit_baseline
from metro.constraints import Constraint, get_constraints
from metro.datasets import Dataset
from metro.device import resolve_device
from metro.metrics import Metric, MetricSpec
from metro.model_selection import Splits, split_indices, split_sizes
from metro.models import ModelSpec, StackedModel
from metro.ranges import FeatureRanges
from metro.search import (
    LambdaSolver,
    SearchConfig,
    SearchResult,
    TraceStep,
    cells_from_predictions,
    run_search,
)
from metro.search.fold_stack import FoldStackSolver, stacks_folds
from metro.search.solver import TrainerSolver, delivered_model
from metro.surrogates import Surrogate
from metro.trainer import TrainingConfig, predict_scores
from metro.trainer.config import MAX_SEED, check_int

__all__ = [
    "MAX_REPEATS",
    "METHODS",
    "TEST_FRACTION",
    "ExperimentResult",
    "FittedMethod",
    "MethodScore",
    "RepeatSetup",
    "models_per_repeat",
    "prepare_repeat",
    "repeat_seed",
    "run_experiment",
]

METHODS: tuple[str, ...] = ("metro", *BASELINES)
# Repeats of one experiment: each is a whole search (and every baseline) on fresh splits.
MAX_REPEATS = 100
# The share of the rows an experiment sets aside to test on (each repeat its own rows).
TEST_FRACTION = 0.2
_FOLD_ROLE = re.compile(r"fold(\d+)of(\d+)")
_FOLD_STACK_ROLE = re.compile(r"folds(\d+)")


@dataclass
class MethodScore:
    method: str
    repeat: int
    split: str  # "validation" | "test"
    value: float  # the metric, natural orientation
    tp: int
    fp: int
    fn: int
    tn: int
    lam: float | None = None
    threshold: float = 0.0
    theta: float | None = None
    seconds: float = 0.0
    # With constraints: each one's value on this split, and whether all of them hold.
    constraint_values: tuple[float, ...] = ()
    constraints_hold: bool | None = None


@dataclass
class FittedMethod:
    """A trained model and the rule that turns its score into a label. For METRO, ``lam`` and
    ``shift`` are what the model was trained with (its search's ``trained_lambda`` and
    ``trained_shift``), never an estimate no model was trained at."""

    method: str
    repeat: int
    model: StackedModel
    threshold: float = 0.0
    lam: float | None = None
    shift: str | None = None
    # A tabular METRO model's training ranges (the rows it was trained on; None for images).
    feature_ranges: FeatureRanges | None = None


@dataclass
class ExperimentResult:
    metric: MetricSpec
    scores: list[MethodScore] = field(default_factory=list)
    traces: dict[int, list[TraceStep]] = field(default_factory=dict)
    searches: dict[int, SearchResult] = field(default_factory=dict)
    fitted: list[FittedMethod] = field(default_factory=list)

    def summary(self, split: str = "test") -> dict[str, tuple[float, float | None, int]]:
        """method -> (mean, sample standard deviation, number of repeats) of the metric on
        ``split``; the standard deviation is None for one repeat (not 0: one value has no
        spread to measure), as the service's results have it."""
        out: dict[str, tuple[float, float | None, int]] = {}
        for method in dict.fromkeys(s.method for s in self.scores):
            values = [s.value for s in self.scores if s.method == method and s.split == split]
            if values:
                std = float(np.std(values, ddof=1)) if len(values) > 1 else None
                out[method] = (float(np.mean(values)), std, len(values))
        return out

    def model_for(self, method: str = "metro", repeat: int = 0) -> FittedMethod:
        for fitted in self.fitted:
            if fitted.method == method and fitted.repeat == repeat:
                return fitted
        raise KeyError(f"no fitted model for method {method!r}, repeat {repeat}")


@dataclass(frozen=True)
class RepeatSetup:
    """What one repeat of an experiment trains on: its split, the metric resolved on its training
    part and its trainer config (seeded per repeat). :meth:`solver` builds the search's solvers,
    so that a process fitting part of a search elsewhere (a worker sharing a grid) fits exactly
    what :func:`run_experiment` would."""

    dataset: Dataset
    repeat: int
    splits: Splits
    spec: MetricSpec
    config: TrainingConfig
    surrogate: Surrogate
    model: ModelSpec
    constraints: tuple[Constraint, ...] = ()

    @property
    def has_validation(self) -> bool:
        return self.splits.validation.size > 0

    @property
    def development(self) -> np.ndarray:
        """Training + validation: what the refit and the folds use (never the test part)."""
        return np.sort(np.concatenate([self.splits.train, self.splits.validation]))

    def fold(self, k: int, n_folds: int) -> tuple[np.ndarray, np.ndarray]:
        """Fold ``k`` of a stratified ``n_folds``-fold split of :attr:`development` (seeded by
        the repeat's trainer seed, so every process computes the same folds)."""
        dev = self.development
        tr, va = self.fold_positions(n_folds)[k]
        return dev[tr], dev[va]

    def fold_positions(self, n_folds: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each fold's (training, held-out) positions into :attr:`development`."""
        dev = self.development
        folds = StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=self.config.seed)
        return list(folds.split(np.zeros(dev.size), self.dataset.y[dev]))

    def solver(self, role: str) -> TrainerSolver | FoldStackSolver:
        """``"main"``: fit on the training part, judge on validation (when there is one);
        ``"refit"``: fit on training + validation, the final fit at the chosen lambda;
        ``"fold{k}of{n}"``: fit on fold k's training rows of training + validation, judge on its
        held-out rows (the grid's cross-validated choice); ``"folds{n}"``: all n folds of the
        grid as one stack (:class:`metro.search.fold_stack.FoldStackSolver`)."""
        X, y = self.dataset.X, self.dataset.y
        tr, va = self.splits.train, self.splits.validation
        stacked = _FOLD_STACK_ROLE.fullmatch(role)
        if stacked is not None and int(stacked[1]) >= 2:
            dev = self.development
            return FoldStackSolver(
                self.spec, X[dev], y[dev], self.fold_positions(int(stacked[1])),
                surrogate=self.surrogate, model=self.model, config=self.config,
                constraints=self.constraints,
            )  # fmt: skip
        folded = _FOLD_ROLE.fullmatch(role)
        if role == "main":
            idx, val = tr, (va if self.has_validation else None)
        elif role == "refit":
            idx, val = self.development, None
        elif folded is not None and int(folded[1]) < int(folded[2]):
            idx, val = self.fold(int(folded[1]), int(folded[2]))
        else:
            raise ValueError(
                f"unknown solver role {role!r}; expected 'main', 'refit', 'fold<k>of<n>' or "
                "'folds<n>'"
            )
        return TrainerSolver(
            self.spec, X[idx], y[idx], surrogate=self.surrogate, model=self.model,
            config=self.config, X_validation=None if val is None else X[val],
            y_validation=None if val is None else y[val], constraints=self.constraints,
        )  # fmt: skip


def models_per_repeat(
    n_rows: int,
    *,
    search: SearchConfig,
    baselines: Sequence[str] = (),
    constrained: bool = False,
    validation_fraction: float = 0.25,
    test_fraction: float = TEST_FRACTION,
) -> int:
    """At most how many models one repeat of :func:`run_experiment` trains on ``n_rows`` rows:
    METRO's search on training + validation (:meth:`SearchConfig.models_trained`; its folds
    depend on those rows) and each baseline's (:func:`metro.baselines.baseline_models`). Each
    model is trained on at most ``n_rows`` rows for its ``epochs`` (SGD) or ``max_iter``
    (L-BFGS) passes, which is how a service bounds a job's work."""
    _, n_validation, n_test = split_sizes(
        n_rows, validation_fraction=validation_fraction, test_fraction=test_fraction
    )
    models = search.models_trained(n_rows - n_test, constrained=constrained)
    refit = search.refit and n_validation > 0
    return models + sum(baseline_models(method, refit=refit) for method in baselines)


def repeat_seed(seed: int, repeat: int) -> int:
    """The seed of repeat ``repeat``: ``seed + repeat``, wrapped into 0 .. MAX_SEED, so that every
    seed a TrainingConfig takes seeds every repeat (NumPy and scikit-learn refuse 2**32)."""
    return (seed + repeat) % (MAX_SEED + 1)


def prepare_repeat(
    dataset: Dataset,
    *,
    metric: Metric,
    surrogate: Surrogate,
    model: ModelSpec,
    training: TrainingConfig,
    repeat: int,
    seed: int = 0,
    validation_fraction: float = 0.25,
    test_fraction: float = TEST_FRACTION,
    constraints: Sequence[Constraint | Mapping[str, Any]] | None = None,
) -> RepeatSetup:
    """Repeat ``repeat`` of :func:`run_experiment`: split seeded ``seed + repeat``, metric (and
    constraints) resolved on the training part, trainer seed ``training.seed + repeat`` (both
    wrapped into 0 .. MAX_SEED by :func:`repeat_seed`)."""
    splits = split_indices(
        dataset.y,
        validation_fraction=validation_fraction,
        test_fraction=test_fraction,
        random_state=repeat_seed(seed, repeat),
    )
    spec = metric.resolve(dataset.y[splits.train])
    config = TrainingConfig.from_dict(
        {**training.to_dict(), "seed": repeat_seed(training.seed, repeat)}
    )
    return RepeatSetup(
        dataset=dataset, repeat=repeat, splits=splits, spec=spec, config=config,
        surrogate=surrogate, model=model,
        constraints=get_constraints(constraints, dataset.y[splits.train]),
    )  # fmt: skip


def run_experiment(
    dataset: Dataset,
    *,
    metric: Metric,
    surrogate: Surrogate,
    model: ModelSpec,
    search: SearchConfig,
    training: TrainingConfig,
    baselines: Sequence[str] = (),
    repeats: int = 1,
    seed: int = 0,
    validation_fraction: float = 0.25,
    test_fraction: float = TEST_FRACTION,
    on_step: Callable[[int, TraceStep], None] | None = None,
    on_method: Callable[[int, str], None] | None = None,
    on_search: Callable[[int, MetricSpec, SearchResult], None] | None = None,
    wrap_solver: Callable[[RepeatSetup, str, TrainerSolver | FoldStackSolver], LambdaSolver]
    | None = None,
    constraints: Sequence[Constraint | Mapping[str, Any]] | None = None,
    stack_folds: bool | None = None,
) -> ExperimentResult:
    """Run METRO (and ``baselines``) ``repeats`` times on fresh splits of ``dataset``.

    ``on_step(repeat, step)`` reports every lambda of METRO's search as it completes;
    ``on_method(repeat, method)`` is called before each method starts, and
    ``on_search(repeat, spec, search)`` when a repeat's search has chosen (``spec`` is the metric
    resolved on that repeat). All may raise ``metro.trainer.TrainingCancelled`` to stop.
    ``wrap_solver(setup, role, solver)`` may put a solver of its own around each of METRO's
    solvers (``role`` is ``"main"`` or ``"refit"``), e.g. to reuse fits saved by an interrupted
    run; it must return the same candidates. ``constraints`` (see :mod:`metro.constraints`) make
    METRO's search the constrained grid and the baselines choose their thresholds under them;
    every score then reports each constraint's value. ``stack_folds`` trains the folds of a
    cross-validated, unconstrained grid as one stack (role ``"folds<n>"``;
    :mod:`metro.search.fold_stack`); None: where :func:`~metro.search.fold_stack.stacks_folds`
    says so (an mlp trained with SGD on a CUDA device).
    """
    unknown = [b for b in baselines if b not in BASELINES]
    if unknown:
        raise ValueError(f"unknown baseline(s) {unknown}; expected any of {', '.join(BASELINES)}")
    if not isinstance(repeats, int) or isinstance(repeats, bool) or not 1 <= repeats <= MAX_REPEATS:
        raise ValueError(f"repeats must be an integer between 1 and {MAX_REPEATS}")
    check_int("seed", seed, 0, MAX_SEED)
    if baselines and validation_fraction <= 0:
        raise ValueError("baselines need a validation split (validation_fraction > 0)")
    model.check_input(tuple(dataset.X.shape[1:]))
    X, y = dataset.X, dataset.y
    device = str(resolve_device(training.device))
    if stack_folds is None:
        stack_folds = stacks_folds(model, training)
    elif stack_folds and training.resolve_optimizer(model) != "sgd":
        raise ValueError("stack_folds needs the SGD optimizer (a model other than linear)")
    result: ExperimentResult | None = None

    for repeat in range(repeats):
        setup = prepare_repeat(
            dataset, metric=metric, surrogate=surrogate, model=model, training=training,
            repeat=repeat, seed=seed, validation_fraction=validation_fraction,
            test_fraction=test_fraction, constraints=constraints,
        )  # fmt: skip
        tr, va, te = setup.splits.train, setup.splits.validation, setup.splits.test
        dev = np.sort(np.concatenate([tr, va]))
        spec, config = setup.spec, setup.config
        if result is None:
            result = ExperimentResult(metric=spec)

        def solver(role: str, setup: RepeatSetup = setup) -> LambdaSolver:
            inner = setup.solver(role)
            return inner if wrap_solver is None else wrap_solver(setup, role, inner)

        if on_method is not None:
            on_method(repeat, "metro")
        started = time.perf_counter()
        n_folds = search.folds_for(int(dev.size)) if setup.has_validation else None
        folds = None if n_folds is None else [solver(f"fold{k}of{n_folds}") for k in range(n_folds)]
        main = solver("main") if folds is None else folds[0]
        refit = solver("refit") if (search.refit and setup.has_validation) else None
        stacked = (
            solver(f"folds{n_folds}")
            if stack_folds and n_folds is not None and n_folds > 1 and not setup.constraints
            else None
        )
        search_result = run_search(
            main,
            config=search,
            fold_solvers=folds,
            refit_solver=refit,
            on_step=None if on_step is None else partial(on_step, repeat),
            constraints=setup.constraints,
            fold_stack=stacked,
        )
        if on_search is not None:
            on_search(repeat, spec, search_result)
        metro_model = delivered_model(search_result)
        seconds = time.perf_counter() - started
        result.traces[repeat] = search_result.trace
        result.searches[repeat] = search_result
        fitted = FittedMethod(
            method="metro",
            repeat=repeat,
            model=metro_model,
            lam=search_result.trained_lambda,
            shift=search_result.trained_shift,
            # Refit (or refined after the refit) on training + validation, else the main fit's
            # training rows.
            feature_ranges=FeatureRanges.of(X[dev if search_result.final is not None else tr]),
        )
        result.fitted.append(fitted)
        _score(result, setup, fitted, X, y, va, te, device, seconds, theta=None)

        for method in baselines:
            if on_method is not None:
                on_method(repeat, method)
            started = time.perf_counter()
            base = fit_baseline(
                method,
                spec=spec,
                X_train=X[tr],
                y_train=y[tr],
                X_validation=X[va],
                y_validation=y[va],
                model=model,
                config=config,
                X_refit=X[dev] if search.refit else None,
                y_refit=y[dev] if search.refit else None,
                constraints=setup.constraints,
            )
            seconds = time.perf_counter() - started
            fitted = FittedMethod(
                method=method, repeat=repeat, model=base.model, threshold=base.threshold
            )
            result.fitted.append(fitted)
            _score(result, setup, fitted, X, y, va, te, device, seconds, theta=base.theta)
    assert result is not None
    return result


def _score(
    result: ExperimentResult,
    setup: RepeatSetup,
    fitted: FittedMethod,
    X: np.ndarray,
    y: np.ndarray,
    va: np.ndarray,
    te: np.ndarray,
    device: str,
    seconds: float,
    *,
    theta: float | None,
) -> None:
    for split, idx in (("validation", va), ("test", te)):
        if idx.size == 0:
            continue
        scores = predict_scores(fitted.model, X[idx], device=device)[:, 0]
        cells = cells_from_predictions(y[idx], (scores >= fitted.threshold)[:, None])[0]
        counts = np.rint(cells * idx.size).astype(int)
        spec = setup.spec
        # From the counts reported beside it, so that the value is theirs to the last bit
        # (F1 of 27/6/4 is 54/64 = 0.84375, which fractions made 0.8437499999999999 and four
        # decimals 0.8437).
        loss = spec.loss_from_fractions(counts.astype(np.float64))
        values = tuple(c.value(counts.astype(np.float64)) for c in setup.constraints)
        result.scores.append(
            MethodScore(
                method=fitted.method,
                repeat=fitted.repeat,
                split=split,
                value=spec.score_from_loss(loss),
                tp=int(counts[0]),
                fp=int(counts[1]),
                fn=int(counts[2]),
                tn=int(counts[3]),
                lam=fitted.lam,
                threshold=fitted.threshold,
                theta=theta,
                seconds=seconds,
                constraint_values=values,
                constraints_hold=(
                    all(c.holds(cells) for c in setup.constraints) if setup.constraints else None
                ),
            )
        )


def describe(result: ExperimentResult) -> dict[str, Any]:
    """A JSON-friendly summary: per method, mean/std on each split."""
    out: dict[str, Any] = {}
    for split in ("validation", "test"):
        for method, (mean, std, n) in result.summary(split).items():
            out.setdefault(method, {})[split] = {
                "mean": mean,
                "std": std if std is not None and math.isfinite(std) else None,
                "repeats": n,
            }
    return out
