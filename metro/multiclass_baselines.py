"""What users do today for macro-F1 and per-label metrics, to compare ``average=`` with.

All three use scikit-learn's ``StandardScaler + LogisticRegression()`` (C=1, its defaults), as a
user would; thresholds and offsets are chosen on 5 stratified shuffled folds seeded with
``random_state``, the folds a ``MetroClassifier(average=..., random_state=...)`` fit uses for the
same class or label:

* :class:`OvRThresholdClassifier`: one-vs-rest logistic regression with one threshold per class
  (or label), each tuned for that class's metric on its pooled out-of-fold scores (the common
  practice). Multi-class: the ``"ovr"`` rule of :mod:`metro.multiclass` (the largest thresholded
  margin); multi-label: every label whose score reaches its threshold.
* :class:`PlainLogistic`: the multinomial (multi-class) or per-label (multi-label) logistic
  regression, argmax / probability 0.5, nothing tuned.
* :class:`TunedArgmaxLogistic` (multi-class): the multinomial model's log-probabilities plus
  per-class offsets (weights on the probabilities) tuned for the averaged metric on the pooled
  out-of-fold log-probabilities by :func:`metro.argmax.tune_offsets`; folds stratified on y.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.multiclass import type_of_target

from metro.argmax import predict_argmax, tune_offsets
from metro.averaging import check_average
from metro.constraints import get_constraints
from metro.metrics import MetricSpec, get_metric
from metro.thresholds import best_constrained_threshold, best_threshold

__all__ = ["OvRThresholdClassifier", "PlainLogistic", "TunedArgmaxLogistic"]

N_SPLITS = 5


def _logistic() -> Pipeline:
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))


def _targets(y: Any) -> tuple[str, np.ndarray, list[np.ndarray], np.ndarray | None]:
    """(target type, classes, one 0/1 target per class or label, class indices or None)."""
    kind = type_of_target(y, input_name="y")
    if kind == "multilabel-indicator":
        Y = np.asarray(y).astype(np.int64)
        return kind, np.arange(Y.shape[1]), [Y[:, j] for j in range(Y.shape[1])], None
    if kind in ("multiclass", "binary"):
        classes, idx = np.unique(np.ravel(y), return_inverse=True)
        return kind, classes, [(idx == c).astype(np.int64) for c in range(classes.size)], idx
    raise ValueError(f"expected a multi-class y or a multi-label indicator Y; got {kind}")


class OvRThresholdClassifier:
    """One-vs-rest logistic regression, one threshold per class/label tuned on 5 folds."""

    def __init__(
        self, *, metric: str = "f1", metric_params: dict[str, Any] | None = None,
        random_state: int | None = None, constraints: Sequence[Any] | None = None,
    ) -> None:  # fmt: skip
        self.metric = metric
        self.metric_params = metric_params
        self.random_state = random_state
        # Multi-label: each label's threshold chosen under these (metro.constraints), as a
        # user holding each label to a floor would.
        self.constraints = constraints

    def fit(self, X: Any, y: Any) -> OvRThresholdClassifier:
        X = np.asarray(X, dtype=np.float64)
        spec = get_metric(self.metric, **dict(self.metric_params or {})).resolve(np.array([0, 1]))
        assert isinstance(spec, MetricSpec)
        self.target_type_, self.classes_, targets, _ = _targets(y)
        self.estimators_: list[Pipeline] = []
        thresholds = []
        for t in targets:
            folds = StratifiedKFold(N_SPLITS, shuffle=True, random_state=self.random_state)
            oof = np.empty(t.size)
            for train, held_out in folds.split(X, t):
                model = _logistic().fit(X[train], t[train])
                oof[held_out] = model.decision_function(X[held_out])
            if self.constraints:
                held = get_constraints(self.constraints, t)
                thresholds.append(best_constrained_threshold(spec, held, oof, t).threshold)
            else:
                thresholds.append(best_threshold(spec, oof, t)[0])
            self.estimators_.append(_logistic().fit(X, t))
        self.thresholds_ = np.array(thresholds)
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        scores = np.column_stack([m.decision_function(X) for m in self.estimators_])
        return np.asarray(scores - self.thresholds_)

    def predict(self, X: Any) -> np.ndarray:
        margins = self.decision_function(X)
        if self.target_type_ == "multilabel-indicator":
            return (margins >= 0).astype(np.int64)
        return np.asarray(self.classes_[predict_argmax(margins)])


class PlainLogistic:
    """Multinomial (multi-class) or per-label (multi-label) logistic regression."""

    def __init__(self, *, random_state: int | None = None) -> None:
        self.random_state = random_state

    def fit(self, X: Any, y: Any) -> PlainLogistic:
        X = np.asarray(X, dtype=np.float64)
        self.target_type_, self.classes_, targets, idx = _targets(y)
        if idx is None:
            self.estimators_ = [_logistic().fit(X, t) for t in targets]
        else:
            self.estimators_ = [_logistic().fit(X, idx)]
        return self

    def predict(self, X: Any) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if self.target_type_ == "multilabel-indicator":
            return np.column_stack([m.predict(X) for m in self.estimators_]).astype(np.int64)
        return np.asarray(self.classes_[self.estimators_[0].predict(X)])


class TunedArgmaxLogistic:
    """Multinomial logistic regression with per-class offsets on its log-probabilities tuned
    for the averaged metric on pooled out-of-fold log-probabilities (multi-class only)."""

    def __init__(
        self, *, metric: str = "f1", metric_params: dict[str, Any] | None = None,
        average: str = "macro", random_state: int | None = None,
    ) -> None:  # fmt: skip
        self.metric = metric
        self.metric_params = metric_params
        self.average = average
        self.random_state = random_state

    def fit(self, X: Any, y: Any) -> TunedArgmaxLogistic:
        X = np.asarray(X, dtype=np.float64)
        average = check_average(self.average)
        spec = get_metric(self.metric, **dict(self.metric_params or {})).resolve(np.array([0, 1]))
        assert isinstance(spec, MetricSpec)
        _, self.classes_, _, idx = _targets(y)
        if idx is None:
            raise ValueError("TunedArgmaxLogistic is for multi-class y, not a multi-label Y")
        folds = StratifiedKFold(N_SPLITS, shuffle=True, random_state=self.random_state)
        oof = np.empty((idx.size, self.classes_.size))
        for train, held_out in folds.split(X, idx):
            model = _logistic().fit(X[train], idx[train])
            # a class absent from a training part gets -inf: give it the floor instead
            proba = np.full((held_out.size, self.classes_.size), 1e-12)
            proba[:, model.classes_] = model.predict_proba(X[held_out])
            oof[held_out] = np.log(np.clip(proba, 1e-12, None))
        self.offsets_, self.best_score_ = tune_offsets(oof, idx, spec=spec, average=average)
        self.estimator_ = _logistic().fit(X, idx)
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        proba = self.estimator_.predict_proba(np.asarray(X, dtype=np.float64))
        return np.asarray(np.log(np.clip(proba, 1e-12, None)) + self.offsets_)

    def predict(self, X: Any) -> np.ndarray:
        return np.asarray(self.classes_[predict_argmax(self.decision_function(X))])
