"""Loading a user's data set into the one shape the rest of METRO trains on.

Every source (a CSV or Parquet table, an NPZ of arrays, a built-in scikit-learn data set) ends as a
:class:`Dataset`: float32 features, tabular ``(n, d)`` or channels-first images ``(n, C, H, W)``,
and int64 labels in {0, 1} where 1 is the class whose metric (F1, Jaccard, ...) is optimised. The
original label values are kept next to them so that results can be reported in the user's terms.

Data arrive from people, often through an HTTP form, so every problem with them raises
:class:`DataError` with a message meant to be shown as is: it names the column, row, value or
limit at fault and never shows a path other than the one the user gave. Mistakes by the calling
code (a bad ``max_rows``, fractions that do not add up) raise plain ``ValueError``/``TypeError``
instead, because a user cannot fix them.

This module is part of the pure algorithm library: it reads local files only and knows nothing of
the web service, the database or the task queue. Restricting which files a request may read is
done here anyway (``data_roots``), because only the code that opens the file can resolve symlinks
at the moment it opens it.
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import numbers
import os
import urllib.parse
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "BUILTIN_DATASETS",
    "FORMATS",
    "DataError",
    "DataLimitError",
    "Dataset",
    "Splits",
    "TableShape",
    "builtin_shape",
    "inspect_file",
    "load_dataset",
    "parse_labels",
    "split_indices",
    "split_sizes",
    "subset",
]

#: File extensions understood by :func:`load_dataset`, as shown in error messages.
FORMATS = (".csv", ".csv.gz", ".parquet", ".npz")
#: Names accepted after ``builtin://``.
BUILTIN_DATASETS = ("breast_cancer", "digits", "synthetic")

_MAX_SHOWN_VALUES = 5  # label values quoted in a message
_MAX_SHOWN_COLUMNS = 10  # column names quoted in a message
_MAX_REASON_CHARS = 200  # of a parser's own error message
# Generous caps on what ``builtin://synthetic`` may be asked to allocate, so that a request cannot
# exhaust the worker's memory before ``max_rows`` is even consulted.
_SYNTHETIC_MAX_SAMPLES = 10_000_000
_SYNTHETIC_MAX_FEATURES = 10_000
_SYNTHETIC_MAX_VALUES = 200_000_000
# What the header line of a CSV may take per allowed column, so that a header of a billion
# separators is refused after a bounded read instead of becoming a billion strings.
_HEADER_BYTES_PER_COLUMN = 256
_MIN_HEADER_BYTES = 1024 * 1024  # above pandas' read size, so a short header is never refused
_CSV_COUNT_CHUNK_ROWS = 100_000  # rows per chunk when only counting the rows of a CSV


class DataError(ValueError):
    """A problem with the user's data, with a message written for that user.

    A subclass of ``ValueError`` so that library callers need not know about it, and a distinct
    class so that the service can tell "your file is wrong" (a 4xx) from a bug (a 5xx).
    """


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


@dataclass(frozen=True, eq=False)
class Splits:
    """Row indices of three disjoint parts that together cover the data set.

    The validation part exists because METRO tunes a decision threshold (and early stopping) on
    data the model was not fitted on; the test part stays untouched until the final report.
    """

    train: np.ndarray
    validation: np.ndarray
    test: np.ndarray


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


# --------------------------------------------------------------------------------------------------
# Labels


def _scalar(value: Any) -> Any:
    """A JSON-friendly python value: numpy scalars become int/float/str/bool."""
    return value.item() if isinstance(value, np.generic) else value


def _sort_key(value: Any) -> tuple[int, Any]:
    """Orders classes of mixed types (e.g. ``9`` and ``"not 9"``) without a TypeError."""
    if isinstance(value, bool | int | float):
        return (0, float(value))
    if isinstance(value, str):
        return (1, value)
    return (2, repr(value))


def _show(values: Sequence[Any], limit: int = _MAX_SHOWN_VALUES) -> str:
    shown = ", ".join(repr(v) for v in values[:limit])
    return f"[{shown}, ...]" if len(values) > limit else f"[{shown}]"


def _as_number(value: Any) -> float | None:
    """The numeric reading of a label, so that ``"1"`` from an HTTP form matches a label ``1``."""
    if isinstance(value, bool | int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


def _default_positive(classes: list[Any]) -> Any | None:
    """The positive class when the labels themselves say which one it is, else None.

    Only encodings with an unambiguous "yes" qualify: {0, 1}, {-1, +1} and {False, True}, also
    spelled as strings as a CSV may hold them. For anything else ("cat"/"dog", 2/4) choosing
    silently would optimise the metric for the wrong class, so the user must say.
    """
    booleans = [_as_bool(c) for c in classes]
    if None not in booleans and set(booleans) == {False, True}:
        return classes[booleans.index(True)]
    numbers = [_as_number(c) for c in classes]
    if None not in numbers and set(numbers) in ({0.0, 1.0}, {-1.0, 1.0}):
        return classes[numbers.index(1.0)]
    return None


def _match_positive(positive_label: Any, classes: list[Any]) -> Any:
    if not isinstance(positive_label, str | bool | int | float | np.generic):
        kind = type(positive_label).__name__
        raise DataError(f"positive_label must be a string, number or boolean, got {kind}")
    wanted = _scalar(positive_label)
    exact = [c for c in classes if c == wanted and isinstance(c, bool) == isinstance(wanted, bool)]
    if exact:
        return exact[0]
    # Values typed differently from the labels: "1" for 1, 1 for "1", "true" for True.
    number, flag = _as_number(wanted), _as_bool(wanted)
    loose = [
        c
        for c in classes
        if (number is not None and _as_number(c) == number)
        or (flag is not None and _as_bool(c) is flag)
    ]
    if len(loose) == 1:
        return loose[0]
    if len(loose) > 1:
        raise DataError(f"positive_label {wanted!r} matches more than one label: {_show(loose)}")
    raise DataError(f"positive_label {wanted!r} is not one of the labels {_show(classes)}")


def parse_labels(
    raw: np.ndarray | Sequence[Any], *, positive_label: Any = None
) -> tuple[np.ndarray, Any, Any]:
    """Map arbitrary binary labels to {0, 1}; returns ``(y, positive_label, negative_label)``.

    The returned labels are the values as they occur in ``raw`` (as python scalars), not as the
    caller spelled them, so that a user who sent ``"1"`` sees ``1`` reported back consistently.
    Missing labels are refused rather than dropped: dropping rows would silently change the data
    the user thinks they trained on.
    """
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
    classes = [_scalar(u) for u in uniques]
    if len(classes) != 2:
        shown = sorted(classes, key=_sort_key)
        noun = "class" if len(classes) == 1 else "classes"
        raise DataError(
            f"labels must have exactly two classes; found {len(classes)} {noun}: {_show(shown)}"
        )
    if positive_label is None:
        positive = _default_positive(classes)
        if positive is None:
            raise DataError(
                "positive_label is required: the labels are "
                f"{_show(sorted(classes, key=_sort_key))}"
            )
    else:
        positive = _match_positive(positive_label, classes)
    pos_code = classes.index(positive)
    y = (np.asarray(codes) == pos_code).astype(np.int64)
    return y, positive, classes[1 - pos_code]


# --------------------------------------------------------------------------------------------------
# Splits


def _split_size(fraction: float, n: int) -> int:
    # Rounded up like scikit-learn's test_size, so that a non-zero fraction always gets a row; the
    # small tolerance keeps 0.3 * 10 = 3.0000000000000004 from becoming 4.
    return math.ceil(fraction * n - 1e-9) if fraction > 0 else 0


def split_sizes(
    n: int, *, validation_fraction: float = 0.25, test_fraction: float = 0.2
) -> tuple[int, int, int]:
    """The rows of the train, validation and test splits :func:`split_indices` makes of ``n``
    rows (the training split may come out empty or negative: split_indices refuses that)."""
    n_val = _split_size(validation_fraction, n)
    n_test = _split_size(test_fraction, n)
    return n - n_val - n_test, n_val, n_test


def _allocate_positives(sizes: list[int], n_pos: int, minimum: int, names: list[str]) -> list[int]:
    """How many positives each split gets: proportional, within one of each split's exact share.

    Largest-remainder rounding of the exact shares keeps every split's positive fraction as close
    to the overall one as whole rows allow. Only when that would leave a split short of
    ``minimum`` positives or negatives are single positives moved between splits, which
    succeeds exactly when some allocation satisfies the minimum.
    """
    n = sum(sizes)
    nonempty = [k for k, s in enumerate(sizes) if s > 0]
    label = "/".join(names[k] for k in nonempty)
    for k in nonempty:
        if sizes[k] < 2 * minimum:
            fix = (
                "smaller validation and test fractions"
                if names[k] == "train"
                else f"a larger {names[k]}_fraction"
            )
            raise DataError(
                f"the {names[k]} split would have {sizes[k]} rows, too few for at least "
                f"{minimum} positive and {minimum} negative rows; use {fix} or a smaller "
                "min_positives_per_split"
            )
    plural = "" if minimum == 1 else "s"
    if n_pos < minimum * len(nonempty):
        raise DataError(
            f"too few positives ({n_pos}) for a {label} split with at least {minimum} "
            f"positive{plural} in each split"
        )
    if n - n_pos < minimum * len(nonempty):
        raise DataError(
            f"too few negatives ({n - n_pos}) for a {label} split with at least {minimum} "
            f"negative{plural} in each split"
        )
    quotas = [s * n_pos / n for s in sizes]
    counts = [math.floor(q) for q in quotas]
    by_remainder = sorted(range(len(sizes)), key=lambda k: counts[k] - quotas[k])
    for k in by_remainder[: n_pos - sum(counts)]:
        counts[k] += 1
    lower = [minimum if s > 0 else 0 for s in sizes]
    upper = [s - lo for s, lo in zip(sizes, lower, strict=True)]
    for k in range(len(sizes)):
        while counts[k] < lower[k]:  # take a positive from the split with most to spare
            donor = max(
                (j for j in range(len(sizes)) if counts[j] > lower[j]),
                key=lambda j: counts[j] - quotas[j],
            )
            counts[donor] -= 1
            counts[k] += 1
        while counts[k] > upper[k]:  # too few negatives left: give a positive away
            taker = min(
                (j for j in range(len(sizes)) if counts[j] < upper[j]),
                key=lambda j: counts[j] - quotas[j],
            )
            counts[taker] += 1
            counts[k] -= 1
    return counts


def split_indices(
    y: np.ndarray,
    *,
    validation_fraction: float = 0.25,
    test_fraction: float = 0.2,
    random_state: int | None = None,
    min_positives_per_split: int = 1,
) -> Splits:
    """Stratified, seeded train/validation/test indices (sorted int64 arrays).

    Stratified because METRO's metrics live on the positive class: with 5% positives an
    unstratified split can leave a validation set with almost none, and the threshold tuned on it
    is noise. Implemented directly rather than with two calls to scikit-learn's
    ``train_test_split`` so that each split's positive count is within one row of its exact
    share (rounding twice can compound the error), and so that an infeasible request is reported
    with the numbers involved instead of scikit-learn's generic message. Fractions are of the
    whole data set; the training split gets the rest. ``min_positives_per_split`` applies to
    negatives as well, since a split with one class cannot score a threshold.
    """
    labels = np.asarray(y)
    if labels.ndim != 1:
        raise ValueError(f"y must be one-dimensional, got shape {labels.shape}")
    if labels.size and not np.isin(labels, (0, 1)).all():
        raise ValueError("y must contain only 0 and 1 (see parse_labels)")
    for name, fraction in (
        ("validation_fraction", validation_fraction),
        ("test_fraction", test_fraction),
    ):
        if not isinstance(fraction, numbers.Real) or not 0 <= fraction < 1:
            raise ValueError(f"{name} must be in [0, 1), got {fraction!r}")
    if validation_fraction + test_fraction >= 1:
        raise ValueError(
            f"validation_fraction + test_fraction must be below 1, got "
            f"{validation_fraction} + {test_fraction}"
        )
    if (
        isinstance(min_positives_per_split, bool)
        or not isinstance(min_positives_per_split, int)
        or min_positives_per_split < 0
    ):
        raise ValueError(
            f"min_positives_per_split must be a non-negative int, got {min_positives_per_split!r}"
        )
    n = int(labels.size)
    n_train, n_val, n_test = split_sizes(
        n, validation_fraction=validation_fraction, test_fraction=test_fraction
    )
    if n_train < 1:
        raise DataError(
            f"dataset has {n} rows, too few for a split with validation_fraction="
            f"{validation_fraction} and test_fraction={test_fraction}"
        )
    sizes = [n_train, n_val, n_test]
    positives = np.flatnonzero(labels == 1)
    negatives = np.flatnonzero(labels == 0)
    pos_counts = _allocate_positives(
        sizes, positives.size, min_positives_per_split, ["train", "validation", "test"]
    )
    neg_counts = [s - p for s, p in zip(sizes, pos_counts, strict=True)]

    rng = np.random.default_rng(random_state)
    positives = rng.permutation(positives)
    negatives = rng.permutation(negatives)
    parts = []
    pos_start = neg_start = 0
    for n_pos, n_neg in zip(pos_counts, neg_counts, strict=True):
        part = np.concatenate(
            [positives[pos_start : pos_start + n_pos], negatives[neg_start : neg_start + n_neg]]
        )
        parts.append(np.sort(part).astype(np.int64))
        pos_start += n_pos
        neg_start += n_neg
    return Splits(train=parts[0], validation=parts[1], test=parts[2])


# --------------------------------------------------------------------------------------------------
# Resolving a uri to a file


def _resolve_path(uri: str, data_roots: Sequence[str | os.PathLike[str]] | None) -> tuple[str, str]:
    """``(path as the user gave it, real path to open)``, enforcing ``data_roots``.

    The containment check uses the fully resolved path, so neither ``..`` nor a symlink planted
    inside a root can reach outside it, and it runs before the existence check, so that a request
    cannot probe which files exist elsewhere on the machine.
    """
    given = uri
    scheme = urllib.parse.urlsplit(uri).scheme.lower() if "://" in uri else ""
    if scheme == "file":
        parts = urllib.parse.urlsplit(uri)
        if parts.netloc not in ("", "localhost"):
            raise DataError(f"file URIs must be absolute, as in file:///data/train.csv; got {uri}")
        if parts.query or parts.fragment:
            raise DataError(f"file URIs take no query or fragment; got {uri}")
        given = urllib.parse.unquote(parts.path)
    elif scheme:
        raise DataError(
            f"unsupported URI scheme '{scheme}://'; expected a local path, file:// or builtin://"
        )
    if not given:
        raise DataError("the dataset path is empty")
    if "\x00" in given:  # no file has one; the operating system refuses to look it up
        raise DataError("the dataset path contains a NUL character")
    real = os.path.realpath(given)
    if data_roots is not None:
        allowed = False
        for root in data_roots:
            real_root = os.path.realpath(root)
            try:
                allowed = os.path.commonpath([real, real_root]) == real_root
            except ValueError:  # different drives on Windows
                allowed = False
            if allowed:
                break
        if not allowed:
            raise DataError(f"path is outside the allowed data roots: {given}")
    if not os.path.exists(real):
        raise DataError(f"file not found: {given}")
    if not os.path.isfile(real):
        raise DataError(f"not a regular file: {given}")
    return given, real


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


def _reason(exc: BaseException, real: str, given: str) -> str:
    """The parser's own explanation, shortened, with no trace of the resolved path."""
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else type(exc).__name__
    if isinstance(exc, UnicodeDecodeError):
        text = "the file is not UTF-8 text"
    text = text.replace(real, given)
    return text if len(text) <= _MAX_REASON_CHARS else text[: _MAX_REASON_CHARS - 3] + "..."


