"""Receiving an uploaded dataset file: size cap, SHA-256, and a first look at its contents.

The file is streamed to a temporary name in a local staging directory while it is hashed and
counted, inspected there, and only then handed to the upload store (:mod:`.storage`), so a failed,
oversized or malformed upload never leaves a half-written dataset behind.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from core.config import Settings
from core.errors import (
    FieldError,
    InvalidInputError,
    PayloadTooLargeError,
    UnsupportedFormatError,
    no_room,
)
from metro.serialization import fsync_file

if TYPE_CHECKING:
    from metro.datasets import DataError, MultiTargetDataset
    from metro.search import SearchWarning

# The formats metro.data reads, by file name suffix.
FORMATS = (".csv.gz", ".csv", ".parquet", ".pq", ".npz")
_CHUNK = 1024 * 1024
# Under METRO_UPLOAD_DIR: uploads being received and inspected, each a file named .upload-*.
STAGING = ".staging"
_STAGED_PREFIX = ".upload-"
# A staged file untouched this long is no upload in progress (one is written as it arrives, then
# inspected for seconds): an API process killed mid-upload left it.
STALE_STAGED_SECONDS = 3600.0

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class StoredUpload:
    path: Path
    format: str
    size_bytes: int
    sha256: str


@dataclass(frozen=True)
class Inspection:
    n_rows: int | None
    n_columns: int | None
    columns: list[str] | None
    # With a label column: its two classes as metro read them, [negative, positive]; a column
    # of three classes or more (for an averaged job): its classes, in metro's order.
    labels: list[Any] | None = None
    # What the check warned of, in the library's words (a feature that looks like an id).
    warnings: tuple[SearchWarning, ...] = ()


def file_format(filename: str) -> str:
    name = filename.lower()
    for suffix in FORMATS:
        if name.endswith(suffix):
            return ".parquet" if suffix == ".pq" else suffix
    raise UnsupportedFormatError(
        f"unsupported file type {Path(filename).name!r}; upload one of {', '.join(FORMATS)}"
    )


def stage_upload(
    source: BinaryIO,
    *,
    filename: str,
    staging_dir: Path,
    max_bytes: int,
) -> StoredUpload:
    """Stream the upload to a temporary file in ``staging_dir`` while hashing and counting it.

    The temporary name keeps the format's suffix, which is how ``metro.data`` tells formats
    apart; a client's filename never becomes a path. The caller inspects the staged file and
    then keeps it (:class:`core.datasets.storage.UploadStore`) or removes it.
    """
    fmt = file_format(filename)
    digest = hashlib.sha256()
    size = 0
    try:
        # A file system without a free inode refuses the file itself: the 507 too, not a 500.
        Path(staging_dir).mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=staging_dir, prefix=_STAGED_PREFIX, suffix=fmt)
    except OSError as exc:
        raise (no_room(exc, "this upload") or exc) from None
    try:
        with os.fdopen(fd, "wb") as out:
            while chunk := source.read(_CHUNK):
                size += len(chunk)
                if size > max_bytes:
                    raise PayloadTooLargeError(f"the upload exceeds the limit of {max_bytes} bytes")
                digest.update(chunk)
                out.write(chunk)
            # On disk before the store takes it: a rename of unflushed bytes can survive a
            # crash as an empty or truncated file under the name a dataset row records.
            fsync_file(out)
        if size == 0:
            raise InvalidInputError(
                "Invalid dataset", [FieldError(("body", "file"), "the uploaded file is empty")]
            )
    except BaseException as exc:
        Path(tmp_name).unlink(missing_ok=True)
        full = no_room(exc, "this upload")
        if full is not None:
            raise full from None
        raise
    return StoredUpload(path=Path(tmp_name), format=fmt, size_bytes=size, sha256=digest.hexdigest())


def staging_dir(settings: Settings) -> Path:
    """Where :func:`stage_upload` receives this server's uploads."""
    return settings.upload_dir / STAGING


def remove_stale_staged(
    staging: Path, *, older_than_s: float = STALE_STAGED_SECONDS, now: float | None = None
) -> int:
    """Remove the staged files an API process killed mid-upload left in ``staging`` (nothing
    else removes them: each held a whole upload, counted against no quota, until the disk was
    full); only those untouched for ``older_than_s`` seconds, since other API processes may
    share the directory and be receiving theirs. Returns how many were removed."""
    cutoff = (time.time() if now is None else now) - older_than_s
    removed = 0
    try:
        staged = list(Path(staging).glob(f"{_STAGED_PREFIX}*"))
    except OSError:
        return 0
    for path in staged:
        try:
            if path.is_file() and path.stat().st_mtime < cutoff:
                path.unlink()
                removed += 1
        except OSError:  # gone meanwhile, or not ours to remove: the next sweep sees it
            continue
    if removed:
        logger.warning("removed %d upload(s) left in %s by an interrupted upload", removed, staging)
    return removed


