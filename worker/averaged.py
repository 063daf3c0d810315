"""An averaged job (``metric.average``): macro-F1 and its kin over the classes of a multi-class
label column or the labels of several 0/1 columns, trained for with :mod:`metro.multiclass`.

Each repeat draws a stratified train/test split (test 20%, on the class, or on each row's
rarest label), fits ``MetroClassifier(average=...)`` on the training rows (one METRO search per
class or label, the job's settings for each, choosing on pooled cross-validation folds) and
scores it on the test rows, beside :data:`core.job_spec.AVERAGED_BASELINES` fitted on the same
rows. What is written:

* a trace step per lambda of every class's search, numbered in the order they ran within the
  repeat, with its ``class_index`` and ``label``;
* one choice per class and repeat (:class:`core.records.RepeatChoice` with ``label`` and the
  multi-class ``offset``);
* metric results: per method and split, the average (``class_index`` -1, its counts summed over
  the classes) and each class's own metric and one-vs-rest counts. METRO's ``validation`` rows
  are where it chose: the pooled held-out folds (its averaged selection score);
* repeat 0's model: the per-class models as one stack (:func:`metro.multiclass.stacked_model`),
  thresholds and offsets folded in, saved as safetensors and ONNX with one score per class.

A multi-class job with ``search.multiclass`` multinomial (a linear model;
:func:`core.job_spec.job_multiclass`) trains the multinomial model: no search per class, so no
trace steps (its bar moves a repeat at a time) and no recorded fits; its choices are a row per
class with no lambda, shift or threshold (null, null, 0: it decides by the argmax of its logits
plus the offsets, as a refined model's 0 says its sign decides), its offset and its own metric
where the offsets were tuned, and its model is the multinomial logits with the offsets folded in
(the manifest's ``multiclass``; ``class_lambdas``, ``search`` and ``surrogate`` null: none
trained it).

Every fit of every class's search is recorded as a binary job's are (:mod:`worker.fits`, each
class's roles named ``class<c>.fold<k>`` and ``class<c>.refit``), so an attempt that is
interrupted loads what an earlier one finished, resumes a fit in progress from its last trainer
checkpoint, and finishes with the same model; idle workers fit shards of its grids as they do a
binary job's (:class:`AveragedSolvers` builds a class's solver of a role for them). Not done
here (a binary job has it): a grid fitted in one stack for every class (a network on a GPU,
:mod:`metro.search.class_stack`) is not recorded (each class's refit is), and there is no
separate validation split.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from sklearn.model_selection import train_test_split

from core import store
from core.job_spec import (
    AVERAGED_BASELINES,
    MULTICLASS_ONLY_BASELINES,
    DataSize,
    JobObjects,
    metric_average,
)
from core.records import ChoiceWarning, MetricRecord, RepeatChoice
from metro.averaging import class_cells, label_cells, per_class_scores, sklearn_average
from metro.constraints import get_constraints
from metro.datasets import MultiTargetDataset, stratify_key
from metro.experiment import (
    TEST_FRACTION,  # a binary job's test share too
    repeat_seed,
)
from metro.multiclass import MIN_POSITIVES, check_class_rows, class_margins, delivers_offsets
from metro.multiclass_baselines import (
    OvRThresholdClassifier,
    PlainLogistic,
    TunedArgmaxLogistic,
)
from worker.datasets import load_job_multi_target
from worker.fits import FitLedger
from worker.lease import LeaseLost
from worker.results import (
    data_warnings,
    finite_or_none,
    repeat_choice,
    step_row,
)

if TYPE_CHECKING:
    from metro.estimator import MetroClassifier
    from metro.metrics import MetricSpec
    from metro.search import TraceStep
    from metro.search.solver import TrainerSolver
    from worker.runner import JobRun

logger = logging.getLogger(__name__)


class AveragedRun:
    """The averaged path of one attempt (:class:`worker.runner.JobRun` holds the lease and
    handles the outcome)."""

    def __init__(
        self, run: JobRun, objects: JobObjects, check_budgets: Callable[[DataSize, int], None]
    ) -> None:
        self.run = run
        self.objects = objects
        self.check_budgets = check_budgets  # the job's limits on its data and its classes
        self.spec = run.job.spec
        self.average = str(metric_average(self.spec))
        self.steps: dict[int, int] = {}  # repeat -> steps recorded so far
        self.n_classes = 1
        self.classes: tuple[Any, ...] = ()
        self.label_targets: np.ndarray | None = None
        self.repeats = int(self.spec.get("repeats", 1))
        # The data's own warnings (an id-like feature), once it is loaded.
        self.data_warnings: list[ChoiceWarning] = []

    # -- the work -----------------------------------------------------------------------------
    def execute(self) -> str:
        run = self.run
        dataset = load_job_multi_target(
            run.ctx, run.job.tenant_id, self.spec["dataset"], job_id=run.job.id
        )
        run.pin_data(dataset.content_sha256)
        self.n_classes, self.classes = dataset.n_classes, dataset.classes
        # each label's 0/1 target, which a constraint depending on the prior resolves on
        self.label_targets = dataset.indicators
        self.check_budgets(
            DataSize.of_examples(dataset.n_samples, dataset.X.shape[1:]), dataset.n_classes
        )
        # Refused here by name ("class 'k05' ..."): the library is given class indices. Each
        # split then keeps what this asks on its training side (_keep_enough_to_train).
        check_class_rows(
            dataset.indicators.sum(axis=0), self.classes, _what(dataset.target == "multiclass"),
            dataset.n_samples,
        )  # fmt: skip
        # Sized for the folds the classes' searches get on the training rows (cv auto: one
        # holdout past 20,000 of them), as a binary job's bar is.
        run.progress.for_rows(dataset.n_samples - math.ceil(TEST_FRACTION * dataset.n_samples))
        run.lease.check()
        ledger = FitLedger(
            run.ctx, run.job.id, run.token, run.lease, shard_size=run.job.shard_size,
            request_help=lambda n: run.queue.request_help(run.job.id, self.spec, n),
        )  # fmt: skip
        records: list[MetricRecord] = []
        choices: list[RepeatChoice] = []
        self.data_warnings = data_warnings(dataset.X, dataset.feature_names)
        delivered: MetroClassifier | None = None
        scores: dict[str, float | None] = {}
        for repeat in range(self.repeats):
            seed = repeat_seed(self.objects.training.seed, repeat)
            train, test = _split(dataset, seed)
            est = self._fit(dataset, train, repeat, seed, ledger)
            # Choices and rows are stored by class position: a class missing from the fit
            # would put each later class's numbers under the name of the one before.
            if len(est.classes_) != self.n_classes:
                raise RuntimeError(
                    f"{len(est.classes_)} of {self.n_classes} classes were trained in repeat "
                    f"{repeat}"
                )
            spec = est.metric_
            choices += [
                # The data's own warnings (an id-like feature) on repeat 0's choices, as a
                # binary job's: every class's model was trained on that feature.
                c.model_copy(update={"warnings": [*c.warnings, *self.data_warnings]})
                if repeat == 0
                else c
                for c in self._choices(repeat, est)
            ]
            if not store.set_choices(run.ctx, run.job.id, run.token, choices, best_lambda=None):
                raise LeaseLost(str(run.job.id))
            if est.multiclass_ == "multinomial":  # no trace steps moved the bar: its repeat did
                run.progress.value = max(min((repeat + 1) / self.repeats, 0.99), run.progress.value)
                if not store.set_progress(run.ctx, run.job.id, run.token, run.progress.value):
                    raise LeaseLost(str(run.job.id))
            y_test = dataset.y[test]
            # Held-out rows are evaluated, not served: an outlier row that overflows the
            # models counts by its undefined margins (as a binary job's does), not as an error.
            margins = class_margins(est, dataset.X[test], refuse_undefined=False)
            tested = self._rows("metro", repeat, "test", spec, self._cells(margins, y_test), est)
            records += tested
            if est.selection_cells_ is not None:
                records += self._rows(
                    "metro", repeat, "validation", spec, np.asarray(est.selection_cells_), est,
                    average=float(est.best_score_),
                )  # fmt: skip
            if repeat == 0:
                delivered = est
                scores = {"validation": _finite(est.best_score_), "test": tested[0].metric_value}
            for method in AVERAGED_BASELINES:
                if dataset.target == "multilabel" and method in MULTICLASS_ONLY_BASELINES:
                    continue
                run.lease.check()
                predicted = self._baseline(method, dataset, train, test, seed)
                records += self._rows(method, repeat, "test", spec, predicted, None)
        assert delivered is not None
        logger.info(
            "job %s: %d fits trained, %d reused from earlier attempts",
            run.job.id, ledger.trained, ledger.loaded,
        )  # fmt: skip
        run.lease.check()
        return self._finish(dataset, delivered, records, choices, scores)

    def _fit(
        self,
        dataset: MultiTargetDataset,
        train: np.ndarray,
        repeat: int,
        seed: int,
        ledger: FitLedger,
    ) -> MetroClassifier:
        from metro.multiclass import fit_averaged

        return fit_averaged(
            averaged_estimator(self.spec, self.objects, seed), dataset.X[train], dataset.y[train],
            on_class_step=lambda c, step: self._on_step(repeat, c, step),
            wrap_solver=lambda c, role, inner: ledger.solver(repeat, class_role(c, role), inner),
        )  # fmt: skip

    def _on_step(self, repeat: int, class_index: int, step: TraceStep) -> None:
        run = self.run
        run.lease.check()
        number = self.steps.get(repeat, 0)
        self.steps[repeat] = number + 1
        row = step_row(repeat, step).model_copy(
            update={"step": number, "class_index": class_index,
                    "label": self.classes[class_index]}
        )  # fmt: skip
        per_class = max(run.progress.metro_units, 1)
        done = (class_index + min((step.step + 1) / per_class, 1.0)) / self.n_classes
        progress = min((repeat + done) / self.repeats, 0.99)
        progress = max(progress, run.progress.value)
        run.progress.value = progress
        if not store.record_step(
            run.ctx, run.job.id, run.token, row, progress=progress, best_lambda=None
        ):
            raise LeaseLost(str(run.job.id))

    # -- scoring ------------------------------------------------------------------------------
    def _cells(self, margins: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Per-class counts [C, 4] of the decisions ``margins`` [n, C] make on ``y``."""
        margins = np.asarray(margins)
        if y.ndim == 2:
            return label_cells(y, (margins >= 0).astype(np.int64))
        return class_cells(y, np.argmax(margins, axis=1), self.n_classes)

    def _baseline(
        self, method: str, dataset: MultiTargetDataset, train: np.ndarray, test: np.ndarray,
        seed: int,
    ) -> np.ndarray:  # fmt: skip
        preset, metric = per_class_metric(self.spec)
        X = dataset.X.reshape(dataset.n_samples, -1)
        model: OvRThresholdClassifier | PlainLogistic | TunedArgmaxLogistic
        if method == "ovr-threshold":
            model = OvRThresholdClassifier(
                metric=preset, metric_params=metric, random_state=seed,
                constraints=list(self.objects.constraints) or None,
            )  # fmt: skip
        elif method == "logistic-tuned":
            model = TunedArgmaxLogistic(
                metric=preset, metric_params=metric, average=self.average, random_state=seed
            )
        else:
            model = PlainLogistic(random_state=seed)
        model.fit(X[train], dataset.y[train])
        predicted = model.predict(X[test])
        y = dataset.y[test]
        if y.ndim == 2:
            return label_cells(y, predicted)
        return class_cells(y, predicted, self.n_classes)

    def _rows(
        self, method: str, repeat: int, split: str, spec: MetricSpec, cells: np.ndarray,
        est: MetroClassifier | None, *, average: float | None = None,
    ) -> list[MetricRecord]:  # fmt: skip
        """The average's row (class_index -1: counts summed over the classes) and a row per
        class, each class's own metric on its one-vs-rest counts."""
        target = "multilabel" if self.spec["dataset"].get("label_columns") else "multiclass"
        value = sklearn_average(spec, cells, self.average, target=target)
        if average is not None:
            value = average
        scores = per_class_scores(spec, cells)
        lambdas = None if est is None else est.lambdas_
        # Multi-label constraints: each label's values and whether they hold on its own cells;
        # the average's row: their mean over the labels, and whether every label holds them.
        held = [self._constraints_on(c, cells[c]) for c in range(self.n_classes)]

        def row(
            index: int, value: float, counts: np.ndarray, lam: float | None,
            constraints: tuple[list[float | None], bool] | None,
        ) -> MetricRecord:  # fmt: skip
            tp, fp, fn, tn = (int(np.rint(v)) for v in counts)
            return MetricRecord(
                method=method, repeat=repeat, split=split,  # type: ignore[arg-type]
                metric_value=float(value), tp=tp, fp=fp, fn=fn, tn=tn,
                lambda_=None if lam is None or not math.isfinite(lam) else float(lam),
                constraint_values=None if constraints is None else constraints[0],
                constraints_hold=None if constraints is None else constraints[1],
                class_index=index, label=None if index < 0 else self.classes[index],
            )  # fmt: skip

        overall = None
        if held[0] is not None:
            columns = zip(*(h[0] for h in held if h is not None), strict=True)
            overall = (
                [None if None in col else float(np.mean(col)) for col in columns],
                all(h[1] for h in held if h is not None),
            )
        out = [row(-1, value, cells.sum(axis=0), None, overall)]
        out += [
            row(c, float(scores[c]), cells[c],
                None if lambdas is None else float(lambdas[c]), held[c])
            for c in range(self.n_classes)
        ]  # fmt: skip
        return out

    def _constraints_on(
        self, class_index: int, cells: np.ndarray
    ) -> tuple[list[float | None], bool] | None:
        """Each constraint's value on one label's counts, and whether all of them hold there
        (None: a job without constraints)."""
        if not self.objects.constraints or self.label_targets is None:
            return None
        built = get_constraints(list(self.objects.constraints), self.label_targets[:, class_index])
        fractions = np.asarray(cells, dtype=np.float64) / max(float(np.sum(cells)), 1.0)
        values = [c.value(fractions) for c in built]
        return (
            [v if math.isfinite(v) else None for v in values],
            all(c.holds(fractions) for c in built),
        )

    def _choices(self, repeat: int, est: MetroClassifier) -> list[RepeatChoice]:
        offsets = delivers_offsets(est)
        if est.multiclass_ == "multinomial":
            return self._multinomial_choices(repeat, est)
        choices = []
        for c, e in enumerate(est.estimators_):
            choice = repeat_choice(repeat, e.metric_, e.search_result_)
            # What the whole fit found of this class beyond its own search's warnings (an
            # argmax whose figure for the class rests on few true positives).
            extra = [ChoiceWarning.of(w) for w in est.class_warnings_[c][len(e.warnings_) :]]
            choices.append(
                choice.model_copy(
                    update={
                        "label": self.classes[c],
                        "offset": float(est.offsets_[c]) if offsets else None,
                        "warnings": [*choice.warnings, *extra],
                    }
                )
            )
        return choices

    def _multinomial_choices(self, repeat: int, est: MetroClassifier) -> list[RepeatChoice]:
        """A multinomial model's classes (search.multiclass): no search chose a lambda, a shift
        or a threshold for any of them (null, null, 0); each class's offset, and its own metric
        and counts where the offsets were tuned (the pooled held-out folds)."""
        cells = np.rint(np.asarray(est.selection_cells_)).astype(int)
        return [
            RepeatChoice(
                repeat=repeat,
                trained_lambda=None,
                shift=None,
                ratio_reached=None,
                tuned_threshold=0.0,
                selection_score=_finite(est.best_scores_[c]),
                selection_split="cross-validation",
                n_folds=est.n_splits_,
                selection_counts=dict(
                    zip(("tp", "fp", "fn", "tn"), cells[c].tolist(), strict=True)
                ),
                warnings=[ChoiceWarning.of(w) for w in est.class_warnings_[c]],
                label=self.classes[c],
                offset=float(est.offsets_[c]),
            )
            for c in range(len(self.classes))
        ]

    # -- the model ----------------------------------------------------------------------------
    def _finish(
        self, dataset: MultiTargetDataset, est: MetroClassifier, records: list[MetricRecord],
        choices: list[RepeatChoice], scores: dict[str, float | None],
    ) -> str:  # fmt: skip
        from metro.multiclass import stacked_model

        run = self.run
        spec = self.spec
        multiclass = dataset.target == "multiclass"
        warnings = [
            {"code": w.code, "message": f"{_what(multiclass)} {label!r}: {w.message}"}
            for label, found in zip(self.classes, est.class_warnings_, strict=True)
            for w in found
        ] + [{"code": w.code, "message": w.message} for w in self.data_warnings]  # the model's
        manifest = {
            "metric": {**spec["metric"], **(spec.get("metric_info") or {})},
            "average": self.average,
            "classes": list(self.classes),
            "decision": "argmax" if multiclass else "per_label",
            "decision_rule": est.decision_rule_,
            "multiclass": est.multiclass_ if multiclass else None,
            # A multinomial model has no lambda (null), where a number would be made up.
            "class_lambdas": None if est.lambdas_ is None else [_finite(v) for v in est.lambdas_],
            "class_thresholds": [_finite(v) for v in est.thresholds_],
            # As in the result's choices (metro.multiclass.delivers_offsets).
            "offsets": [_finite(v) for v in est.offsets_] if delivers_offsets(est) else None,
            "warnings": warnings,
            "feature_names": list(dataset.feature_names)
            if dataset.feature_names is not None and dataset.X.ndim == 2
            else None,
            # Over the repeat's training rows the delivered model saw (absent for images).
            **(
                {"feature_ranges": est.feature_ranges_.to_dict()}
                if est.feature_ranges_ is not None
                else {}
            ),
            "job_id": str(run.job.id),
            # A multinomial model: no surrogate and no lambda search trained it.
            "surrogate": None if est.multiclass_ == "multinomial" else spec.get("surrogate"),
            "search": None
            if est.multiclass_ == "multinomial"
            else choices[0].strategy or (spec.get("search") or {}).get("strategy"),
            "scores": scores,
            "dataset": spec["dataset"]["uri"],
            # Which data it saw, after the upload is deleted too: the job's data_sha256,
            # metro.datasets.load_dataset(...).content_sha256 of a local copy.
            "data_sha256": dataset.content_sha256,
            # The job's spec as stored (defaults filled in): POSTed again it trains the same
            # model, so a downloaded model says how to remake it after its job is deleted.
            "job_spec": spec,
            **averaged_constrained_manifest(spec, records, choices, self.classes),
        }
        model_row = run.save_delivered(stacked_model(est), manifest)
        return run.succeed(records, model_row, best_lambda=None, choices=choices)


