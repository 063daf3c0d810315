"""Beyond binary: averaged per-class and per-label metrics (macro-F1, ...), trained for.

``MetroClassifier(average="macro")`` delegates here. The metrics and their averages are
:mod:`metro.averaging`'s (from the confusion matrix, as ``sklearn.metrics`` averages them), the
argmax's offsets :mod:`metro.argmax`'s; their names are importable from here too.

**Multi-label** ``Y`` (an ``n x L`` indicator matrix). Each label's metric depends only on its own
label's cells, and the macro and weighted averages weigh them with constants, so the averaged
metric is maximized by maximizing every label's metric on its own: L independent binary METRO fits
(each with the estimator's settings and its own tuned threshold), deciding ``margin_l >= 0`` per
label. The micro average is one ratio of the cells summed over the labels, which couples them:
the same L fits, then per-label offsets ``b`` tuned together for the pooled metric on the pooled
out-of-fold margins (:func:`metro.label_offsets.tune_label_offsets`; ``decision_rule_``
``"tuned"``), deciding ``margin_l + b_l >= 0``; without folds every label keeps its own threshold
(``"per_label"``). Constraints are refused with it (the offsets would move each label's floor).

**Multi-class** ``y`` (one label per row, C >= 2 classes). The decision is an argmax, so the
classes are coupled. One binary METRO fit per class (one-vs-rest, its metric for that class), then
one of two decision rules on the per-class margins ``m_c(x) = h_c(x) - threshold_c``:

* ``"ovr"``: among the classes whose model says positive (``m_c >= 0``) the largest margin, and the
  largest margin when none does. Both branches pick ``argmax_c m_c`` (when some margin is
  non-negative the largest one is), so this rule is the argmax of the thresholded margins.
* ``"tuned"`` (the default): ``argmax_c (m_c + b_c)`` with per-class offsets ``b`` chosen for the
  averaged metric by coordinate ascent (:func:`metro.argmax.tune_offsets`) on the pooled
  out-of-fold margins of the per-class fits (each row's margin for class c comes from class c's
  fold model that did not see it). An offset on a log-probability is a weight on the
  probability, so this is the weighted argmax of the plug-in literature. It starts from
  ``b = 0`` (the ``"ovr"`` rule) and only moves when the pooled held-out metric improves, so on
  the rows it was tuned on it is never worse.
  Without folds (a holdout, ``cv=None`` or more than 20,000 rows) there are no pooled margins and
  the rule is ``"ovr"``; ``decision_rule_`` says which rule was used.

**The multinomial model** (``multiclass="multinomial"``; the default is ``"per_class"``).
Instead of one METRO search per class, one multinomial logistic regression (scikit-learn's
``LogisticRegression()``, C=1, lbfgs, on the features standardized by the library's own
statistics, the ``mean``/``std`` the delivered model carries) whose C logits are the class
scores, decided by ``argmax_c (logit_c + b_c)`` (the argmax of the log-probabilities plus ``b``:
they differ from the logits by a per-row constant), with ``b`` tuned by :func:`tune_offsets` on
the pooled out-of-fold log-probabilities of the same model fitted on each fold's training rows:
:class:`metro.multiclass_baselines.TunedArgmaxLogistic`, on the search's folds (``cv``'s; 5
where ``cv`` asks a holdout, as a multinomial fit is cheap). Ahead of per-class METRO on average
on three suites of tasks (docs/quality.md) and about 100x faster, but not on every task (one cell
of the last suite 3.99 points behind), so not the default. It has no lambda and no per-class
threshold: ``lambdas_`` is None, ``thresholds_`` zeros, ``estimators_`` empty, ``model_`` the
C-output linear model (offsets not folded in; they are in :func:`stacked_model`),
``multiclass_`` ``"multinomial"``; the search's and trainer's settings (lambdas, surrogate,
epochs, weight decay) do not apply to it. ``"multinomial"`` with a network (mlp, cnn3) is
refused. Each class's held-out one-vs-rest decisions are checked against its better constant as
a class's own search checks them (``no_signal``).

A binary ``y`` with ``average="macro"`` is treated as the two-class case of the multi-class
problem, as ``sklearn.metrics.f1_score(average="macro")`` does: the mean of the F1 of both classes
(use ``average=None``, the default, for the F1 of the positive class).

Constraints (``constraints=[{"metric": "recall", "at_least": 0.8}]``) apply to multi-label data:
each label's binary search is held to them on its own label (each label's recall at least 0.8),
which is what they mean there since each label is decided on its own. Multi-class data refuses
them: the argmax over the classes (and its offsets) moves every class's cells after its search
chose, so no per-class floor would be what the delivered model does.

Every class's search chooses on the same cross-validation folds, stratified on the class (on
each row's rarest label for multi-label data), so that a fold's grids of all classes train on the
same rows: on a CUDA device a network's are fitted as one stack of C x K models
(:mod:`metro.search.class_stack`, ``stacked_fits_``), elsewhere class after class.

Where a class's refinement step (:mod:`metro.search.refine`) was kept, its out-of-fold margins are
the refined fold models' held-out scores (``SearchResult.held_out_scores``), as the delivered
margins are the refined model's: tuned on the choice's margins before the step, whose scale can
be far from the refined model's, the offsets made the delivered argmax drop whole classes the
held-out argmax predicted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from scipy.special import log_softmax
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from metro.argmax import DECISION_RULES, DEFAULT_DECISION, predict_argmax, tune_offsets
from metro.averaging import (
    AVERAGES,
    PER_LABEL_METRICS,
    averaged_score,
    check_average,
    class_cells,
    label_cells,
    per_class_scores,
    sklearn_average,
)
from metro.datasets import float32_features, label_array, strata
from metro.label_offsets import predict_labels, tune_label_offsets
from metro.metrics import MetricSpec, canonical_preset, get_metric
from metro.model_selection import stratified_folds
from metro.models import StackedModel, concatenate
from metro.multinomial import multinomial_model
from metro.ranges import FeatureRanges
from metro.search.base import FEW_TRUE_POSITIVES, SearchWarning, WarningCode
from metro.search.class_stack import ClassStack, stacks_classes
from metro.search.config import AUTO_CV_FOLDS
from metro.search.safeguard import no_signal_warning
from metro.trainer import predict_scores, require_defined_scores

if TYPE_CHECKING:
    from metro.estimator import MetroClassifier
    from metro.search import LambdaSolver, TraceStep
    from metro.search.solver import TrainerSolver

__all__ = [
    "AVERAGES",
    "DECISION_RULES",
    "MIN_POSITIVES",
    "PER_LABEL_METRICS",
    "averaged_score",
    "check_argmax_metric",
    "check_class_rows",
    "class_cells",
    "class_solver",
    "class_solvers",
    "delivers_offsets",
    "label_cells",
    "multiclass_strategy",
    "multinomial_model",
    "per_class_scores",
    "predict_argmax",
    "resolve_multiclass",
    "sklearn_average",
    "stacked_model",
    "tune_offsets",
]

MIN_POSITIVES = 2


# -- validation -----------------------------------------------------------------------------------


def _per_label_spec(est: MetroClassifier) -> MetricSpec:
    metric = est.metric
    if not isinstance(metric, str) or canonical_preset(metric) not in PER_LABEL_METRICS:
        raise ValueError(
            f"average={est.average!r} supports the per-label presets "
            f"{', '.join(PER_LABEL_METRICS)}; got metric={metric!r}"
        )
    spec = get_metric(metric, **dict(est.metric_params or {})).resolve(np.array([0, 1]))
    assert isinstance(spec, MetricSpec)
    return spec


def check_argmax_metric(spec: MetricSpec) -> None:
    """Refuse a per-class metric whose denominator the predictions do not move (recall) for
    the classes of one label: alone, each class's recall is highest when every row is
    predicted that class, so the per-class searches deliver nearly constant scores that no
    argmax can separate (iris: macro recall 0.33, every row one class). Over several 0/1
    labels each label decides on its own, and predicting a label everywhere is that label's
    best recall indeed."""
    if not spec.denominator_depends_on_predictions:
        raise ValueError(
            f"{spec.name} averaged over the classes of one label is not trained for: each "
            f"class's {spec.name} alone is highest when every row is predicted that class, "
            "which leaves the argmax nothing to choose by (macro recall over classes is "
            "balanced accuracy); train for f1, f_beta, jaccard or precision, or average "
            f"{spec.name} over several 0/1 label columns"
        )


def _check_config(est: MetroClassifier) -> None:
    if est.pos_label is not None:
        raise ValueError(
            "pos_label does not apply with average=: every class (or label) is scored in turn"
        )
    if est.constraints and est.average == "micro":
        raise ValueError(MICRO_CONSTRAINTS)


# A micro average's per-label offsets move every label's threshold after its search chose it.
MICRO_CONSTRAINTS = (
    "constraints do not apply with average='micro': each label's search holds its own label to "
    "them, and the micro average then moves every label's threshold together for the pooled "
    "metric, so no label's floor would be what the delivered model does; use 'macro' or "
    "'weighted', or fit one binary problem per label"
)


def check_class_rows(counts: np.ndarray, names: Sequence[Any], what: str, n: int) -> None:
    """Refuse a class (``what``: "class" or "label") named in ``names`` whose ``counts`` of
    positive rows out of ``n`` leave fewer than :data:`MIN_POSITIVES` positives or negatives."""
    for name, k in zip(names, counts, strict=True):
        if k == n:
            raise ValueError(f"{what} {name!r} is constant (every row is positive): drop it")
        if k == 0:
            raise ValueError(f"{what} {name!r} is constant (no row is positive): drop it")
        if k < MIN_POSITIVES:
            raise ValueError(
                f"{what} {name!r} has {int(k)} positive row(s); at least {MIN_POSITIVES} "
                "are needed to train and choose its threshold"
            )
        if n - k < MIN_POSITIVES:
            raise ValueError(
                f"{what} {name!r} has {int(n - k)} negative row(s); at least {MIN_POSITIVES} "
                "are needed"
            )


# -- fitting ----------------------------------------------------------------------------------


def _binary_estimator(
    est: MetroClassifier, seed: int, callback: Callable[[TraceStep], None] | None
) -> MetroClassifier:
    from metro.estimator import MetroClassifier

    params = est.get_params(deep=False)
    params.update(average=None, pos_label=None, random_state=seed, callback=callback)
    return MetroClassifier(**params)


def _oof_margins(
    fitted: MetroClassifier, y01: np.ndarray, folds: Sequence[tuple[np.ndarray, np.ndarray]]
) -> np.ndarray | None:
    """Class/label margins on the rows each fold held out (None without folds)."""
    result = fitted.search_result_
    fits = result.fold_fits
    if not fitted.n_splits_ or len(fits) != fitted.n_splits_:
        return None
    threshold = float(result.threshold)
    refined = result.refinement is not None and result.refinement.temperature is not None
    # A kept refinement delivers the refined model: its margins are the refined fold models'
    # held-out scores (deciding by their sign), not the choice's before the step, whose scale
    # can differ so much that offsets tuned on them made the argmax drop whole classes.
    pooled = result.held_out_scores if refined else None
    if refined and pooled is None:
        threshold = float(result.refinement.threshold_before)  # type: ignore[union-attr]
    out = np.full(y01.size, np.nan)
    if len(folds) != len(fits):
        return None
    start = 0
    for fit, (_, held_out) in zip(fits, folds, strict=True):
        scores, labels = fit.validation_scores, fit.validation_labels
        if scores is None or labels is None or len(scores) != held_out.size:
            return None
        if not np.array_equal(np.asarray(labels).astype(bool), y01[held_out].astype(bool)):
            return None  # not the folds we reproduced: do not guess
        if pooled is not None:
            scores = pooled[start : start + held_out.size]
            start += held_out.size
        out[held_out] = np.asarray(scores, dtype=np.float64) - threshold
    return out if np.all(np.isfinite(out)) else None


def _shared_folds(
    est: MetroClassifier, indicators: np.ndarray, seed: int
) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """The cross-validation folds of every class's search (None: the search chooses on a
    holdout): stratified on the class (multi-class), or on each row's rarest label
    (multi-label; a row with none is its own stratum), shuffled with ``seed``."""
    n = indicators.shape[0]
    n_folds = est._search_config().folds_for(n)
    if n_folds is None:
        return None
    return stratified_folds(strata(indicators), n_folds=n_folds, cv=est.cv, random_state=seed)


@dataclass(frozen=True)
class _Prepared:
    """What every class's search of an averaged fit shares: the validated rows, the averaging and
    per-class metric, the target's type, each class's (label's) 0/1 target, the seed of the
    classes' estimators and their cross-validation folds (None: a holdout)."""

    X: np.ndarray
    average: str
    spec: MetricSpec
    target: str
    targets: list[np.ndarray]
    seed: int
    folds: list[tuple[np.ndarray, np.ndarray]] | None


def _prepare(est: MetroClassifier, X: Any, y: Any) -> _Prepared:
    """Validate an averaged fit's data and settings and split its targets (sets ``classes_``)."""
    average = check_average(est.average)
    _check_config(est)
    spec = _per_label_spec(est)
    label_columns = getattr(y, "columns", None)  # a DataFrame's, before validation drops them
    X, y = validate_data(
        est, X, y, allow_nd=True, dtype=[np.float64, np.float32], ensure_min_samples=2,
        multi_output=True,
    )  # fmt: skip
    X = float32_features(X, getattr(est, "feature_names_in_", None))
    target_type = type_of_target(y, input_name="y", raise_unknown=True)
    if target_type != "multilabel-indicator":
        check_argmax_metric(spec)
    if target_type == "multilabel-indicator" and est._search_config().multiclass == "multinomial":
        raise ValueError(
            "multiclass='multinomial' is for a multi-class y (one label per row); a multi-label "
            "Y is trained one search per label: use multiclass='per_class'"
        )
    if est.constraints and target_type != "multilabel-indicator":
        raise ValueError(
            "constraints with average= apply to multi-label data, each label's model held to "
            "them on its own label; a multi-class model decides by an argmax over the classes, "
            "which no per-class constraint survives: drop them, or fit one binary problem"
        )
    n = X.shape[0]
    # One seed shared by every class's folds, drawn once when random_state is None and the
    # training gives no seed (training={"seed": 3} makes the fit reproducible, as a binary one).
    given = est.random_state if est.random_state is not None else est._training_seed()
    seed = int(check_random_state(given).randint(np.iinfo(np.int32).max))
    if target_type == "multilabel-indicator":
        values = np.unique(np.asarray(y))
        if not np.isin(values, (0, 1)).all():
            raise ValueError(
                "a multi-label y must hold 0 and 1 (or booleans) only, one column per label; "
                f"got the values {values[:5].tolist()}"
            )
        Y = np.asarray(y).astype(np.int64)
        # A DataFrame's columns name its labels (in errors, warnings and a saved model's
        # classes); an array's labels are its column positions, as scikit-learn's.
        columns = label_columns
        names: Sequence[Any] = list(range(Y.shape[1])) if columns is None else list(columns)
        check_class_rows(Y.sum(axis=0), names, "label", n)
        targets = [Y[:, j] for j in range(Y.shape[1])]
        est.classes_ = np.arange(Y.shape[1]) if columns is None else label_array(names)
    elif target_type in ("multiclass", "binary"):
        y = column_or_1d(y, warn=True)  # a column vector: scikit-learn's DataConversionWarning
        est.classes_, y_idx = np.unique(y, return_inverse=True)
        names = est.classes_.tolist()
        counts = np.bincount(y_idx, minlength=est.classes_.size)
        if est.classes_.size < 2:
            raise ValueError(f"y has a single class {names}: nothing to classify")
        check_class_rows(counts, names, "class", n)
        targets = [(y_idx == c).astype(np.int64) for c in range(est.classes_.size)]
    else:
        raise ValueError(
            f"average={average!r} needs a multi-class y (one label per row) or a multi-label "
            f"indicator matrix Y (n x L of 0/1); the type of the target is {target_type}"
        )

    # One set of folds for every class (stratified on the class, or on each row's rarest
    # label), so that every class's grid of a fold trains on the same rows: in one stacked fit
    # (metro.search.class_stack) when ``stack_classes``.
    folds = _shared_folds(est, np.column_stack(targets), seed)
    return _Prepared(X, average, spec, target_type, targets, seed, folds)


def class_solvers(est: MetroClassifier, X: Any, y: Any) -> Callable[[int, str], TrainerSolver]:
    """``solver(class_index, role)``: the solver :func:`fit_averaged` builds for class (label)
    ``class_index``'s ``role`` (``"fold<k>"``, ``"main"`` or ``"refit"``, as ``wrap_solver`` is
    told), built the same way, so that a worker fitting part of an averaged job's grid elsewhere
    fits exactly what the job's own search would. The data is validated and split once, here;
    ``solver`` raises ValueError for a class or role the fit does not have."""
    prepared = _prepare(est, X, y)
    binary = _binary_estimator(est, prepared.seed, None)

    def solver(class_index: int, role: str) -> TrainerSolver:
        if not 0 <= class_index < len(prepared.targets):
            raise ValueError(f"class {class_index} is not one of the {len(prepared.targets)}")
        y01 = prepared.targets[class_index]
        rows, _ = binary._search_rows(y01, prepared.folds)
        if role not in rows:
            raise ValueError(
                f"an averaged fit's class has no solver {role!r} (it has {sorted(rows)})"
            )
        return binary._solver_factory(prepared.X, y01)(*rows[role])

    return solver


def class_solver(
    est: MetroClassifier, X: Any, y: Any, *, class_index: int, role: str
) -> TrainerSolver:
    """One solver of :func:`class_solvers`."""
    return class_solvers(est, X, y)(class_index, role)


def _joint_ranges(ranges: Sequence[FeatureRanges | None]) -> FeatureRanges | None:
    """The ranges of the rows of every class's model together (None for images)."""
    if not ranges or any(r is None for r in ranges):
        return None
    joint = ranges[0]
    assert joint is not None
    for other in ranges[1:]:
        assert other is not None
        joint = joint.union(other)
    return joint


def fit_averaged(
    est: MetroClassifier,
    X: Any,
    y: Any,
    *,
    on_class_step: Callable[[int, TraceStep], None] | None = None,
    stack_classes: bool | None = None,
    wrap_solver: Callable[[int, str, TrainerSolver], LambdaSolver] | None = None,
) -> MetroClassifier:
    """``est.fit(X, y)`` for ``est.average`` set: multi-class or multi-label (module docstring).

    ``on_class_step(c, step)`` is called with every step of class (label) ``c``'s search, in
    place of the estimator's ``callback`` (which is called with the step alone).
    ``stack_classes`` trains every class's grid of a fold in one stacked fit
    (:mod:`metro.search.class_stack`); False fits each class's alone (the same fits up to
    round-off, one after another); None: where :func:`~metro.search.class_stack.stacks_classes`
    says so (a network trained with SGD on a CUDA device).

    ``wrap_solver(c, role, solver)`` may put a solver of its own around each of class ``c``'s
    solvers (``role`` as :meth:`MetroClassifier._fit_binary` names it): the service's worker
    records every fit there, so that an interrupted job resumes and idle workers can fit shards
    of its grids (building them with :func:`class_solver`). Where the classes are stacked,
    a fold's grid is the stack's (fitted once for every class) and only the other solvers (each
    class's refit) are wrapped."""
    prepared = _prepare(est, X, y)
    est.ovr_score_ = est.per_label_score_ = None  # set where an argmax or offsets are tuned
    if prepared.target != "multilabel-indicator" and multiclass_strategy(est) == "multinomial":
        return _fit_multinomial(est, prepared)
    est.multiclass_ = "per_class"
    X, average, spec, target_type = prepared.X, prepared.average, prepared.spec, prepared.target
    targets, seed, folds = prepared.targets, prepared.seed, prepared.folds

    def callback(c: int) -> Callable[[TraceStep], None] | None:
        return est.callback if on_class_step is None else partial(on_class_step, c)

    indicators = np.column_stack(targets)
    y_idx = np.argmax(indicators, axis=1)  # a multi-class row's class (its one 1)
    if stack_classes is None:
        stack_classes = stacks_classes(est._model_spec(), est._training_config())
    stack = ClassStack(indicators) if stack_classes and folds is not None else None

    def wrap(c: int) -> Callable[[str, TrainerSolver], LambdaSolver] | None:
        outer = None if wrap_solver is None else partial(wrap_solver, c)
        if stack is None or folds is None:
            return outer

        def stacked(role: str, inner: TrainerSolver) -> LambdaSolver:
            if not role.startswith("fold"):  # the refit: at this class's own lambda
                return inner if outer is None else outer(role, inner)
            train, held_out = folds[int(role[4:])]
            return stack.solver(role, c, inner, train, held_out)

        return stacked

    estimators = [
        _binary_estimator(est, seed, callback(c))._fit_binary(
            X, t, folds=folds, wrap_solver=wrap(c)
        )
        for c, t in enumerate(targets)
    ]
    est.stacked_fits_ = 0 if stack is None else stack.stacked_fits
    est.estimators_ = estimators
    # The stack's rows are every class's delivered model's together (each class's refit is on
    # every row; a holdout's model on its training rows).
    est.feature_ranges_ = _joint_ranges([e.feature_ranges_ for e in estimators])
    est.average_ = average
    est.target_type_ = target_type
    est.metric_ = spec
    est.lambdas_ = np.array([e.best_lambda_ for e in estimators])
    est.thresholds_ = np.array([e.threshold_ for e in estimators])
    est.best_scores_ = np.array([e.best_score_ for e in estimators])
    est.n_fits_ = int(sum(e.n_fits_ for e in estimators))
    est.n_splits_ = min(e.n_splits_ for e in estimators)
    est.device_ = estimators[0].device_
    est.warnings_ = [w for e in estimators for w in e.warnings_]
    est.class_warnings_ = [list(e.warnings_) for e in estimators]

    if target_type == "multilabel-indicator":
        est.decision_rule_ = "per_label"
        est.offsets_ = np.zeros(len(estimators))
        if average == "micro" and folds is not None:
            oof = [_oof_margins(e, t, folds) for e, t in zip(estimators, targets, strict=True)]
            if all(m is not None for m in oof):
                margins = np.column_stack([m for m in oof if m is not None])
                _choose_label_offsets(est, margins, indicators, spec=spec)
                return _gather_class_findings(est)
            # Folds, but not every label's held-out margins: the offsets, tuned together or
            # not at all, are not, and that was said only for a holdout (the service's notice).
            for c, m in enumerate(oof):
                if m is None:
                    est.class_warnings_[c].append(_offsets_not_tuned_warning())
        counts_ = [e.search_result_.selection_counts for e in estimators]
        est.selection_cells_ = None
        if all(c is not None for c in counts_):
            cells = np.array(counts_, dtype=np.float64)
            est.selection_cells_ = cells
            est.best_score_ = float(averaged_score(spec, cells, average))
        elif average == "micro":  # no held-out counts to pool: no micro score to report
            est.best_score_ = float("nan")
        else:  # no held-out counts: each label's score, weighted by its rows as the average is
            support = np.array([float(t.sum()) for t in targets])
            weights = support if average == "weighted" and support.sum() > 0 else None
            est.best_score_ = float(np.average(est.best_scores_, weights=weights))
        return _gather_class_findings(est)

    oof = [
        None if folds is None else _oof_margins(e, t, folds)
        for e, t in zip(estimators, targets, strict=True)
    ]
    est.offsets_ = np.zeros(len(estimators))
    est.decision_rule_ = "ovr"
    est.best_score_ = float("nan")
    est.selection_cells_ = None
    if all(m is not None for m in oof):
        margins = np.column_stack([m for m in oof if m is not None])
        _choose_argmax(
            est, margins, y_idx, spec=spec, average=average, tuned=DEFAULT_DECISION == "tuned"
        )
        _add_argmax_warnings(est, X)
    return _gather_class_findings(est)


def _choose_argmax(
    est: MetroClassifier, margins: np.ndarray, y_idx: np.ndarray, *, spec: MetricSpec,
    average: str, tuned: bool,
) -> None:  # fmt: skip
    """The argmax's rule on the pooled held-out ``margins`` [n, C] (per class, or a multinomial
    model's log-probabilities): its plain average (``ovr_score_``), its offsets tuned for the
    average where ``tuned`` (``offsets_``, ``best_score_``, ``decision_rule_``) and its cells
    there (``selection_cells_``)."""
    k = margins.shape[1]
    est.ovr_score_ = float(
        averaged_score(spec, class_cells(y_idx, predict_argmax(margins), k), average)
    )
    est.offsets_, est.best_score_, est.decision_rule_ = np.zeros(k), est.ovr_score_, "ovr"
    if tuned:
        est.offsets_, est.best_score_ = tune_offsets(margins, y_idx, spec=spec, average=average)
        est.decision_rule_ = "tuned"
    est.selection_cells_ = class_cells(y_idx, predict_argmax(margins, est.offsets_), k)


def _choose_label_offsets(
    est: MetroClassifier, margins: np.ndarray, Y: np.ndarray, *, spec: MetricSpec
) -> None:
    """A micro-averaged multi-label fit's per-label offsets, tuned together for the pooled
    metric on the pooled held-out ``margins`` [n, L] (:func:`metro.label_offsets.
    tune_label_offsets`): ``offsets_``, ``best_score_``, ``selection_cells_`` (each label's
    held-out cells there), ``decision_rule_`` ``"tuned"`` and ``per_label_score_`` (the pooled
    metric of every label's own threshold, the offsets at 0)."""
    est.per_label_score_ = float(
        averaged_score(spec, label_cells(Y, predict_labels(margins)), "micro")
    )
    est.offsets_, est.best_score_ = tune_label_offsets(margins, Y, spec=spec)
    est.decision_rule_ = "tuned"
    est.selection_cells_ = label_cells(Y, predict_labels(margins, est.offsets_))


def _offsets_not_tuned_warning() -> SearchWarning:
    """A micro-averaged multi-label fit's ``offsets_not_tuned``, on each label whose
    out-of-fold margins could not be rebuilt from its search's folds."""
    return SearchWarning(
        WarningCode.OFFSETS_NOT_TUNED,
        "its out-of-fold margins could not be rebuilt from its search's folds (no held-out "
        "scores kept for every fold, or not the folds the labels share), so the labels' "
        "offsets were not tuned together for the micro average: each label keeps its own "
        "threshold",
    )


def delivers_offsets(est: MetroClassifier) -> bool:
    """Whether an averaged fit's ``offsets_`` are part of its decision (folded into
    :func:`stacked_model`): the argmax's of a multi-class fit, or a micro average's per-label
    ones where they were tuned; a multi-label fit whose labels keep their own thresholds has
    none to report (its zeros claimed a tuned rule)."""
    return bool(est.target_type_ != "multilabel-indicator" or est.decision_rule_ == "tuned")


def _add_argmax_warnings(est: MetroClassifier, X: np.ndarray) -> None:
    """Each class's warnings of the argmax chosen (:func:`_choose_argmax`) beyond what its own
    fit found: a part of the average resting on few true positives, a class the delivered model
    never predicts on its refit rows."""
    for c, thin in enumerate(thin_argmax_warnings(est.selection_cells_)):
        if thin is not None and not any(w.code == thin.code for w in est.class_warnings_[c]):
            est.class_warnings_[c].append(thin)
    for c, unseen in enumerate(unpredicted_class_warnings(est, X)):
        if unseen is not None:
            est.class_warnings_[c].append(unseen)


def multiclass_strategy(est: MetroClassifier) -> str:
    """How ``est`` trains a multi-class y: ``"multinomial"`` or ``"per_class"`` (its
    ``multiclass`` setting). ValueError for ``"multinomial"`` with a network."""
    return resolve_multiclass(est._search_config().multiclass, est._model_spec().kind)


def resolve_multiclass(chosen: str, kind: str) -> str:
    """The ``multiclass`` setting ``chosen`` for a model of ``kind`` (a job's spec is checked
    here too): ValueError for ``"multinomial"`` with a network."""
    if chosen == "multinomial" and kind != "linear":
        raise ValueError(
            f"multiclass='multinomial' is a linear model (a multinomial logistic regression); "
            f"a {kind} model trains a multi-class y per class: use multiclass='per_class'"
        )
    return str(chosen)


def _fit_multinomial(est: MetroClassifier, prepared: _Prepared) -> MetroClassifier:
    """:func:`fit_averaged` for ``multiclass="multinomial"`` (module docstring): the
    out-of-fold log-probabilities of the multinomial model on the search's folds (5 where the
    search would choose on a holdout), offsets tuned on them for the average, the model refit on
    every row."""
    X, spec, average, seed = prepared.X, prepared.spec, prepared.average, prepared.seed
    y_idx = np.argmax(np.column_stack(prepared.targets), axis=1)
    k = len(prepared.targets)
    folds = prepared.folds
    if folds is None:
        folds = stratified_folds(y_idx, n_folds=AUTO_CV_FOLDS, cv=est.cv, random_state=seed)
    oof = np.empty((y_idx.size, k))
    for train, held_out in folds:
        fold_model = multinomial_model(X[train], y_idx[train], k)
        oof[held_out] = log_softmax(
            np.asarray(predict_scores(fold_model, X[held_out]), np.float64), axis=1
        )
    est.multiclass_ = "multinomial"
    est.model_ = multinomial_model(X, y_idx, k)
    est.feature_ranges_ = FeatureRanges.of(X)  # trained on every row given
    est.estimators_ = []
    est.stacked_fits_ = 0
    est.average_ = average
    est.target_type_ = prepared.target
    est.metric_ = spec
    est.lambdas_ = None
    est.thresholds_ = np.zeros(k)
    est.n_fits_ = len(folds) + 1
    est.n_splits_ = len(folds)
    est.device_ = "cpu"
    _choose_argmax(est, oof, y_idx, spec=spec, average=average, tuned=True)
    est.best_scores_ = np.asarray(per_class_scores(spec, est.selection_cells_), dtype=np.float64)
    est.warnings_ = []
    est.class_warnings_ = [[] for _ in range(k)]
    # Each class's held-out one-vs-rest decisions against its better constant, as each class's
    # own search checks them where the classes are trained per class: a multinomial fit on
    # labels its features do not predict said nothing.
    held_out = predict_argmax(oof, est.offsets_)
    for c in range(k):
        found = no_signal_warning(spec, y_idx == c, held_out == c)
        if found is not None:
            est.class_warnings_[c].append(found)
    _add_argmax_warnings(est, X)
    return _gather_class_findings(est)


def _gather_class_findings(est: MetroClassifier) -> MetroClassifier:
    """What each class's search found, gathered on the averaged estimator: ``warnings_`` (each
    named by its class, as ``fit`` issues them: three "predicts every one ..." said not whose)
    and, under constraints, the attributes a binary fit has: ``constraints_``,
    ``constraint_values_`` (a row per class: each constraint's held-out value where its search
    chose), ``constraints_satisfied_`` (whether every class's held there) and
    ``class_constraints_satisfied_`` (each class's)."""
    kind = "label" if est.target_type_ == "multilabel-indicator" else "class"
    est.warnings_ = [
        replace(
            w, message=f"{kind} {(c.item() if isinstance(c, np.generic) else c)!r}: {w.message}"
        )
        for c, found in zip(est.classes_, est.class_warnings_, strict=True)
        for w in found
    ]
    if est.constraints:
        est.constraints_ = est.estimators_[0].constraints_
        est.constraint_values_ = np.array(
            [[np.nan if v is None else v for v in e.constraint_values_] for e in est.estimators_],
            dtype=np.float64,
        )
        est.class_constraints_satisfied_ = [bool(e.constraints_satisfied_) for e in est.estimators_]
        est.constraints_satisfied_ = all(est.class_constraints_satisfied_)
    return est


def thin_argmax_warnings(cells: np.ndarray) -> list[SearchWarning | None]:
    """Per class, a ``few_true_positives`` warning where the argmax the average was chosen by
    (its offsets tuned) is right about the class on fewer than FEW_TRUE_POSITIVES held-out
    rows: each class's search judged its own threshold, and the offsets then moved the
    decisions (a weighted precision of 0.933 rested on one held-out row of a class of 133,
    scored 1.0, without a word)."""
    out: list[SearchWarning | None] = []
    for tp, fp, fn, _ in np.rint(np.asarray(cells)).astype(int).tolist():
        if tp >= FEW_TRUE_POSITIVES:
            out.append(None)
            continue
        out.append(
            SearchWarning(
                WarningCode.FEW_TRUE_POSITIVES,
                f"the argmax (offsets tuned) predicts it for {tp + fp} held-out rows, {tp} of "
                f"them right, of {tp + fn} in it: its part of the average rests on {tp} true "
                f"positives",
            )
        )
    return out


def unpredicted_class_warnings(est: MetroClassifier, X: Any) -> list[SearchWarning | None]:
    """Per class, a ``predicts_one_class`` warning where the delivered model's argmax predicts
    the class for none of the rows it was refit on, though the argmax the offsets were tuned by
    predicted it for FEW_TRUE_POSITIVES held-out rows or more: the delivered margins are not the
    held-out ones (the refits, or a refinement), and a model that never outputs a class scores
    0 on it, which the held-out average did not see (whole classes were dropped so, silently)."""
    cells = est.selection_cells_
    if cells is None:
        return [None] * len(est.classes_)
    # The fit's own validated rows (not class_margins, which validates X again against the
    # feature names the fit just recorded: a DataFrame's fit then warned "X does not have valid
    # feature names").
    margins = np.nan_to_num(_margins(est, X), nan=-np.inf)  # a row it cannot score: none
    delivered = np.bincount(predict_argmax(margins), minlength=len(cells))
    out: list[SearchWarning | None] = []
    for c, (tp, fp, _, _) in enumerate(np.rint(np.asarray(cells)).astype(int).tolist()):
        held_out = tp + fp
        if delivered[c] or held_out < FEW_TRUE_POSITIVES:
            out.append(None)
            continue
        out.append(
            SearchWarning(
                WarningCode.PREDICTS_ONE_CLASS,
                f"the delivered model predicts it for none of the {int(np.sum(delivered))} rows "
                f"it was refit on, though the argmax the offsets were tuned by predicted it for "
                f"{held_out} held-out rows: it will score 0 on this class",
            )
        )
    return out


# -- prediction -------------------------------------------------------------------------------


def class_margins(est: MetroClassifier, X: Any, *, refuse_undefined: bool = True) -> np.ndarray:
    """``n x C`` (or ``n x L``) margins, offsets included: the argmax is the predicted class
    (multi-class); ``>= 0`` means the label is on (multi-label). The scores of
    :func:`stacked_model`, a column per class also for a binary y.

    A row whose values overflow the models has no margin: refused (``ValueError``), as the
    service refuses it, unless ``refuse_undefined`` is False (an evaluation of held-out rows,
    which counts such a row as a binary evaluation does, by its NaN or infinite margins,
    rather than fail a whole job on one outlier of its test split)."""
    check_is_fitted(est, "offsets_")
    X = validate_data(est, X, reset=False, allow_nd=True, dtype=np.float32)
    out = _margins(est, X)
    return require_defined_scores(out) if refuse_undefined else out


def _margins(est: MetroClassifier, X: np.ndarray) -> np.ndarray:
    """``n x C`` margins, offsets included, of rows already validated."""
    if getattr(est, "multiclass_", "per_class") == "multinomial":
        margins = predict_scores(est.model_, X, device=est._scoring_device())
    else:
        margins = np.column_stack(
            [predict_scores(e.model_, X, device=e._scoring_device())[:, 0] for e in est.estimators_]
        )
    return np.asarray(margins + est.offsets_)


def decision_function(est: MetroClassifier, X: Any) -> np.ndarray:
    """:func:`class_margins` in scikit-learn's shape: for a binary y one column, positive where
    ``classes_[1]`` is predicted (its margin over ``classes_[0]``'s), which binary scorers
    (``roc_auc``) take."""
    margins = class_margins(est, X)
    if est.target_type_ != "multilabel-indicator" and margins.shape[1] == 2:
        return np.asarray(margins[:, 1] - margins[:, 0])
    return margins


def stacked_model(est: MetroClassifier) -> StackedModel:
    """The fitted per-class (per-label) models as one stack whose K = C scores are
    :func:`decision_function`'s margins: each class's threshold and offset folded into its last
    bias (the multinomial model: its C logits, each class's offset folded into its bias).
    Saved and served as one model (safetensors, ONNX); its argmax is the predicted class
    (multi-class), and a score ``>= 0`` turns a label on (multi-label)."""
    check_is_fitted(est, "offsets_")
    if getattr(est, "multiclass_", "per_class") == "multinomial":
        stack = est.model_.select(list(range(est.model_.n_models)))  # a copy
    else:
        stack = concatenate([e.model_ for e in est.estimators_])
    with torch.no_grad():
        bias = getattr(stack, stack.last_bias_name)
        bias.add_(torch.as_tensor(np.asarray(est.offsets_), dtype=bias.dtype).reshape(bias.shape))
    return stack


def predict(est: MetroClassifier, X: Any) -> np.ndarray:
    margins = class_margins(est, X)
    if est.target_type_ == "multilabel-indicator":
        return (margins >= 0).astype(np.int64)
    return np.asarray(est.classes_[predict_argmax(margins)])


def score(est: MetroClassifier, X: Any, y: Any) -> float:
    """The averaged metric of the predictions on (X, y)."""
    predicted = predict(est, X)
    if est.target_type_ == "multilabel-indicator":
        kind = type_of_target(y, input_name="y")
        if kind != "multilabel-indicator":  # 0.5 counted as positive, as astype(bool) reads it
            raise ValueError(
                f"y must be a 0/1 indicator matrix, as the model was fitted on; got {kind}"
            )
        cells = label_cells(np.asarray(y), predicted)
    else:
        lookup = {c: i for i, c in enumerate(est.classes_.tolist())}
        truth = np.array([lookup.get(v, -1) for v in np.ravel(y).tolist()])
        if np.any(truth < 0):
            raise ValueError("y holds classes the model was not fitted on")
        pred = np.array([lookup[v] for v in predicted.tolist()])
        cells = class_cells(truth, pred, est.classes_.size)
        return sklearn_average(est.metric_, cells, str(est.average_), target="multiclass")
    return sklearn_average(est.metric_, cells, str(est.average_), target="multilabel")
