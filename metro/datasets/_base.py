"""The shape every data source ends as, and the errors a user is shown about their data.

A :class:`Dataset` holds float32 features, tabular ``(n, d)`` or channels-first images
``(n, C, H, W)``, and int64 labels in {0, 1} where 1 is the class whose metric is optimised;
:class:`TableShape` is what inspecting a file learns without loading it. The message helpers
live here, next to :class:`DataError`, so that every module quotes values and parser errors the
same way.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, Self

import numpy as np

_MAX_SHOWN_VALUES = 5  # label values quoted in a message
MAX_SHOWN_COLUMNS = 10  # column names quoted in a message
_MAX_REASON_CHARS = 200  # of a parser's own error message

#: What each reader returns: features, raw labels, feature names or None.
Loaded = tuple[np.ndarray, np.ndarray, "tuple[str, ...] | None"]


class DataError(ValueError):
    """A problem with the user's data, with a message written for that user.

    A subclass of ``ValueError`` so that library callers need not know about it, and a distinct
    class so that the service can tell "your file is wrong" (a 4xx) from a bug (a 5xx).
    """

    def reworded(self, message: str) -> Self:
        """This error with another message: the same class and attributes, whatever its
        constructor asks (``type(exc)(message)`` failed for :class:`ClassCountError`, whose
        TypeError became a job's failure_reason)."""
        new = type(self).__new__(type(self), message)
        new.__dict__.update(self.__dict__)
        return new


class ClassCountError(DataError):
    """Binary labels that are not two classes; ``n_classes`` says how many there are (more
    than two: what an averaged fit, not a binary one, reads)."""

    def __init__(self, message: str, *, n_classes: int) -> None:
        super().__init__(message)
        self.n_classes = n_classes


class LabelColumnError(DataError):
    """A label column the caller named is not in the data: the name (``label_column``) is at
    fault, not the file."""


class DataLimitError(DataError):
    """The data are larger than a limit the caller set (rows, columns, decompressed bytes).

    Raised as soon as the limit is passed, before the rest of the file is read, so that a small
    compressed file that expands to gigabytes costs no more than the limit. A distinct class so
    that a service can answer "too large" rather than "malformed".
    """


# --------------------------------------------------------------------------------------------------
# Containers


@dataclass(frozen=True, eq=False)
class Dataset:
    """Features and binary labels, together with what is needed to explain them to the user.

    ``eq=False`` because element-wise array comparison has no single truth value; compare the
    arrays themselves. The constructor converts ``X``/``y`` to float32/int64 so that every model
    sees one dtype, and checks the invariants that the loaders guarantee, so that a hand-built
    Dataset cannot silently break them.
    """

    X: np.ndarray
    y: np.ndarray
    feature_names: tuple[str, ...] | None
    positive_label: Any
    negative_label: Any
    source: str

    def __post_init__(self) -> None:
        X = np.asarray(self.X, dtype=np.float32)
        y = np.asarray(self.y, dtype=np.int64)
        if X.ndim not in (2, 4):
            raise ValueError(f"X must be (n, d) or (n, C, H, W), got shape {X.shape}")
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise ValueError(f"y must have shape ({X.shape[0]},), got {y.shape}")
        if y.size and not np.isin(y, (0, 1)).all():
            raise ValueError("y must contain only 0 and 1")
        names = self.feature_names
        if names is not None:
            names = tuple(str(name) for name in names)
            if X.ndim != 2 or len(names) != X.shape[1]:
                raise ValueError(f"{len(names)} feature names for X of shape {X.shape}")
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "feature_names", names)

    @property
    def n_samples(self) -> int:
        return int(self.X.shape[0])

    @cached_property
    def content_sha256(self) -> str:
        """The SHA-256 of what a model is trained on: the shapes, the features and the labels as
        0/1 (with the two label values they stand for), not where they were read from. Two loads
        of one file give the same digest; a file changed in any value gives another. Computed
        once per Dataset (its arrays are not changed after construction): a worker's cached load
        is hashed once however often its attempts and helpers compare it."""
        digest = hashlib.sha256()
        header = json.dumps(
            {
                "X": list(self.X.shape),
                "y": list(self.y.shape),
                "labels": [repr(self.negative_label), repr(self.positive_label)],
                "features": list(self.feature_names) if self.feature_names is not None else None,
            },
            sort_keys=True,
        )
        digest.update(header.encode())
        # Hashed in place (a C-contiguous array is a buffer): no copy of a large X.
        digest.update(np.ascontiguousarray(self.X, dtype="<f4").data)
        digest.update(np.ascontiguousarray(self.y, dtype="<i8").data)
        return digest.hexdigest()

    @property
    def n_features(self) -> int:
        """Input size of a flat model: images count every pixel of every channel."""
        return math.prod(self.X.shape[1:])

    @property
    def is_image(self) -> bool:
        return self.X.ndim == 4

    @property
    def n_positives(self) -> int:
        return int(self.y.sum())

    @property
    def positive_fraction(self) -> float:
        """The prior of the positive class; 0.0 for an empty subset rather than a division error."""
        return self.n_positives / self.n_samples if self.n_samples else 0.0


def subset(ds: Dataset, idx: Any) -> Dataset:
    """The rows ``idx`` of ``ds`` (integer indices or a boolean mask), labels kept aligned.

    Negative indices are refused rather than wrapped around: they would come from an off-by-one
    bug, never from a split.
    """
    index = np.asarray(idx)
    if index.dtype == bool:
        if index.shape != (ds.n_samples,):
            raise ValueError(f"boolean mask of shape {index.shape} for {ds.n_samples} rows")
        index = np.flatnonzero(index)
    elif index.size == 0:
        index = np.zeros(0, dtype=np.int64)
    elif index.dtype.kind not in "iu" or index.ndim != 1:
        raise TypeError("idx must be a one-dimensional array of integer indices or a boolean mask")
    if index.size and (index.min() < 0 or index.max() >= ds.n_samples):
        raise IndexError(
            f"indices must be in [0, {ds.n_samples}), got {index.min()}..{index.max()}"
        )
    return replace(ds, X=ds.X[index], y=ds.y[index])


@dataclass(frozen=True)
class TableShape:
    """What :func:`inspect_file` learns of a file: rows, input features, and column names
    (``None`` for NPZ, whose arrays have no names a job could refer to)."""

    n_rows: int
    n_columns: int
    columns: tuple[str, ...] | None


# --------------------------------------------------------------------------------------------------
# Messages


def python_scalar(value: Any) -> Any:
    """A JSON-friendly python value: numpy scalars become int/float/str/bool."""
    return value.item() if isinstance(value, np.generic) else value


def show_values(values: Sequence[Any], limit: int = _MAX_SHOWN_VALUES) -> str:
    """``values`` as a message quotes them: the first ``limit``, then an ellipsis."""
    shown = ", ".join(repr(v) for v in values[:limit])
    return f"[{shown}, ...]" if len(values) > limit else f"[{shown}]"


# What a table in another encoding (Excel's "Unicode text" is UTF-16) is told to do.
NOT_UTF8 = "the file is not UTF-8 text (from a spreadsheet, save it as CSV UTF-8)"


def parser_reason(exc: BaseException, real: str, given: str) -> str:
    """The parser's own explanation, shortened, with no trace of the resolved path."""
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else type(exc).__name__
    if isinstance(exc, UnicodeDecodeError):
        text = NOT_UTF8
    text = text.replace(real, given)
    return text if len(text) <= _MAX_REASON_CHARS else text[: _MAX_REASON_CHARS - 3] + "..."
