"""A fitted :class:`~metro.MetroClassifier` saved as the service saves a job's model, and read
back to predict.

``MetroClassifier.save(target)`` writes the files a job's model download holds
(``model.safetensors``, ``model.onnx`` and ``manifest.json``: :mod:`metro.serialization`), never a
pickle, with what ``predict`` needs in the manifest: the labels (binary), or the classes and how
they decide (several classes or labels), and the feature names. :func:`load_classifier` reads
them back, checking the weights' digest, as a :class:`SavedClassifier` whose ``predict``,
``decision_function`` and ``margin`` give what the fitted estimator gave on the same rows. The
search's record (``trace_``, ``best_score_`` and the rest) stays with the estimator; the
manifest keeps the figures a reader of the file asks for (the trained lambda, the held-out score
the choice was made by, the warnings).

A saved file is also what ``metro predict`` and ONNX Runtime read: ``score >= threshold`` is the
positive label (``threshold`` is 0: the tuned threshold is folded into the model's last bias).
"""

from __future__ import annotations

import os
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from metro.datasets import label_array
from metro.datasets._loader import first_flagged_cell
from metro.metrics import spec_display_name
from metro.models import StackedModel
from metro.ranges import FeatureRanges, FeatureRangeWarning, RangeReport, out_of_range
from metro.serialization import DECISIONS, ModelFormatError, load_model, save_model

if TYPE_CHECKING:
    from metro.estimator import MetroClassifier

__all__ = ["SavedClassifier", "load_classifier", "save_classifier"]


def save_classifier(
    est: MetroClassifier, target: str | os.PathLike[str], *, onnx: bool = True
) -> dict[str, Any]:
    """Write the fitted ``est`` to ``target`` (a directory or an fsspec URL) and return the
    manifest. ``onnx=False`` leaves out ``model.onnx``."""
    from sklearn.utils.validation import check_is_fitted

    averaged = getattr(est, "average_", None) is not None
    check_is_fitted(est, "estimators_" if averaged else "model_")
    # save_model makes the values plain JSON (numpy scalars and arrays, names as text).
    ranges = getattr(est, "feature_ranges_", None)
    common: dict[str, Any] = {
        "feature_names": getattr(est, "feature_names_in_", None),
        "feature_ranges": None if ranges is None else ranges.to_dict(),
        "metric": {"name": est.metric_.name, "display_name": spec_display_name(est.metric_)},
        "saved_by": "MetroClassifier.save",
    }
    if averaged:
        from metro.multiclass import delivers_offsets, stacked_model

        multiclass = est.target_type_ != "multilabel-indicator"
        manifest = {
            **common,
            "average": est.average_,
            "classes": list(est.classes_),
            "decision": "argmax" if multiclass else "per_label",
            "multiclass": est.multiclass_ if multiclass else None,
            "class_lambdas": est.lambdas_,  # None for a multinomial model: it has no lambda
            "class_thresholds": est.thresholds_,
            "offsets": est.offsets_ if delivers_offsets(est) else None,
            "decision_rule": est.decision_rule_,
            "best_score": est.best_score_,
            "warnings": [{"code": w.code, "message": w.message} for w in est.warnings_],
            **_constraints_manifest(est),
        }
        return save_model(target, stacked_model(est), manifest=manifest, onnx=onnx)
    manifest = {
        **common,
        "labels": {"positive": est.pos_label_, "negative": est._negative_label},
        "threshold": 0.0,  # est.threshold_ is folded into the model's last bias
        "tuned_threshold": est.threshold_,
        "trained_lambda": est.best_lambda_,
        "lambda_star": est.lambda_star_,
        "best_score": est.best_score_,
        "n_folds": est.n_splits_,
        "warnings": [{"code": w.code, "message": w.message} for w in est.warnings_],
        **_constraints_manifest(est),
    }
    return save_model(target, est.model_, manifest=manifest, onnx=onnx)


def _constraints_manifest(est: MetroClassifier) -> dict[str, Any]:
    """Under constraints, what the file says of them, as a job's model says it: each
    constraint as given and named, its held-out value where the search chose
    (``selection_value``; with ``average``, ``class_constraints`` holds each label's), and
    whether they held there. Nothing told a reader of the file that the model was trained
    under a floor."""
    constraints = getattr(est, "constraints_", None)
    if not constraints:
        return {}
    averaged = getattr(est, "average_", None) is not None
    values = np.asarray(est.constraint_values_, dtype=np.float64)
    described = [{**c.to_dict(), "name": c.name} for c in constraints]
    if not averaged:
        return {
            "constraints": [
                {**d, "selection_value": _finite(values[i])} for i, d in enumerate(described)
            ],
            "constraints_satisfied": bool(est.constraints_satisfied_),
        }
    return {
        "constraints": described,
        "constraints_satisfied": bool(est.constraints_satisfied_),
        "class_constraints": [
            {
                "label": label,
                "selection_values": [_finite(v) for v in row],
                "satisfied": satisfied,
            }
            for label, row, satisfied in zip(
                est.classes_.tolist(), values, est.class_constraints_satisfied_, strict=True
            )
        ],
    }