@dataclass(frozen=True)
class DatasetLimits:
    """What one dataset may hold (``METRO_MAX_DATASET_ROWS`` and friends)."""

    rows: int
    columns: int
    decompressed_bytes: int

    @classmethod
    def from_settings(cls, settings: Settings) -> DatasetLimits:
        return cls(
            rows=settings.max_dataset_rows,
            columns=settings.max_dataset_columns,
            decompressed_bytes=settings.max_decompressed_bytes,
        )

    def as_metro_kwargs(self) -> dict[str, int]:
        """The keyword arguments of ``metro.data.load_dataset`` and ``inspect_file``."""
        return {
            "max_rows": self.rows,
            "max_columns": self.columns,
            "max_decompressed_bytes": self.decompressed_bytes,
        }


def inspect_upload(
    stored: StoredUpload,
    *,
    label_column: str | None,
    positive_label: Any,
    upload_dir: Path,
    limits: DatasetLimits,
    ignore_columns: Sequence[str] = (),
    label_columns: Sequence[str] | None = None,
) -> Inspection:
    """Rows and columns of the file, read no further than ``limits`` allow (a file past one is a
    413, whatever its size on disk). With a ``label_column`` the file is loaded exactly as a
    worker will load it (``metro.data.load_dataset``), so a bad label column or non-numeric
    feature is refused now rather than when a job fails; without one only the shape is read.
    With ``label_columns`` (several 0/1 columns) it is loaded as a multi-label job loads it.
    ``ignore_columns`` are left out of the features as a job's ``dataset.ignore_columns``
    leaves them (an id or text column then does not fail the check)."""
    from metro.data import DataError, DataLimitError, inspect_file, load_dataset
    from metro.datasets import ClassCountError, LabelColumnError

    def refuse(exc: Exception) -> str:
        # metro's messages name the path as given; the stored path is internal.
        return str(exc).replace(str(stored.path), "the uploaded file")

    try:
        if label_columns is not None:
            info = _multilabel(stored, list(label_columns), upload_dir, limits, ignore_columns)
        elif label_column is not None:
            try:
                ds = load_dataset(
                    str(stored.path),
                    label_column=label_column,
                    positive_label=positive_label,
                    data_roots=[upload_dir],
                    ignore_columns=ignore_columns,
                    **limits.as_metro_kwargs(),
                )
            except DataLimitError:
                raise
            except DataError as binary_error:
                # A column of three classes or more is what an averaged job (metric.average)
                # trains on: kept, with its classes, when it reads as one.
                multi = _multiclass(
                    stored, label_column, positive_label, upload_dir, limits, ignore_columns
                )
                if isinstance(multi, DataError):  # why it does not, for a column of 3 or more
                    several = isinstance(binary_error, ClassCountError) and (
                        binary_error.n_classes > 2
                    )
                    raise (multi if several else binary_error) from None
                if multi is None:
                    raise binary_error from None
                info = _labelled(
                    stored, [label_column], multi.X, multi.feature_names,
                    list(multi.classes), ignore_columns,
                )  # fmt: skip
            else:
                info = _labelled(
                    stored, [label_column], ds.X, ds.feature_names,
                    [ds.negative_label, ds.positive_label], ignore_columns,
                )  # fmt: skip
        else:
            shape = inspect_file(
                str(stored.path), data_roots=[upload_dir], **limits.as_metro_kwargs()
            )
            columns = list(shape.columns) if shape.columns is not None else None
            info = Inspection(n_rows=shape.n_rows, n_columns=shape.n_columns, columns=columns)
    except DataLimitError as exc:
        raise PayloadTooLargeError(refuse(exc)) from None
    except DataError as exc:
        # A label the positive class cannot be told from is the positive_label field's to fix,
        # a column the file does not have the label_column field's.
        if label_columns is not None and (
            isinstance(exc, LabelColumnError) or str(exc).startswith(("label column", "label_"))
        ):
            field = "label_columns"
        elif isinstance(exc, LabelColumnError):
            field = "label_column"
        else:
            field = next(
                (f for f in ("positive_label", "ignore_columns") if str(exc).startswith(f)),
                "file",
            )
        said = refuse(exc)
        if said.startswith("positive_label is required"):
            # Two classes of text are a binary job's only with a positive one; an averaged
            # job takes none and refuses one, which this check cannot know it is for.
            said += (
                "; for an averaged job (metric.average) over these classes, upload without "
                "label_column"
            )
        raise InvalidInputError("Invalid dataset", [FieldError(("body", field), said)]) from None
    except Exception as exc:
        message = refuse(exc).splitlines()
        reason = message[0][:200] if message else type(exc).__name__
        raise InvalidInputError(
            "Invalid dataset",
            [FieldError(("body", "file"), f"could not read the file as {stored.format}: {reason}")],
        ) from None
    _refuse_bad_names(info.columns)
    nul = nul_label(info.labels or ())
    if nul is not None:
        raise InvalidInputError("Invalid dataset", [FieldError(("body", "file"), nul)])
    return info