def _check_rows(n_rows: int, max_rows: int | None, *, at_least: bool = False) -> None:
    if n_rows == 0:
        raise DataError("dataset has no rows")
    if max_rows is not None and n_rows > max_rows:
        count = f"at least {n_rows}" if at_least else str(n_rows)
        raise DataLimitError(f"dataset has {count} rows, more than the limit {max_rows}")


@dataclass(frozen=True)
class _Limits:
    """What one read may take; ``None`` is no limit (library use)."""

    rows: int | None = None
    columns: int | None = None
    decompressed_bytes: int | None = None

    @property
    def header_bytes(self) -> int | None:
        """The longest CSV header read before giving up: room for every allowed column."""
        if self.columns is None:
            return self.decompressed_bytes
        budget = max(_MIN_HEADER_BYTES, self.columns * _HEADER_BYTES_PER_COLUMN)
        return budget if self.decompressed_bytes is None else min(budget, self.decompressed_bytes)


def _check_columns(names: Sequence[str], limits: _Limits) -> None:
    """Column count within the limit and names unique, in time linear in the number of names.

    Duplicates are refused rather than disambiguated: pandas renames a second ``y`` to ``y.1``,
    and a model trained with ``y.1`` as a feature reads the answer off a copy of the label.
    Empty names are left out, since readers give each its own placeholder name.
    """
    if limits.columns is not None and len(names) > limits.columns:
        raise DataLimitError(
            f"dataset has {len(names)} columns, more than the limit {limits.columns}"
        )
    counts = Counter(name for name in names if name != "")
    duplicated = sorted(name for name, count in counts.items() if count > 1)
    if duplicated:
        verb = "appears" if len(duplicated) == 1 else "appear"
        shown = ", ".join(repr(name) for name in duplicated[:_MAX_SHOWN_COLUMNS])
        more = ", ..." if len(duplicated) > _MAX_SHOWN_COLUMNS else ""
        raise DataError(f"column names must be unique; {shown}{more} {verb} more than once")


