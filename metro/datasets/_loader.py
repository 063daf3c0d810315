"""The two entry points: :func:`load_dataset` (a uri to a validated :class:`Dataset`) and
:func:`inspect_file` (a file's shape within the same limits, without loading it).

Each checks the caller's arguments, turns the uri into a file the request may read, and hands it
to the reader of its format; only here are the readers, the built-in sets, the labels and the
float32 features brought together.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from metro.datasets._base import DataError, Dataset, TableShape
from metro.datasets._builtin import load_builtin
from metro.datasets._csv import csv_shape, read_csv
from metro.datasets._labels import parse_labels
from metro.datasets._limits import check_rows, limits_of
from metro.datasets._npz import npz_shape, read_npz
from metro.datasets._parquet import parquet_shape, read_parquet
from metro.datasets._paths import check_uri, resolve_path
from metro.datasets._table import check_ignore_columns

#: File extensions understood by :func:`load_dataset`, as shown in error messages.
FORMATS = (".csv", ".csv.gz", ".parquet", ".npz")


def _format_of(path: str) -> str:
    name = Path(path).name.lower()
    if name.endswith(".csv.gz"):
        return ".csv.gz"
    suffix = Path(name).suffix
    if suffix == ".pq":
        return ".parquet"
    if suffix in (".csv", ".parquet", ".npz"):
        return suffix
    shown = f"'{suffix}'" if suffix else "(no file extension)"
    raise DataError(f"unknown format {shown}; expected one of {', '.join(FORMATS)}")


# A column whose float32 cast moves some value by more than this share of the column's standard
# deviation has lost what tells its rows apart (a Unix time over ten minutes: 128-second steps
# against a spread of 173 s). Rounding to steps of 2 err adds noise of err / sqrt(3): at a tenth
# of the spread, 6% of it, which a model does not feel; a GPS latitude within 10 m (rounding at
# 2% of its spread) and a day of Unix seconds (0.3%) pass. A constant column has nothing to
# lose, whatever float32 makes of its one value.
FLOAT32_ROUNDING_LIMIT = 0.1
# Rows a chunk when comparing a column with its float32 cast (bounds the float64 copies).
_PRECISION_CHUNK_ROWS = 65_536


def check_float32_precision(
    X: np.ndarray, X32: np.ndarray | None = None, feature_names: Sequence[str] | None = None
) -> None:
    """Refuse tabular features that float32, which every model computes in, cannot hold apart.

    Values far from zero that vary little (a Unix time in seconds: 1.7e9, where float32's steps
    are 128) collapse to a few distinct values when cast, and the model's own standardization
    comes after the cast, too late to save them; the fit would then run on what is left and
    deliver a classifier that ignores the column without saying so. A column is refused when the
    cast moves a value by more than ``FLOAT32_ROUNDING_LIMIT`` of its standard deviation; the
    message names it and the constant to subtract (or the scale to apply) before training.
    Integer and float64 tables are checked; float32 ones and images have nothing to lose.
    """
    if X.ndim != 2 or X.shape[0] == 0 or X.dtype.itemsize <= 2 or X.dtype == np.float32:
        return
    if X.dtype.kind not in "iuf":
        return
    if X32 is None:
        X32 = np.asarray(X, dtype=np.float32)
    n, d = X.shape
    origin = X[0].astype(np.float64)
    shifted_sum = np.zeros(d)
    shifted_squares = np.zeros(d)
    worst = np.zeros(d)
    for start in range(0, n, _PRECISION_CHUNK_ROWS):
        block = X[start : start + _PRECISION_CHUNK_ROWS].astype(np.float64)
        rounded = X32[start : start + _PRECISION_CHUNK_ROWS].astype(np.float64)
        np.maximum(worst, np.abs(rounded - block).max(axis=0), out=worst)
        block -= origin  # shifted by the first row: no cancellation in the variance
        shifted_sum += block.sum(axis=0)
        shifted_squares += (block * block).sum(axis=0)
    mean_shift = shifted_sum / n
    std = np.sqrt(np.maximum(shifted_squares / n - mean_shift * mean_shift, 0.0))
    lost = np.flatnonzero((std > 0) & (worst > FLOAT32_ROUNDING_LIMIT * std))
    if lost.size == 0:
        return
    j = int(lost[0])
    where = f"column '{feature_names[j]}'" if feature_names is not None else f"column {j}"
    others = f" ({lost.size - 1} more column(s) likewise)" if lost.size > 1 else ""
    centre = float(origin[j] + mean_shift[j])
    raise DataError(
        f"{where} cannot be held in float32, which the models compute in, without losing what "
        f"tells its rows apart: its values lie near {centre:.6g} and vary by {std[j]:.3g} "
        f"(standard deviation), while float32 rounds them by up to {worst[j]:.3g}{others}; "
        f"subtract a constant near its values (its mean, {centre:.12g}, say) or rescale it "
        "before training, and the same from the rows you predict"
    )


def first_flagged_cell(bad: np.ndarray, feature_names: Sequence[str] | None) -> str:
    """Where the first True of ``bad`` (rows x features, or images) is, as an error names it:
    "row 5, column 'amount'" (its index without names), "row 2, channel 0, pixel (3, 4)"."""
    first = np.unravel_index(int(np.argmax(bad)), bad.shape)
    if bad.ndim == 2:
        col = int(first[1])
        where = f"column '{feature_names[col]}'" if feature_names else f"column {col}"
    else:
        where = "channel {}, pixel ({}, {})".format(*(int(i) for i in first[1:]))
    return f"row {int(first[0])}, {where}"


def float32_features(X: Any, feature_names: Sequence[str] | None = None) -> np.ndarray:
    """``X`` as the float32 array the models train on: refused, with the location, where a value
    is NaN, infinite or too large for float32, and by :func:`check_float32_precision` where the
    cast loses what tells a column's rows apart.

    Refused rather than imputed: how to fill a gap is a modelling decision the user should make,
    and a NaN reaching the optimiser turns every weight into NaN without saying why.
    """
    X = np.asarray(X)
    feature_names = None if feature_names is None else tuple(str(n) for n in feature_names)
    with np.errstate(over="ignore", invalid="ignore"):
        X32 = np.asarray(X, dtype=np.float32)
    bad = ~np.isfinite(X32)
    n_bad = int(bad.sum())
    if not n_bad:
        check_float32_precision(X, X32, feature_names)
        return X32
    n_overflow = 0
    if X.dtype.kind == "f" and X.dtype.itemsize > 4:
        n_overflow = int((bad & np.isfinite(X)).sum())
    too_large = f", {n_overflow} of them too large for float32" if n_overflow else ""
    missing = int(np.isnan(X32).sum())
    hint = (
        f"; {missing} of them missing (an empty cell, NA): fill the gaps or drop those rows "
        "first, as you decide (a model cannot train on a gap)"
        if missing
        else ""
    )
    raise DataError(
        f"features contain {n_bad} NaN or infinite values{too_large} (first at "
        f"{first_flagged_cell(bad, feature_names)}){hint}"
    )


# Rows below which a column of distinct integers is not judged an id: on a few rows any count
# or code can be distinct.
ID_LIKE_MIN_ROWS = 50


def id_like_features(X: Any, feature_names: Sequence[str] | None = None) -> list[str]:
    """The features of a table that look like an id or a row number: integers, a different one
    on every row, and either filling a range at most twice the rows (1000, 1001, ... or 1 to n
    with gaps) or named as an id (``txn_id``, ``customerId``, ``ID``, ``uuid``: ids sampled
    from a wider range, as an extract's transaction ids are, filled no range and were trained
    on without a word). A model reads the rows' order from such a column, which in a file
    sorted by date or by label is a leak (an id sorted with the label scored F1 1.0 on held-out
    and test rows); a measured feature (a price, a count) is rarely distinct on every row of a
    dense range, or named so."""
    X = np.asarray(X)
    if X.ndim != 2 or X.shape[0] < ID_LIKE_MIN_ROWS:
        return []
    n = X.shape[0]
    found = []
    for j in range(X.shape[1]):
        column = X[:, j].astype(np.float64)
        if not np.all(np.isfinite(column)) or not np.all(column == np.round(column)):
            continue
        name = str(feature_names[j]) if feature_names is not None else None
        low, high = float(column.min()), float(column.max())
        dense = high - low + 1 <= 2 * n
        if not (dense or (name is not None and _named_as_id(name))):
            continue
        if np.unique(column).size != n:
            continue
        found.append(name if name is not None else f"column {j}")
    return found


# A column named as an identifier: "id", "txn_id", "customer-id", "row.id", "customerId",
# "CustomerID", "sample_ids", "id_customer", "uuid", "guid", "idx" (not "paid", "valid" or
# "acid": the "id" is a word of its own, after or before a separator, or a lower-case letter's
# capital; run-together "userid" is not told from "paid").
_ID_WORD = re.compile(r"(?:^|[_\s.\-])(?:ids?|uuid|guid|idx)$", re.IGNORECASE)
_ID_FIRST = re.compile(r"^(?:id|uuid|guid)[_\s.\-]", re.IGNORECASE)  # id_customer, ID_code
_ID_CAMEL = re.compile(r"[a-z0-9](?:Ids?|IDs?)$")


def _named_as_id(name: str) -> bool:
    name = name.strip()
    return bool(_ID_WORD.search(name) or _ID_FIRST.search(name) or _ID_CAMEL.search(name))


def refuse_ignore_columns(ignore_columns: Sequence[str], what: str) -> None:
    """``ignore_columns`` name columns of a table; ``what`` has none to name."""
    if ignore_columns:
        raise DataError(
            f"ignore_columns names columns of a CSV or Parquet table; {what} has no named "
            "columns to leave out"
        )


def inspect_file(
    uri: str,
    *,
    data_roots: Sequence[str | os.PathLike[str]] | None = None,
    max_rows: int | None = None,
    max_columns: int | None = None,
    max_decompressed_bytes: int | None = None,
) -> TableShape:
    """The shape of a data file without a label column to load it by, within the same limits as
    :func:`load_dataset` and refused with the same errors (unique column names included).

    Memory stays bounded by the limits: a CSV is counted in chunks, Parquet and NPZ are judged
    by their metadata, and no array is loaded.
    """
    check_uri(uri, data_roots)
    limits = limits_of(max_rows, max_columns, max_decompressed_bytes)
    given, real = resolve_path(uri, data_roots)
    fmt = _format_of(given)
    if fmt in (".csv", ".csv.gz"):
        return csv_shape(real, given, fmt, limits)
    if fmt == ".parquet":
        return parquet_shape(real, given, limits)
    return npz_shape(real, given, limits)


def load_dataset(
    uri: str,
    *,
    label_column: str = "y",
    positive_label: Any = None,
    data_roots: Sequence[str | os.PathLike[str]] | None = None,
    max_rows: int | None = None,
    max_columns: int | None = None,
    max_decompressed_bytes: int | None = None,
    ignore_columns: Sequence[str] = (),
) -> Dataset:
    """Load ``uri`` (a path, ``file://`` or ``builtin://`` uri) as a validated binary Dataset.

    Every column of a CSV or Parquet table but the label is a feature, except the
    ``ignore_columns`` (an id, a note, a date: left out, whatever they hold).

    ``data_roots`` is the service's sandbox: when given, only files whose real path lies under
    one of them may be read (``None`` means no restriction, for library use; built-ins need no
    file and are always allowed). ``max_rows``, ``max_columns`` and ``max_decompressed_bytes``
    (what a CSV, gzip, Parquet or NPZ file holds once decompressed) bound the work and memory
    one request can cause: each is checked from the file's metadata before it is read where the
    format has it, else while it is streamed, and passing one raises :class:`DataLimitError`.
    Column names must be unique. Rows of error messages are counted from 0, excluding the header.
    """
    check_uri(uri, data_roots)
    if not isinstance(label_column, str):
        raise TypeError(f"label_column must be a string, got {type(label_column).__name__}")
    limits = limits_of(max_rows, max_columns, max_decompressed_bytes)
    ignore_columns = check_ignore_columns(ignore_columns, [label_column])

    if uri.lower().startswith("builtin://"):
        refuse_ignore_columns(ignore_columns, "a built-in data set")
        (X, raw_y, names), default_positive = load_builtin(uri, max_rows)
        if positive_label is None:
            positive_label = default_positive
    else:
        given, real = resolve_path(uri, data_roots)
        fmt = _format_of(given)
        if fmt in (".csv", ".csv.gz"):
            X, raw_y, names = read_csv(real, given, fmt, label_column, limits, ignore_columns)
        elif fmt == ".parquet":
            X, raw_y, names = read_parquet(real, given, label_column, limits, ignore_columns)
        else:
            refuse_ignore_columns(ignore_columns, "an NPZ file")
            X, raw_y, names = read_npz(real, given, limits)

    check_rows(int(X.shape[0]), max_rows)
    X32 = float32_features(X, names)
    y, positive, negative = parse_labels(raw_y, positive_label=positive_label)
    return Dataset(
        X=X32,
        y=y,
        feature_names=names,
        positive_label=positive,
        negative_label=negative,
        source=uri,
    )
