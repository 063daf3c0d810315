"""Data with more than one target: a multi-class label column (one class per row, C >= 2) or
several 0/1 label columns (multi-label), for the averaged metrics of :mod:`metro.multiclass`.

:class:`MultiTargetDataset` is the binary :class:`~metro.datasets.Dataset`'s sibling: the same
float32 features, read by the same readers within the same limits, with ``y`` holding class
indices ``(n,)`` into ``classes`` (multi-class) or an ``(n, L)`` 0/1 matrix whose columns are the
labels named in ``classes`` (multi-label). Classes are ordered as :func:`parse_classes` sorts them
(numbers before text), so the same file always gives the same class indices.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

import numpy as np
import pandas as pd

from metro.datasets._base import DataError, Loaded, python_scalar, show_values
from metro.datasets._builtin import load_builtin
from metro.datasets._csv import read_csv
from metro.datasets._labels import check_label_spellings, parse_labels, sort_key
from metro.datasets._limits import Limits, check_rows, limits_of
from metro.datasets._loader import _format_of, float32_features, refuse_ignore_columns
from metro.datasets._npz import read_npz
from metro.datasets._parquet import read_parquet
from metro.datasets._paths import check_uri, resolve_path
from metro.datasets._table import check_ignore_columns

#: At most this many classes (or labels): each is a whole lambda search.
MAX_CLASSES = 100
#: Each class (label) needs this many positive and negative rows to train and choose on.
MIN_CLASS_ROWS = 2

Target = Literal["multiclass", "multilabel"]


@dataclass(frozen=True, eq=False)
class MultiTargetDataset:
    """Features and several targets. ``target`` is ``"multiclass"`` (``y``: class indices in
    ``[0, len(classes))``) or ``"multilabel"`` (``y``: ``n x L`` of 0/1, label ``j`` named
    ``classes[j]``)."""

    X: np.ndarray
    y: np.ndarray
    classes: tuple[Any, ...]
    target: Target
    feature_names: tuple[str, ...] | None
    source: str

    def __post_init__(self) -> None:
        X = np.asarray(self.X, dtype=np.float32)
        y = np.asarray(self.y, dtype=np.int64)
        if X.ndim not in (2, 4):
            raise ValueError(f"X must be (n, d) or (n, C, H, W), got shape {X.shape}")
        if self.target == "multiclass":
            if y.ndim != 1 or y.shape[0] != X.shape[0]:
                raise ValueError(f"y must have shape ({X.shape[0]},), got {y.shape}")
            if y.size and (y.min() < 0 or y.max() >= len(self.classes)):
                raise ValueError("y must hold class indices in [0, len(classes))")
        elif self.target == "multilabel":
            if y.ndim != 2 or y.shape != (X.shape[0], len(self.classes)):
                raise ValueError(f"y must have shape ({X.shape[0]}, {len(self.classes)})")
            if y.size and not np.isin(y, (0, 1)).all():
                raise ValueError("a multi-label y must contain only 0 and 1")
        else:
            raise ValueError(f"target must be 'multiclass' or 'multilabel', got {self.target!r}")
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "classes", tuple(python_scalar(c) for c in self.classes))

    @property
    def n_samples(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    @property
    def indicators(self) -> np.ndarray:
        """``n x C`` of 0/1: row i is in class (has label) c."""
        if self.target == "multilabel":
            return self.y
        return np.asarray(np.eye(self.n_classes, dtype=np.int64)[self.y])

    @cached_property
    def content_sha256(self) -> str:
        """The SHA-256 of what a model is trained on (as :attr:`Dataset.content_sha256`): the
        shapes, the classes, the features and the targets, not where they were read from."""
        digest = hashlib.sha256()
        header = json.dumps(
            {
                "X": list(self.X.shape),
                "y": list(self.y.shape),
                "target": self.target,
                "classes": [repr(c) for c in self.classes],
                "features": list(self.feature_names) if self.feature_names is not None else None,
            },
            sort_keys=True,
        )
        digest.update(header.encode())
        digest.update(np.ascontiguousarray(self.X, dtype="<f4").data)
        digest.update(np.ascontiguousarray(self.y, dtype="<i8").data)
        return digest.hexdigest()


def _check_counts(
    positives: np.ndarray, names: Sequence[Any], what: str, n: int, remedy: str
) -> None:
    for name, k in zip(names, positives.tolist(), strict=True):
        if k < MIN_CLASS_ROWS or n - k < MIN_CLASS_ROWS:
            side, count = ("positive", k) if k < MIN_CLASS_ROWS else ("negative", n - k)
            raise DataError(
                f"{what} {name!r} has {int(count)} {side} row(s); each {what} needs at least "
                f"{MIN_CLASS_ROWS} positive and {MIN_CLASS_ROWS} negative rows to train and "
                f"choose on; {remedy.format(name=name)}"
            )


def parse_classes(raw: np.ndarray | Sequence[Any]) -> tuple[np.ndarray, tuple[Any, ...]]:
    """A multi-class label column as class indices and its classes (sorted: numbers before
    text); missing labels refused, 2 to :data:`MAX_CLASSES` classes, each with at least
    :data:`MIN_CLASS_ROWS` rows in and out of it."""
    arr = raw.to_numpy() if isinstance(raw, pd.Series) else np.asarray(raw)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise DataError(f"labels must be one-dimensional, got shape {arr.shape}")
    missing = ~np.isfinite(arr) if arr.dtype.kind == "f" else np.asarray(pd.isna(arr), dtype=bool)
    if missing.any():
        raise DataError(
            f"labels contain {int(missing.sum())} missing or non-finite values "
            f"(first at row {int(np.argmax(missing))})"
        )
    codes, uniques = pd.factorize(arr)
    found = [python_scalar(u) for u in uniques]
    check_label_spellings(found)
    if len(found) < 2:
        raise DataError(f"labels must have at least two classes; found {show_values(found)}")
    if len(found) > MAX_CLASSES:
        raise DataError(
            f"labels have {len(found)} classes, more than the limit of {MAX_CLASSES} "
            "(each class is a lambda search of its own)"
        )
    order = sorted(range(len(found)), key=lambda i: sort_key(found[i]))
    rank = np.empty(len(found), dtype=np.int64)
    rank[order] = np.arange(len(found))
    y = rank[np.asarray(codes)]
    classes = tuple(found[i] for i in order)
    _check_counts(
        np.bincount(y, minlength=len(classes)), classes, "class", int(y.size),
        "add rows to class {name!r}, or merge it into another class",
    )  # fmt: skip
    return y, classes


def parse_label_matrix(raw: np.ndarray, names: Sequence[str]) -> np.ndarray:
    """Several label columns as an ``n x L`` 0/1 matrix: each column's two values read as
    :func:`parse_labels` reads a binary label ({0, 1}, {-1, 1}, booleans), each with at least
    :data:`MIN_CLASS_ROWS` rows on either side."""
    arr = np.asarray(raw)
    if arr.ndim != 2 or arr.shape[1] != len(names):
        raise DataError(f"expected {len(names)} label columns, got shape {arr.shape}")
    columns = []
    for j, name in enumerate(names):
        try:
            y, _, _ = parse_labels(arr[:, j])
        except DataError as exc:
            column = pd.Series(arr[:, j])
            if column.isna().any():  # parse_labels names the missing rows
                raise DataError(f"label column '{name}': {exc}") from None
            # Its own words asked for a positive_label or an average, which a job that
            # already averages over label columns cannot give.
            values = sorted(pd.unique(column.to_numpy(dtype=object)), key=sort_key)
            if len(values) == 1:
                # Refused rather than trained around: a label's search needs rows on both
                # sides, and with no positives its F1 and precision are 0/0, which sklearn
                # fills with zero_division (0 or 1): a convention, not the model, would move
                # a macro average by 1/L.
                raise DataError(
                    f"label column '{name}' holds the one value {values[0]!r} on all "
                    f"{len(column)} rows: a label every row has, or none has, tells no rows "
                    "apart: its search has no rows on one side to train on (and where no row "
                    f"has it, its F1 and precision are 0/0); leave '{name}' out of label_columns"
                ) from None
            raise DataError(
                f"label column '{name}' must hold 0 and 1 (or -1 and 1, false and true): one "
                f"column per label, 1 where a row has it; it holds {show_values(values)}"
            ) from None
        columns.append(y)
    Y = np.column_stack(columns).astype(np.int64)
    _check_counts(
        Y.sum(axis=0), list(names), "label", int(Y.shape[0]),
        "add rows of each side, or leave '{name}' out of label_columns",
    )  # fmt: skip
    return Y


def check_label_columns(names: Sequence[str]) -> None:
    """Refuse label columns a multi-label load cannot take: a repeated one, more than
    :data:`MAX_CLASSES`, or a single one (binary data). The API checks a job by this too."""
    repeated = [name for name, count in Counter(names).items() if count > 1]
    if repeated:
        raise DataError(
            f"label_columns must not repeat a column; {show_values(repeated)} appear(s) more "
            "than once"
        )
    if len(names) > MAX_CLASSES:
        raise DataError(f"{len(names)} label columns is more than the limit of {MAX_CLASSES}")
    if len(names) < 2:
        raise DataError(
            "label_columns names one column: one 0/1 column is binary data (give it as "
            "label_column, with positive_label, and no average)"
        )


def load_multi_target(
    uri: str,
    *,
    label_column: str = "y",
    label_columns: Sequence[str] | None = None,
    data_roots: Sequence[str | os.PathLike[str]] | None = None,
    max_rows: int | None = None,
    max_columns: int | None = None,
    max_decompressed_bytes: int | None = None,
    ignore_columns: Sequence[str] = (),
) -> MultiTargetDataset:
    """Load ``uri`` as a :class:`MultiTargetDataset`: multi-class from ``label_column``, or
    multi-label from ``label_columns`` (2 to :data:`MAX_CLASSES` distinct columns of a CSV or
    Parquet table, or labels of an NPZ's 2-D ``y``, named by its ``label_names`` array or by
    index). The file is read exactly as :func:`~metro.datasets.load_dataset` reads it, within
    the same sandbox and limits. An NPZ's 1-D ``y`` is a multi-class label array; a built-in
    set's labels are its classes (``builtin://digits`` without ``positive``: the ten digits)."""
    check_uri(uri, data_roots)
    if label_columns is not None:
        names = list(label_columns)
        if not names or not all(isinstance(n, str) for n in names):
            raise TypeError("label_columns must be a non-empty list of column names")
        check_label_columns(names)
    elif not isinstance(label_column, str):
        raise TypeError(f"label_column must be a string, got {type(label_column).__name__}")
    limits = limits_of(max_rows, max_columns, max_decompressed_bytes)
    wanted: str | list[str] = label_column if label_columns is None else list(label_columns)
    ignore_columns = check_ignore_columns(
        ignore_columns, [wanted] if isinstance(wanted, str) else wanted
    )
    X, raw_y, feature_names = _read(uri, wanted, data_roots, limits, max_rows, ignore_columns)
    check_rows(int(X.shape[0]), max_rows)
    X32 = float32_features(X, feature_names)
    if label_columns is None:
        try:
            y, classes = parse_classes(raw_y)
        except DataError as exc:
            if "at least two classes" not in str(exc):
                raise
            # Its own words do not say which column, nor that an average needs classes.
            raise DataError(
                f"label column '{label_column}': {exc}; an average is taken over the classes "
                "of the label column: name one that holds two classes or more"
            ) from None
        return MultiTargetDataset(
            X=X32, y=y, classes=classes, target="multiclass", feature_names=feature_names,
            source=uri,
        )  # fmt: skip
    Y = parse_label_matrix(raw_y, list(label_columns))
    return MultiTargetDataset(
        X=X32, y=Y, classes=tuple(label_columns), target="multilabel",
        feature_names=feature_names, source=uri,
    )  # fmt: skip