def averaged_constrained_manifest(
    spec: dict[str, Any],
    records: list[MetricRecord],
    choices: list[RepeatChoice],
    classes: Sequence[Any],
) -> dict[str, Any]:
    """The manifest's account of an averaged job's constraints (the delivered model: METRO,
    repeat 0), nothing for an unconstrained job. A binary job's manifest carries each
    constraint's value and whether they held; an averaged one said nothing of them, so nothing
    told a reader of the file the model was trained under a floor. Each constraint as specified
    and named, with its mean over the classes on each split (``scores``, as the result's
    average row); ``constraints_hold`` and ``constraints_satisfied`` true where every class's
    held; and ``class_constraints``, each class's own: where its search chose
    (``selection_values``, ``reach``, ``satisfied``) and on each split (``scores``, ``hold``),
    since the mean can clear a bound a class missed."""
    constraints = spec.get("constraints") or []
    if not constraints:
        return {}
    info = spec.get("constraint_info") or [{} for _ in constraints]
    delivered = [r for r in records if r.method == "metro" and r.repeat == 0]
    overall = {r.split: r for r in delivered if r.class_index == -1}
    own = {(r.class_index, r.split): r for r in delivered if r.class_index >= 0}
    chosen = [c for c in choices if c.repeat == 0]

    def values(record: MetricRecord) -> list[float | None]:
        given = record.constraint_values or [None] * len(constraints)
        return [finite_or_none(v) for v in given]

    return {
        "constraints": [
            {
                **given,
                **named,
                "scores": {split: values(r)[i] for split, r in overall.items()},
            }
            for i, (given, named) in enumerate(zip(constraints, info, strict=True))
        ],
        "constraints_hold": {split: r.constraints_hold for split, r in overall.items()},
        "constraints_satisfied": all(bool(c.constraints_satisfied) for c in chosen),
        "class_constraints": [
            {
                "label": label,
                "selection_values": choice.constraint_values,
                "reach": choice.constraint_reach,
                "satisfied": choice.constraints_satisfied,
                "mu": choice.mu,
                "scores": {split: values(r) for (k, split), r in own.items() if k == index},
                "hold": {split: r.constraints_hold for (k, split), r in own.items() if k == index},
            }
            for index, (label, choice) in enumerate(zip(classes, chosen, strict=True))
        ],
    }