def _check_expanded_size(n_bytes: int, limits: _Limits) -> None:
    if limits.decompressed_bytes is not None and n_bytes > limits.decompressed_bytes:
        raise DataLimitError(
            f"dataset expands to {n_bytes} bytes, more than the limit "
            f"{limits.decompressed_bytes} bytes"
        )


class _BoundedReader(io.RawIOBase):
    """A binary stream that delivers at most ``limit`` bytes and raises :class:`DataLimitError`
    at the first byte past it, so a parser fed from it stops there whatever the file holds.

    ``exceeded`` records the refusal too, for a parser that wraps the exceptions of its source.
    """

    def __init__(self, raw: Any, *, limit: int | None, message: str) -> None:
        super().__init__()
        self._raw = raw
        self._limit = limit
        self._message = message
        self.delivered = 0
        self.exceeded = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = self._raw.readinto(buffer) or 0
        self.delivered += n
        if self._limit is not None and self.delivered > self._limit:
            self.exceeded = True
            raise DataLimitError(self._message)
        return n


# --------------------------------------------------------------------------------------------------
# Readers. Each returns (features, raw labels, feature names or None).

_Loaded = tuple[np.ndarray, np.ndarray, "tuple[str, ...] | None"]
_CSV_ERRORS = (ValueError, OSError, EOFError, pd.errors.ParserError, pd.errors.EmptyDataError)