def _labelled(
    stored: StoredUpload,
    label_columns: list[str],
    X: Any,
    feature_names: tuple[str, ...] | None,
    labels: list[Any] | None,
    ignore_columns: Sequence[str] = (),
) -> Inspection:
    """The inspection of a file loaded by its label column(s). n_columns counts the file's
    columns, label and ignored ones included, as without a label column: one file, one answer
    (an NPZ has no label column among its X's columns). Its warnings are those a job on it
    gets for its data (:func:`metro.estimator.id_like_warning`)."""
    from metro.estimator import id_like_warning

    names = list(feature_names) if feature_names is not None else None
    is_table = names is not None and stored.format != ".npz"
    columns = [*names, *label_columns, *ignore_columns] if is_table and names is not None else names
    n_features = int(X[0].size) if len(X) else 0
    n_columns = len(columns) if is_table and columns is not None else n_features
    found = id_like_warning(X, feature_names) if X.ndim == 2 else None
    return Inspection(
        n_rows=int(X.shape[0]), n_columns=n_columns, columns=columns, labels=labels,
        warnings=() if found is None else (found,),
    )  # fmt: skip


def _multilabel(
    stored: StoredUpload,
    label_columns: list[str],
    upload_dir: Path,
    limits: DatasetLimits,
    ignore_columns: Sequence[str] = (),
) -> Inspection:
    """The file read as a worker reads a multi-label job's data: each of ``label_columns`` a
    0/1 column (or -1/1, booleans) with enough rows on either side."""
    from metro.datasets import load_multi_target

    ds = load_multi_target(
        str(stored.path), label_columns=label_columns, data_roots=[upload_dir],
        max_rows=limits.rows, max_columns=limits.columns,
        max_decompressed_bytes=limits.decompressed_bytes, ignore_columns=ignore_columns,
    )  # fmt: skip
    return _labelled(stored, label_columns, ds.X, ds.feature_names, None, ignore_columns)


def _multiclass(
    stored: StoredUpload,
    label_column: str,
    positive_label: Any,
    upload_dir: Path,
    limits: DatasetLimits,
    ignore_columns: Sequence[str] = (),
) -> MultiTargetDataset | DataError | None:
    """The file read as a worker reads an averaged job's data, where its label column holds
    three classes or more; None where it holds fewer, and the reading's error where it fails
    (a column of 120 classes is past the limit of classes, not "not two classes")."""
    from metro.datasets import DataError, load_multi_target

    if positive_label is not None:
        return None
    try:
        ds = load_multi_target(
            str(stored.path), label_column=label_column, data_roots=[upload_dir],
            max_rows=limits.rows, max_columns=limits.columns,
            max_decompressed_bytes=limits.decompressed_bytes, ignore_columns=ignore_columns,
        )  # fmt: skip
    except DataError as exc:
        return exc
    return ds if ds.n_classes >= 3 else None


def nul_label(labels: Iterable[Any]) -> str | None:
    """What is wrong with label values the database cannot store (text with a NUL character:
    PostgreSQL refuses it in text and JSON), else None. Label values are stored with an
    upload, a job's trace and choices, and a model's manifest."""
    for label in labels:
        if isinstance(label, str) and "\x00" in label:
            return (
                f"label value {label!r} has a NUL character; label values must be text without NUL"
            )
    return None


# A column's name, as the upload's own fields (label_column, ignore_columns) take it: every
# listing of a tenant's datasets carries every column's name, and names of 2,540 characters made
# one listing of 30 datasets 76 MB.
MAX_COLUMN_NAME = 255


def _refuse_bad_names(columns: list[str] | None) -> None:
    """Column names are stored as text, which cannot hold a NUL (PostgreSQL refuses it), and
    are at most MAX_COLUMN_NAME characters."""
    for index, name in enumerate(columns or ()):
        if len(name) > MAX_COLUMN_NAME:
            raise InvalidInputError(
                "Invalid dataset",
                [
                    FieldError(
                        ("body", "file"),
                        f"column {index}'s name is {len(name)} characters, more than "
                        f"{MAX_COLUMN_NAME}: {name[:40]!r}...",
                    )
                ],
            )
        if "\x00" in name:
            raise InvalidInputError(
                "Invalid dataset",
                [
                    FieldError(
                        ("body", "file"),
                        f"column {index} has a NUL character in its name; "
                        "column names must be text without NUL",
                    )
                ],
            )