def per_class_metric(spec: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The per-class preset and its parameters (the spec's metric without its averaging)."""
    params = dict(spec["metric"])
    params.pop("average", None)
    return str(params.pop("preset")), params


def averaged_estimator(spec: dict[str, Any], objects: JobObjects, seed: int) -> MetroClassifier:
    """The estimator an averaged job fits in the repeat seeded ``seed``: its per-class metric and
    the job's settings."""
    from metro.estimator import MetroClassifier

    preset, params = per_class_metric(spec)
    average = str(metric_average(spec))
    return MetroClassifier(
        metric=preset, metric_params=params, surrogate=objects.surrogate, model=objects.model,
        search=objects.search, training=objects.training, random_state=seed, average=average,
        constraints=list(objects.constraints) or None,
    )  # fmt: skip


def class_role(class_index: int, role: str) -> str:
    """The recorded role of class ``class_index``'s solver ``role`` (``class2.fold0``)."""
    return f"class{class_index}.{role}"


def _class_and_role(recorded: str) -> tuple[int, str]:
    """:func:`class_role` read back; ValueError for a role of no averaged job's fit."""
    name, dot, role = recorded.partition(".")
    if not name.startswith("class") or not name[5:].isdigit() or not dot:
        raise ValueError(f"{recorded!r} is not the role of an averaged job's fit")
    return int(name[5:]), role


class AveragedSolvers:
    """The solvers of an averaged job's recorded fits (:func:`class_role`), built as the job's
    own worker builds them (:func:`metro.multiclass.class_solvers`): what a helper fits."""

    def __init__(
        self, spec: dict[str, Any], objects: JobObjects, dataset: MultiTargetDataset
    ) -> None:
        self.spec, self.objects, self.dataset = spec, objects, dataset
        # Per repeat, its classes' solvers (the rows validated and split once per repeat).
        self._repeats: dict[int, Callable[[int, str], TrainerSolver]] = {}

    def solver(self, repeat: int, role: str) -> TrainerSolver:
        from metro.multiclass import class_solvers

        class_index, inner = _class_and_role(role)
        if repeat not in self._repeats:
            seed = repeat_seed(self.objects.training.seed, repeat)
            train, _ = _split(self.dataset, seed)
            est = averaged_estimator(self.spec, self.objects, seed)
            self._repeats[repeat] = class_solvers(est, self.dataset.X[train], self.dataset.y[train])
        return self._repeats[repeat](class_index, inner)


def _split(dataset: MultiTargetDataset, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted train and test rows, stratified on :func:`~metro.datasets.stratify_key` where
    every group can be split, shuffled (seeded) otherwise; then every class (label) that has
    :data:`~metro.multiclass.MIN_POSITIVES` positive (and negative) rows keeps that many on the
    training side (:func:`_keep_enough_to_train`)."""
    rows = np.arange(dataset.n_samples)
    try:
        train, test = train_test_split(
            rows, test_size=TEST_FRACTION, random_state=seed, stratify=stratify_key(dataset)
        )
    except ValueError:  # a group too small to be on both sides
        train, test = train_test_split(rows, test_size=TEST_FRACTION, random_state=seed)
    return _keep_enough_to_train(dataset.indicators, np.sort(train), np.sort(test))


def _keep_enough_to_train(
    indicators: np.ndarray, train: np.ndarray, test: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Move test rows to the training side until every class (label) has there as many positive
    and negative rows as the library needs (or all it has). A class of two rows split one and
    one, or one whose rows all fell to the test side, failed its job, or worse: its search was
    missing and the next class's choices were stored under its name."""
    Y = np.asarray(indicators).astype(bool)
    in_train = np.zeros(Y.shape[0], dtype=bool)
    in_train[train] = True
    for column in range(Y.shape[1]):
        for side in (Y[:, column], ~Y[:, column]):  # its positives, then its negatives
            wanted = min(MIN_POSITIVES, int(side.sum()))
            missing = wanted - int((side & in_train).sum())
            if missing > 0:  # the lowest-numbered test rows of that side
                in_train[np.flatnonzero(side & ~in_train)[:missing]] = True
    kept = np.flatnonzero(in_train)
    return kept, np.setdiff1d(np.concatenate([train, test]), kept)


def _finite(value: float) -> float | None:
    return finite_or_none(float(value))


def _what(multiclass: bool) -> str:
    return "class" if multiclass else "label"