def _read_csv_stream(
    real: str, fmt: str, limit: int | None, message: str, read: Callable[[Any], Any]
) -> Any:
    """``read`` applied to the file's decompressed bytes, refused past ``limit`` of them.

    Decompressing here rather than in pandas is what lets the limit count the bytes the parser
    sees, not the few on disk.
    """
    with open(real, "rb") as fh:
        source: Any = gzip.GzipFile(fileobj=fh, mode="rb") if fmt == ".csv.gz" else fh
        bounded = _BoundedReader(source, limit=limit, message=message)
        try:
            return read(io.BufferedReader(bounded))
        except DataLimitError:
            raise
        except Exception:
            if bounded.exceeded:
                raise DataLimitError(message) from None
            raise


def _csv_header(real: str, given: str, fmt: str, limits: _Limits) -> list[str]:
    """The column names exactly as written, before pandas renames duplicates (``y`` to ``y.1``).

    Read from the whole lines within a bounded prefix of the file (a first line longer than the
    prefix is refused unparsed), with the standard library's CSV reader: the same quoting rules
    as pandas' default dialect, and linear in the header's length whatever its width.
    """
    budget = limits.header_bytes

    def first_record(stream: Any) -> list[str]:
        if budget is None:  # no limit: read up to the first line break, however far
            head = b""
            while (chunk := stream.read(_MIN_HEADER_BYTES)) and b"\n" not in chunk:
                head += chunk
            head += chunk
        else:
            head = stream.read(budget + 1)
        if budget is not None and len(head) > budget:
            end = head.rfind(b"\n", 0, budget) + 1
            if end == 0:
                raise DataLimitError(f"the header of {given} is longer than {budget} bytes")
            head = head[:end]
        text = head.decode("utf-8-sig")  # a byte order mark is not part of the first name
        for record in csv.reader(io.StringIO(text, newline="")):
            if record:  # pandas skips blank lines before the header, so does this
                return record
        raise DataError(f"could not read {given} as CSV: the file has no header line")

    try:
        names: list[str] = _read_csv_stream(real, fmt, None, "", first_record)
    except DataError:
        raise
    except (*_CSV_ERRORS, csv.Error) as exc:
        raise DataError(f"could not read {given} as CSV: {_reason(exc, real, given)}") from None
    _check_columns(names, limits)
    return names