def _finite(value: Any) -> float | None:
    number = float(value)
    return number if np.isfinite(number) else None


class SavedClassifier:
    """A saved METRO classifier, read back to predict as the estimator that saved it did.

    Attributes: ``classes_`` (binary: the two labels, sorted as scikit-learn sorts them;
    several: the classes or labels in the model's order), ``pos_label_`` (binary),
    ``n_features_in_``, ``feature_names_in_`` (where it was fitted on named columns),
    ``feature_ranges_`` (each feature's training min and max, a
    :class:`~metro.ranges.FeatureRanges`; None for an image model or a file saved before
    ranges were kept), ``manifest_`` and ``model_`` (the :class:`~metro.models.StackedModel`).

    :meth:`out_of_range` says which columns of X lie outside those ranges. ``predict`` and
    ``decision_function`` say nothing of it unless ``warn_out_of_range`` is set (then a
    :class:`~metro.ranges.FeatureRangeWarning` per call that has such values): scikit-learn's
    estimators do not warn on extrapolation, new data past a training max is often legitimate
    (this month's largest invoice), and Python shows a warning once per line of code by
    default, so a per-call warning would be noise in a notebook and silent in a loop.
    """

    def __init__(
        self, model: StackedModel, manifest: dict[str, Any], *, warn_out_of_range: bool = False
    ) -> None:
        self.model_ = model
        self.manifest_ = manifest
        self.n_features_in_ = int(manifest["n_features"])
        self.warn_out_of_range = bool(warn_out_of_range)
        names = manifest.get("feature_names")
        if names is not None:
            self.feature_names_in_ = np.asarray(names, dtype=object)
        # A file saved before ranges were kept has none: read as it is, with no check. Damaged
        # ones (another width) are not the model's either: the ranges only inform, so the
        # model still predicts, without the check, and says so once, here (it refused to load).
        self.feature_ranges_: FeatureRanges | None = None
        try:
            self.feature_ranges_ = FeatureRanges.of_manifest(manifest)
        except ValueError as exc:
            warnings.warn(
                f"the manifest's feature_ranges are unreadable ({exc}): the model predicts "
                "without the range check (out_of_range says None)",
                UserWarning,
                stacklevel=3,
            )
        self._threshold = float(manifest.get("threshold") or 0.0)
        self._decision: str | None = manifest.get("decision")
        if manifest.get("classes") is not None:
            self.classes_ = label_array(manifest["classes"])
        else:
            labels = manifest["labels"]  # load_classifier checked it
            self.pos_label_ = labels["positive"]
            self._negative_label = labels["negative"]
            # Sorted as scikit-learn sorts classes; text beside numbers cannot be sorted and
            # keeps the manifest's order (negative, positive).
            pair = label_array([self._negative_label, self.pos_label_])
            self.classes_ = pair if pair.dtype == object else np.unique(pair)

    def __repr__(self) -> str:
        what = "binary" if self._decision is None else self._decision
        return f"SavedClassifier({what}, classes={self.classes_.tolist()})"

    def _rows(self, X: Any) -> np.ndarray:
        names = getattr(self, "feature_names_in_", None)
        columns = getattr(X, "columns", None)
        if names is not None and columns is not None:
            given = [str(c) for c in columns]
            if given != list(names):
                raise ValueError(
                    f"X's columns {given[:10]} are not the ones the model was fitted on, in "
                    f"that order: {list(names)[:10]}"
                )
        try:
            rows = np.asarray(X, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            # "could not convert string to float: 'N/A'" named neither the column nor the row
            raise ValueError(f"X is not numeric: {_first_bad_cell(X, names) or exc}") from None
        shape = tuple(self.model_.input_shape)
        if rows.ndim == 1 or tuple(rows.shape[1:]) != shape:
            raise ValueError(
                f"X has rows of shape {tuple(rows.shape[1:]) or '()'}; the model takes {shape}"
            )
        bad = ~np.isfinite(rows)
        if bad.any():
            where = first_flagged_cell(bad, None if names is None else list(names))
            raise ValueError(
                f"X contains {int(bad.sum())} NaN or infinite values (first at {where}): fill "
                "or drop them first; the model was trained on none"
            )
        return rows

    def _scores(self, X: Any) -> np.ndarray:
        from metro.trainer import predict_scores, require_defined_scores

        rows = self._rows(X)
        if self.warn_out_of_range:
            report = self._range_report(rows)
            if report:
                warnings.warn(FeatureRangeWarning(report.message()), stacklevel=3)
        return require_defined_scores(predict_scores(self.model_, rows, device="cpu"))

    def out_of_range(self, X: Any, *, max_columns: int = 5) -> RangeReport | None:
        """Which columns of ``X`` hold values outside the model's training ranges, and in how
        many rows (:func:`metro.ranges.out_of_range`, the ``max_columns`` with most rows);
        None where the model has no ranges (an image model, or a file saved without them).
        A range check, not a test of distribution shift."""
        return self._range_report(self._rows(X), max_columns=max_columns)

    def _range_report(self, rows: np.ndarray, *, max_columns: int = 5) -> RangeReport | None:
        if self.feature_ranges_ is None or rows.ndim != 2:
            return None
        names = getattr(self, "feature_names_in_", None)
        return out_of_range(
            rows,
            self.feature_ranges_,
            feature_names=None if names is None else list(names),
            max_columns=max_columns,
        )

    def margin(self, X: Any) -> np.ndarray:
        """h(x) of a binary model (``>= threshold``: the positive label), or the n x K scores
        of a model of several classes or labels."""
        scores = self._scores(X)
        return scores[:, 0] if self._decision is None else scores

    def decision_function(self, X: Any) -> np.ndarray:
        """As :meth:`MetroClassifier.decision_function`: positive means ``classes_[1]``."""
        if self._decision is not None:
            return self._scores(X)
        h = self.margin(X) - self._threshold
        return h if self.pos_label_ == self.classes_[1] else -h

    def predict(self, X: Any) -> np.ndarray:
        scores = self._scores(X)
        if self._decision == "per_label":
            return (scores >= 0).astype(np.int64)
        if self._decision == "argmax":
            return self.classes_[np.argmax(scores, axis=1)]
        positive = scores[:, 0] >= self._threshold
        return _labels_of(positive, self.pos_label_, self._negative_label)


def _first_bad_cell(X: Any, names: Any) -> str | None:
    """Where a table's first value that is not a number is: its column (by name where the
    model has names) and row, and the value."""
    frame = np.asarray(X, dtype=object)
    if frame.ndim != 2:
        return None
    for i, row in enumerate(frame):
        for j, value in enumerate(row):
            try:
                float(value)
            except (TypeError, ValueError):
                column = repr(str(names[j])) if names is not None and j < len(names) else str(j)
                return f"column {column}, row {i} holds {value!r}"
    return None


def _labels_of(positive: np.ndarray, pos_label: Any, neg_label: Any) -> np.ndarray:
    """The label of each row, decided positive or not, typed as :func:`label_array` types the
    two (np.where could not mix 9 and "not 9": DTypePromotionError)."""
    return label_array([neg_label, pos_label])[positive.astype(np.intp)]


def load_classifier(
    target: str | os.PathLike[str],
    *,
    expected_sha256: str | None = None,
    warn_out_of_range: bool = False,
) -> SavedClassifier:
    """Read a model saved by :meth:`MetroClassifier.save` (or downloaded from the service), its
    weights checked against the manifest's digest (and ``expected_sha256`` when given).
    ``warn_out_of_range``: ``predict`` and ``decision_function`` issue a
    :class:`~metro.ranges.FeatureRangeWarning` where X holds values outside the training
    ranges (:meth:`SavedClassifier.out_of_range` says it on request either way)."""
    model, manifest = load_model(target, expected_sha256=expected_sha256)
    _check_decision(manifest)
    try:
        return SavedClassifier(model, manifest, warn_out_of_range=warn_out_of_range)
    except ValueError as exc:
        raise ModelFormatError(f"the manifest is not a saved model's: {exc}") from None


def _check_decision(manifest: dict[str, Any]) -> None:
    """What ``predict`` reads from the manifest, refused when it is not there as it was
    written: empty labels read as 1 and 0, and a threshold given as text failed in int()."""
    classes = manifest.get("classes")
    if classes is not None:
        if manifest.get("decision") not in DECISIONS or not isinstance(classes, list):
            raise ModelFormatError("the manifest's classes and decision are not a saved model's")
        return
    labels = manifest.get("labels")
    if not isinstance(labels, dict) or set(labels) != {"positive", "negative"}:
        raise ModelFormatError("the manifest names no labels (positive and negative)")
    if labels["positive"] == labels["negative"]:
        raise ModelFormatError("the manifest's positive and negative labels are the same")
    threshold = manifest.get("threshold", 0.0)
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        raise ModelFormatError(f"the manifest's threshold is not a number: {threshold!r}")
