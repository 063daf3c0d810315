"""Averaged per-class and per-label metrics, from the confusion matrix.

The per-class (or per-label) cells ``(tp, fp, fn, tn)`` of class ``c`` are its one-vs-rest cells,
each class's ratio metric is the binary preset on them, and ``average`` is the ``average`` of
``sklearn.metrics.f1_score``:

* ``"macro"``: the unweighted mean of the per-class metrics;
* ``"weighted"``: their mean weighted by each class's support (its number of true rows);
* ``"micro"``: the metric of the cells summed over the classes (pooled). For multi-label data this
  couples the labels (each label's threshold moves the pooled ratio every label is judged by);
  for multi-class data every wrong row is one false positive and one false negative, so micro
  F-beta, precision and recall are the accuracy, and micro Jaccard is acc / (2 - acc).

``"samples"`` (a per-row metric, averaged over the rows) is refused: it is no ratio of the
confusion cells. What is trained for each average is in :mod:`metro.multiclass`; the argmax's
offsets in :mod:`metro.argmax`, a multi-label micro average's per-label offsets in
:mod:`metro.label_offsets`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from metro.metrics import MetricSpec

__all__ = [
    "AVERAGES",
    "PER_LABEL_METRICS",
    "averaged_score",
    "check_average",
    "class_cells",
    "label_cells",
    "per_class_scores",
    "sklearn_average",
]

AVERAGES: tuple[str, ...] = ("macro", "weighted", "micro")
# Presets that are a ratio of one class's cells and that sklearn averages over classes.
PER_LABEL_METRICS: tuple[str, ...] = ("f1", "f_beta", "jaccard", "precision", "recall")


def class_cells(y_true: Any, y_pred: Any, n_classes: int) -> np.ndarray:
    """Per-class one-vs-rest counts ``[C, 4]`` (tp, fp, fn, tn) of class indices in [0, C)."""
    t = np.asarray(y_true, dtype=np.int64).ravel()
    p = np.asarray(y_pred, dtype=np.int64).ravel()
    if t.shape != p.shape:
        raise ValueError(f"y_true has {t.size} labels but y_pred has {p.size}")
    cm = np.bincount(t * n_classes + p, minlength=n_classes * n_classes).reshape(
        n_classes, n_classes
    )  # rows: true, columns: predicted
    tp = np.diag(cm)
    fp = cm.sum(axis=0) - tp
    fn = cm.sum(axis=1) - tp
    tn = t.size - tp - fp - fn
    return np.stack([tp, fp, fn, tn], axis=1).astype(np.float64)


def label_cells(Y_true: Any, Y_pred: Any) -> np.ndarray:
    """Per-label counts ``[L, 4]`` (tp, fp, fn, tn) of two ``n x L`` indicator matrices."""
    t = np.asarray(Y_true).astype(bool)
    p = np.asarray(Y_pred).astype(bool)
    if t.shape != p.shape or t.ndim != 2:
        raise ValueError(f"Y_true {t.shape} and Y_pred {p.shape} must be equal n x L matrices")
    tp = (t & p).sum(axis=0)
    fp = (~t & p).sum(axis=0)
    fn = (t & ~p).sum(axis=0)
    tn = t.shape[0] - tp - fp - fn
    return np.stack([tp, fp, fn, tn], axis=1).astype(np.float64)


def per_class_scores(spec: MetricSpec, cells: np.ndarray) -> np.ndarray:
    """The metric (natural orientation) of every row of ``cells [..., 4]`` (counts or fractions);
    0/0 scores the spec's ``zero_division``, as in ``sklearn.metrics``."""
    return spec.scores_of_cells(cells)


def _weights(cells: np.ndarray, average: str) -> np.ndarray:
    n_classes = cells.shape[-2]
    if average == "macro":
        return np.full(n_classes, 1.0 / n_classes)
    if average == "weighted":
        support = cells[..., 0] + cells[..., 2]  # tp + fn: the true rows of each class
        total = support.sum(axis=-1, keepdims=True)
        # No true row of any class: sklearn's weighted mean falls back to the plain mean.
        return np.asarray(
            np.where(total > 0, support / np.where(total > 0, total, 1.0), 1.0 / n_classes)
        )
    raise ValueError(_average_message(average))


def averaged_score(spec: MetricSpec, cells: np.ndarray, average: str) -> float | np.ndarray:
    """The ``average`` of the per-class metrics of ``cells [..., C, 4]`` (``"micro"``: the
    metric of their sum over the classes)."""
    cells = np.asarray(cells, dtype=np.float64)
    if average == "micro":
        pooled = per_class_scores(spec, cells.sum(axis=-2))
        return float(pooled) if np.ndim(pooled) == 0 else np.asarray(pooled)
    scores = per_class_scores(spec, cells)
    out = np.sum(scores * _weights(cells, average), axis=-1)
    return float(out) if np.ndim(out) == 0 else np.asarray(out)


def sklearn_average(
    spec: MetricSpec, cells: np.ndarray, average: str, *, target: str = "multiclass"
) -> float:
    """The ``average`` of the per-class metrics of ``cells [C, 4]`` over the classes
    ``sklearn.metrics`` averages: for a multi-class target, those present in the true or the
    predicted labels (a class with no row and no prediction is left out, as sklearn does);
    every label for a multi-label one."""
    cells = np.asarray(cells, dtype=np.float64)
    if target == "multiclass":
        cells = cells[cells[:, 0] + cells[:, 1] + cells[:, 2] > 0]
    return float(averaged_score(spec, cells, average))


def _average_message(average: Any) -> str:
    return (
        f"average={average!r} is not supported; use one of {', '.join(map(repr, AVERAGES))} "
        "(or None for binary y). 'samples' is not trained for: a per-row metric averaged over "
        "the rows is no ratio of the confusion cells"
    )


def check_average(average: Any) -> str:
    if average not in AVERAGES:
        raise ValueError(_average_message(average))
    return str(average)