def _read_csv(real: str, given: str, fmt: str, label_column: str, limits: _Limits) -> _Loaded:
    _csv_header(real, given, fmt, limits)
    # Reads one row past the limit, so an oversized upload is refused without parsing all of it.
    nrows = None if limits.rows is None else limits.rows + 1
    message = f"dataset expands to more than the limit {limits.decompressed_bytes} bytes"
    try:
        frame = _read_csv_stream(
            real, fmt, limits.decompressed_bytes, message,
            lambda stream: pd.read_csv(stream, nrows=nrows, low_memory=False),
        )  # fmt: skip
    except DataError:
        raise
    except _CSV_ERRORS as exc:
        raise DataError(f"could not read {given} as CSV: {_reason(exc, real, given)}") from None
    _check_rows(len(frame), limits.rows, at_least=True)
    return _from_table(frame, label_column)


def _count_csv_rows(real: str, given: str, fmt: str, limits: _Limits) -> int:
    """Rows of a CSV, read in chunks and refused as soon as they pass the limit."""
    message = f"dataset expands to more than the limit {limits.decompressed_bytes} bytes"

    nrows = None if limits.rows is None else limits.rows + 1  # one past the limit, as _read_csv
    chunk_rows = _CSV_COUNT_CHUNK_ROWS if nrows is None else min(nrows, _CSV_COUNT_CHUNK_ROWS)

    def count(stream: Any) -> int:
        n_rows = 0
        with pd.read_csv(stream, chunksize=chunk_rows, nrows=nrows, low_memory=False) as chunks:
            for chunk in chunks:
                n_rows += len(chunk)
                _check_rows(n_rows, limits.rows, at_least=True)
        return n_rows

    try:
        return _read_csv_stream(real, fmt, limits.decompressed_bytes, message, count)
    except DataError:
        raise
    except _CSV_ERRORS as exc:
        raise DataError(f"could not read {given} as CSV: {_reason(exc, real, given)}") from None


def _open_parquet(fh: Any, limits: _Limits) -> Any:
    """The ParquetFile, once its footer shows it within the limits; nothing else is read yet."""
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(fh)
    meta = parquet.metadata
    _check_columns([str(name) for name in parquet.schema_arrow.names], limits)
    _check_rows(meta.num_rows, limits.rows)
    _check_expanded_size(
        sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups)), limits
    )
    return parquet


def _read_parquet(real: str, given: str, label_column: str, limits: _Limits) -> _Loaded:
    import pyarrow as pa

    try:
        with open(real, "rb") as fh:
            frame = _open_parquet(fh, limits).read().to_pandas()
    except DataError:
        raise
    except (ValueError, OSError, pa.ArrowException) as exc:
        raise DataError(f"could not read {given} as Parquet: {_reason(exc, real, given)}") from None
    return _from_table(frame, label_column)


def _from_table(frame: pd.DataFrame, label_column: str) -> _Loaded:
    columns = [str(c) for c in frame.columns]
    frame.columns = pd.Index(columns)
    if label_column not in columns:
        extra = f" ({len(columns)} in total)" if len(columns) > _MAX_SHOWN_COLUMNS else ""
        raise DataError(
            f"label column '{label_column}' not found; columns are "
            f"{_show(columns, _MAX_SHOWN_COLUMNS)}{extra}"
        )
    _check_columns(columns, _Limits())
    features = [c for c in columns if c != label_column]
    if not features:
        raise DataError(
            f"no feature columns: the table holds only the label column '{label_column}'"
        )
    values = []
    for name in features:
        column = frame[name]
        if pd.api.types.is_bool_dtype(column) or (
            pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_complex_dtype(column)
        ):
            values.append(column.to_numpy(dtype=np.float64, na_value=np.nan))
            continue
        # Object columns whose every value is a number (Decimals, booleans with gaps, numeric
        # strings) are still numeric data; anything else is a mistake worth naming.
        numeric = pd.to_numeric(column, errors="coerce")
        bad = column[numeric.isna() & column.notna()]
        if len(bad) or pd.api.types.is_complex_dtype(numeric):
            example = f" (e.g. value {_scalar(bad.iloc[0])!r})" if len(bad) else ""
            raise DataError(f"feature column '{name}' is not numeric{example}")
        values.append(numeric.to_numpy(dtype=np.float64, na_value=np.nan))
    X = np.column_stack(values)
    return X, frame[label_column].to_numpy(), tuple(features)


def _npz_array_shape(archive: Any, name: str) -> tuple[int, ...]:
    """The shape an .npy member declares in its header, read without loading the array."""
    with archive.zip.open(f"{name}.npy") as member:
        version = np.lib.format.read_magic(member)
        read_header = (
            np.lib.format.read_array_header_1_0
            if version == (1, 0)
            else np.lib.format.read_array_header_2_0
        )
        shape, _, _ = read_header(member)
    return tuple(int(n) for n in shape)


def _check_npz_x(shape: tuple[int, ...], limits: _Limits) -> None:
    """Rows and (for a table) columns of X as declared, before a byte of it is decompressed."""
    if shape:
        _check_rows(shape[0], limits.rows)
    if len(shape) == 2 and limits.columns is not None and shape[1] > limits.columns:
        raise DataLimitError(
            f"dataset has {shape[1]} columns, more than the limit {limits.columns}"
        )


def _open_npz(fh: Any, limits: _Limits) -> Any:
    """``np.load`` of the archive, once the sizes its members declare are within the limits.

    The zip directory states each member's decompressed size and the zip reader never delivers
    more than that, so the sum bounds what loading can allocate, however well it compresses.
    """
    import zipfile

    with zipfile.ZipFile(fh) as directory:
        _check_expanded_size(sum(info.file_size for info in directory.infolist()), limits)
    fh.seek(0)
    # allow_pickle=False: an uploaded pickle would run arbitrary code when loaded.
    return np.load(fh, allow_pickle=False)