def _read(
    uri: str,
    wanted: str | list[str],
    data_roots: Sequence[str | os.PathLike[str]] | None,
    limits: Limits,
    max_rows: int | None,
    ignore_columns: Sequence[str] = (),
) -> Loaded:
    """The features and raw labels of ``uri`` by the reader of its kind; ``wanted``: the label
    column, or the label columns (a table only)."""
    several = not isinstance(wanted, str)
    if uri.lower().startswith("builtin://"):
        if several:
            raise DataError("a built-in data set has one label column; label_columns needs a table")
        refuse_ignore_columns(ignore_columns, "a built-in data set")
        loaded, _ = load_builtin(uri, max_rows, all_classes=True)
        return loaded
    given, real = resolve_path(uri, data_roots)
    fmt = _format_of(given)
    if fmt in (".csv", ".csv.gz"):
        return read_csv(real, given, fmt, wanted, limits, ignore_columns)
    if fmt == ".parquet":
        return read_parquet(real, given, wanted, limits, ignore_columns)
    refuse_ignore_columns(ignore_columns, "an NPZ file")
    return read_npz(real, given, limits, labels=list(wanted) if several else None)


def stratify_key(dataset: MultiTargetDataset) -> np.ndarray:
    """What a split of ``dataset`` stratifies on: :func:`strata` of its class indicators."""
    return strata(dataset.indicators)


def strata(indicators: np.ndarray) -> np.ndarray:
    """The stratum of each row of an ``n x C`` 0/1 matrix: its class (one-hot rows), or its
    rarest label (multi-label), so that every label keeps rows on each side of a split; -1 for
    a row with none."""
    Y = np.asarray(indicators)
    frequency = Y.sum(axis=0).astype(np.float64)
    rarest = np.where(Y == 1, frequency[None, :], math.inf)
    return np.where(np.isfinite(rarest.min(axis=1)), np.argmin(rarest, axis=1), -1)