def _read_npz(real: str, given: str, limits: _Limits) -> _Loaded:
    import zipfile

    def fail(reason: str) -> DataError:
        return DataError(f"could not read {given} as NPZ: {reason}")

    try:
        with open(real, "rb") as fh:
            # np.load treats any unrecognised content as a pickle; say "not an archive" instead.
            if fh.read(4)[:2] != b"PK":
                raise fail("the file is not a zip archive of .npy arrays")
            fh.seek(0)
            with _open_npz(fh, limits) as archive:
                names = list(archive.files)
                if "X" not in names or "y" not in names:
                    raise DataError(
                        f"npz file must contain arrays 'X' and 'y'; found {_show(names, 10)}"
                    )
                _check_npz_x(_npz_array_shape(archive, "X"), limits)
                y = archive["y"]  # small, and its length lets an oversized X be refused unread
                if y.ndim == 2 and y.shape[1] == 1:
                    y = y[:, 0]
                if y.ndim != 1:
                    raise DataError(f"array 'y' must be one-dimensional, got shape {y.shape}")
                _check_rows(int(y.shape[0]), limits.rows)
                X = archive["X"]
                raw_names = archive["feature_names"] if "feature_names" in names else None
    except DataError:
        raise
    except ValueError as exc:
        if "allow_pickle" in str(exc):
            raise fail(
                "arrays of Python objects are not accepted, only numbers and strings"
            ) from None
        raise fail(_reason(exc, real, given)) from None
    except (OSError, EOFError, zipfile.BadZipFile, KeyError) as exc:
        raise fail(_reason(exc, real, given)) from None

    if X.dtype.kind not in "biuf":
        raise DataError(f"array 'X' must be numeric, got dtype {X.dtype}")
    if X.ndim not in (2, 3, 4):
        raise DataError(
            "array 'X' must have 2 (rows, features), 3 (N, H, W) or 4 (images) dimensions, "
            f"got shape {X.shape}"
        )
    if X.shape[0] != y.shape[0]:
        raise DataError(f"X has {X.shape[0]} rows but y has {y.shape[0]}")
    if X.ndim == 3:
        X = X[:, None, :, :]
    elif X.ndim == 4 and X.shape[3] in (1, 3, 4) and X.shape[1] not in (1, 3, 4):
        # Channels-last (NHWC, as PIL/TensorFlow write them); the models are channels-first.
        X = np.ascontiguousarray(X.transpose(0, 3, 1, 2))
    feature_names = None
    if raw_names is not None:
        if X.ndim != 2:
            raise DataError("feature_names is only supported for tabular X (rows, features)")
        if raw_names.dtype.kind not in "US" or raw_names.shape != (X.shape[1],):
            raise DataError(
                f"feature_names must be {X.shape[1]} strings, one per column of X; "
                f"got shape {raw_names.shape} of dtype {raw_names.dtype}"
            )
        feature_names = tuple(
            n.decode("utf-8", "replace") if isinstance(n, bytes) else str(n)
            for n in raw_names.tolist()
        )
        _check_columns(feature_names, _Limits())
    return X, y, feature_names


# --------------------------------------------------------------------------------------------------
# Built-in data sets


def _builtin(uri: str, max_rows: int | None) -> tuple[_Loaded, Any]:
    """Returns the loaded arrays and the default positive label of a ``builtin://`` uri."""
    name, params = _builtin_params(uri)
    reader, _ = _BUILTINS[name]
    return reader(params, max_rows)


def builtin_shape(uri: str) -> tuple[int, tuple[int, ...]]:
    """The rows of a ``builtin://`` data set and the shape of one example, without generating
    a synthetic one (its size is in its parameters); DataError as :func:`load_dataset` for a bad
    uri."""
    name, params = _builtin_params(uri)
    if name == "synthetic":
        n_samples, n_features, _, _ = _synthetic_params(params, max_rows=None)
        return n_samples, (n_features,)
    reader, _ = _BUILTINS[name]
    (X, _, _), _ = reader(params, None)  # the two small sets load in milliseconds
    return int(X.shape[0]), tuple(int(v) for v in X.shape[1:])


def _builtin_params(uri: str) -> tuple[str, dict[str, str]]:
    """The name and parameters of a ``builtin://`` uri, checked against what that set takes."""
    parts = urllib.parse.urlsplit(uri)
    name = parts.netloc
    if parts.path not in ("", "/") or parts.fragment:
        raise DataError(f"malformed builtin uri {uri!r}; expected builtin://NAME?key=value&...")
    if name not in _BUILTINS:
        raise DataError(
            f"unknown builtin dataset '{name}'; expected one of {', '.join(BUILTIN_DATASETS)}"
        )
    params: dict[str, str] = {}
    for key, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=True):
        if key in params:
            raise DataError(f"builtin://{name}: parameter '{key}' is given twice")
        params[key] = value
    _, allowed = _BUILTINS[name]
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        valid = ", ".join(allowed) if allowed else "none"
        raise DataError(
            f"builtin://{name}: unknown parameter '{unknown[0]}'; valid parameters: {valid}"
        )
    return name, params


def _int_param(
    name: str, params: dict[str, str], key: str, default: int | None, low: int, high: int
) -> int:
    text = params.get(key)
    if text is None:
        if default is None:
            raise DataError(f"builtin://{name} needs the parameter '{key}'")
        return default
    try:
        value = int(text)
    except ValueError:
        raise DataError(f"builtin://{name}: {key} must be an integer, got '{text}'") from None
    if not low <= value <= high:
        raise DataError(f"builtin://{name}: {key} must be between {low} and {high}, got {value}")
    return value


def _bool_param(name: str, params: dict[str, str], key: str) -> bool:
    text = params.get(key, "false").strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no", ""):
        return False
    raise DataError(f"builtin://{name}: {key} must be true or false, got '{params[key]}'")


def _breast_cancer(params: dict[str, str], max_rows: int | None) -> tuple[_Loaded, Any]:
    """Malignant is the positive class although scikit-learn codes it 0.

    It is the class a screening metric is about (recall on malignant tumours is what matters),
    and it is the minority (212 of 569), which is where F1-type objectives differ from accuracy.
    Labels are kept as the names, so ``positive_label="benign"`` still works.
    """
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer()
    labels = np.asarray(data.target_names)[data.target]
    names = tuple(str(n) for n in data.feature_names)
    return (data.data, labels, names), "malignant"


def _digits(params: dict[str, str], max_rows: int | None) -> tuple[_Loaded, Any]:
    """One digit against the rest, or against one other digit (the other rows dropped)."""
    from sklearn.datasets import load_digits

    positive = _int_param("digits", params, "positive", None, 0, 9)
    negative = None
    if "negative" in params:
        negative = _int_param("digits", params, "negative", None, 0, 9)
        if negative == positive:
            raise DataError(f"builtin://digits: negative must differ from positive ({positive})")
    as_images = _bool_param("digits", params, "as_images")
    data = load_digits()
    X, target = data.data, data.target
    if negative is None:
        labels = np.full(target.shape, f"not {positive}", dtype=object)
        labels[target == positive] = positive
    else:
        keep = np.isin(target, (positive, negative))
        X, labels = X[keep], target[keep]
    names = None if as_images else tuple(str(n) for n in data.feature_names)
    if as_images:
        X = X.reshape(-1, 1, 8, 8)
    return (X, labels, names), positive


def _synthetic(params: dict[str, str], max_rows: int | None) -> tuple[_Loaded, Any]:
    """An imbalanced problem of chosen size, for trying METRO without any data of one's own."""
    from sklearn.datasets import make_classification

    n_samples, n_features, seed, fraction = _synthetic_params(params, max_rows=max_rows)
    n_informative = max(2, n_features // 2)
    X, y = make_classification(
        n_samples=n_samples,
        n_features=n_features,
        n_informative=n_informative,
        # scikit-learn's default of 2 redundant features does not fit when n_features is tiny.
        n_redundant=min(2, n_features - n_informative),
        n_repeated=0,
        weights=[1 - fraction, fraction],
        flip_y=0.01,
        class_sep=1.0,
        random_state=seed,
    )
    return (X, y, tuple(f"x{i}" for i in range(n_features))), 1


def _synthetic_params(
    params: dict[str, str], *, max_rows: int | None
) -> tuple[int, int, int, float]:
    """(n_samples, n_features, seed, positive_fraction) of ``builtin://synthetic``, checked."""
    name = "synthetic"
    n_samples = _int_param(name, params, "n_samples", 2000, 1, _SYNTHETIC_MAX_SAMPLES)
    n_features = _int_param(name, params, "n_features", 20, 2, _SYNTHETIC_MAX_FEATURES)
    seed = _int_param(name, params, "seed", 0, 0, 2**32 - 1)
    text = params.get("positive_fraction", "0.05")
    try:
        fraction = float(text)
    except ValueError:
        raise DataError(
            f"builtin://{name}: positive_fraction must be a number, got '{text}'"
        ) from None
    if not 0 < fraction < 1:
        raise DataError(
            f"builtin://{name}: positive_fraction must be strictly between 0 and 1, got {text}"
        )
    if n_samples * n_features > _SYNTHETIC_MAX_VALUES:
        raise DataError(
            f"builtin://{name}: n_samples * n_features must be at most {_SYNTHETIC_MAX_VALUES}"
        )
    _check_rows(n_samples, max_rows)  # before generating, not after
    return n_samples, n_features, seed, fraction


_BUILTINS: dict[
    str, tuple[Callable[[dict[str, str], int | None], tuple[_Loaded, Any]], tuple[str, ...]]
] = {
    "breast_cancer": (_breast_cancer, ()),
    "digits": (_digits, ("positive", "negative", "as_images")),
    "synthetic": (_synthetic, ("n_samples", "n_features", "positive_fraction", "seed")),
}


# --------------------------------------------------------------------------------------------------
# Entry point


def _float32_features(X: np.ndarray, feature_names: tuple[str, ...] | None) -> np.ndarray:
    """Cast to float32, refusing NaN/inf (and values float32 cannot hold) with their location.

    Refused rather than imputed: how to fill a gap is a modelling decision the user should make,
    and a NaN reaching the optimiser turns every weight into NaN without saying why.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        X32 = np.asarray(X, dtype=np.float32)
    bad = ~np.isfinite(X32)
    n_bad = int(bad.sum())
    if not n_bad:
        return X32
    first = np.unravel_index(int(np.argmax(bad)), bad.shape)
    row = int(first[0])
    if X32.ndim == 2:
        col = int(first[1])
        where = f"column '{feature_names[col]}'" if feature_names else f"column {col}"
    else:
        where = "channel {}, pixel ({}, {})".format(*(int(i) for i in first[1:]))
    n_overflow = 0
    if X.dtype.kind == "f" and X.dtype.itemsize > 4:
        n_overflow = int((bad & np.isfinite(X)).sum())
    too_large = f", {n_overflow} of them too large for float32" if n_overflow else ""
    raise DataError(
        f"features contain {n_bad} NaN or infinite values{too_large} (first at row {row}, {where})"
    )


def _limits(max_rows: Any, max_columns: Any, max_decompressed_bytes: Any) -> _Limits:
    for name, value in (
        ("max_rows", max_rows),
        ("max_columns", max_columns),
        ("max_decompressed_bytes", max_decompressed_bytes),
    ):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            raise ValueError(f"{name} must be a positive int or None, got {value!r}")
    return _Limits(rows=max_rows, columns=max_columns, decompressed_bytes=max_decompressed_bytes)


def _check_uri(uri: Any, data_roots: Any) -> None:
    if not isinstance(uri, str):
        raise TypeError(f"uri must be a string, got {type(uri).__name__}")
    if isinstance(data_roots, str | os.PathLike):
        raise TypeError("data_roots must be a sequence of paths, not a single path")
    if not uri.strip():
        raise DataError("the dataset uri is empty")


@dataclass(frozen=True)
class TableShape:
    """What :func:`inspect_file` learns of a file: rows, input features, and column names
    (``None`` for NPZ, whose arrays have no names a job could refer to)."""

    n_rows: int
    n_columns: int
    columns: tuple[str, ...] | None


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
    _check_uri(uri, data_roots)
    limits = _limits(max_rows, max_columns, max_decompressed_bytes)
    given, real = _resolve_path(uri, data_roots)
    fmt = _format_of(given)
    if fmt in (".csv", ".csv.gz"):
        names = _csv_header(real, given, fmt, limits)
        n_rows = _count_csv_rows(real, given, fmt, limits)
        return TableShape(n_rows=n_rows, n_columns=len(names), columns=tuple(names))
    if fmt == ".parquet":
        import pyarrow as pa

        try:
            with open(real, "rb") as fh:
                parquet = _open_parquet(fh, limits)
                names = [str(name) for name in parquet.schema_arrow.names]
                n_rows = int(parquet.metadata.num_rows)
        except DataError:
            raise
        except (ValueError, OSError, pa.ArrowException) as exc:
            raise DataError(
                f"could not read {given} as Parquet: {_reason(exc, real, given)}"
            ) from None
        return TableShape(n_rows=n_rows, n_columns=len(names), columns=tuple(names))
    import zipfile

    try:
        with open(real, "rb") as fh:
            if fh.read(4)[:2] != b"PK":
                raise DataError(f"could not read {given} as NPZ: the file is not a zip archive")
            fh.seek(0)
            with _open_npz(fh, limits) as archive:
                if "X" not in archive.files:
                    raise DataError("npz file must contain an array 'X'")
                shape = _npz_array_shape(archive, "X")
    except DataError:
        raise
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, KeyError) as exc:
        raise DataError(f"could not read {given} as NPZ: {_reason(exc, real, given)}") from None
    _check_npz_x(shape, limits)
    if not shape:
        raise DataError("array 'X' must have rows, got a scalar")
    return TableShape(n_rows=shape[0], n_columns=math.prod(shape[1:]), columns=None)


def load_dataset(
    uri: str,
    *,
    label_column: str = "y",
    positive_label: Any = None,
    data_roots: Sequence[str | os.PathLike[str]] | None = None,
    max_rows: int | None = None,
    max_columns: int | None = None,
    max_decompressed_bytes: int | None = None,
) -> Dataset:
    """Load ``uri`` (a path, ``file://`` or ``builtin://`` uri) as a validated binary Dataset.

    ``data_roots`` is the service's sandbox: when given, only files whose real path lies under
    one of them may be read (``None`` means no restriction, for library use; built-ins need no
    file and are always allowed). ``max_rows``, ``max_columns`` and ``max_decompressed_bytes``
    (what a CSV, gzip, Parquet or NPZ file holds once decompressed) bound the work and memory
    one request can cause: each is checked from the file's metadata before it is read where the
    format has it, else while it is streamed, and passing one raises :class:`DataLimitError`.
    Column names must be unique. Rows of error messages are counted from 0, excluding the header.
    """
    _check_uri(uri, data_roots)
    if not isinstance(label_column, str):
        raise TypeError(f"label_column must be a string, got {type(label_column).__name__}")
    limits = _limits(max_rows, max_columns, max_decompressed_bytes)

    if uri.lower().startswith("builtin://"):
        (X, raw_y, names), default_positive = _builtin(uri, max_rows)
        if positive_label is None:
            positive_label = default_positive
    else:
        given, real = _resolve_path(uri, data_roots)
        fmt = _format_of(given)
        if fmt in (".csv", ".csv.gz"):
            X, raw_y, names = _read_csv(real, given, fmt, label_column, limits)
        elif fmt == ".parquet":
            X, raw_y, names = _read_parquet(real, given, label_column, limits)
        else:
            X, raw_y, names = _read_npz(real, given, limits)

    _check_rows(int(X.shape[0]), max_rows)
    X32 = _float32_features(X, names)
    y, positive, negative = parse_labels(raw_y, positive_label=positive_label)
    return Dataset(
        X=X32,
        y=y,
        feature_names=names,
        positive_label=positive,
        negative_label=negative,
        source=uri,
    )
