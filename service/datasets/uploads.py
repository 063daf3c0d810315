"""Storing an uploaded dataset file: size cap, SHA-256, and a first look at its contents.

The file is streamed to a temporary name next to its destination while it is hashed and counted,
then renamed, so a failed or oversized upload never leaves a half-written dataset behind.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from service.errors import (
    FieldError,
    InvalidInputError,
    PayloadTooLargeError,
    UnsupportedFormatError,
)

# The formats metro.data reads, by file name suffix.
FORMATS = (".csv.gz", ".csv", ".parquet", ".pq", ".npz")
_CHUNK = 1024 * 1024
_CSV_CHUNK_ROWS = 200_000


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


def file_format(filename: str) -> str:
    name = filename.lower()
    for suffix in FORMATS:
        if name.endswith(suffix):
            return ".parquet" if suffix == ".pq" else suffix
    raise UnsupportedFormatError(
        f"unsupported file type {Path(filename).name!r}; upload one of {', '.join(FORMATS)}"
    )


def store_upload(
    source: BinaryIO,
    *,
    filename: str,
    upload_dir: Path,
    tenant_id: uuid.UUID,
    dataset_id: uuid.UUID,
    max_bytes: int,
) -> StoredUpload:
    fmt = file_format(filename)
    directory = Path(upload_dir) / str(tenant_id)
    directory.mkdir(parents=True, exist_ok=True)
    # The stored name is derived from ids only: a client's filename never becomes a path.
    destination = directory / f"{dataset_id}{fmt}"
    digest = hashlib.sha256()
    size = 0
    fd, tmp_name = tempfile.mkstemp(dir=directory, prefix=".upload-")
    try:
        with os.fdopen(fd, "wb") as out:
            while chunk := source.read(_CHUNK):
                size += len(chunk)
                if size > max_bytes:
                    raise PayloadTooLargeError(f"the upload exceeds the limit of {max_bytes} bytes")
                digest.update(chunk)
                out.write(chunk)
        if size == 0:
            raise InvalidInputError(
                "Invalid dataset", [FieldError(("body", "file"), "the uploaded file is empty")]
            )
        os.replace(tmp_name, destination)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return StoredUpload(path=destination, format=fmt, size_bytes=size, sha256=digest.hexdigest())


def inspect_upload(
    stored: StoredUpload, *, label_column: str | None, positive_label: Any, upload_dir: Path
) -> Inspection:
    """Rows and columns of the file. With a ``label_column`` the file is loaded exactly as a
    worker will load it (``metro.data.load_dataset``), so a bad label column or non-numeric
    feature is refused now rather than when a job fails; without one only the shape is read."""
    try:
        if label_column is not None:
            return _inspect_with_metro(stored, label_column, positive_label, upload_dir)
        return _inspect_shape(stored)
    except InvalidInputError:
        raise
    except Exception as exc:
        message = str(exc).replace(str(stored.path), "the uploaded file").splitlines()
        reason = message[0][:200] if message else type(exc).__name__
        raise InvalidInputError(
            "Invalid dataset",
            [FieldError(("body", "file"), f"could not read the file as {stored.format}: {reason}")],
        ) from None


def _inspect_with_metro(
    stored: StoredUpload, label_column: str, positive_label: Any, upload_dir: Path
) -> Inspection:
    from metro.data import DataError, load_dataset

    try:
        ds = load_dataset(
            str(stored.path),
            label_column=label_column,
            positive_label=positive_label,
            data_roots=[upload_dir],
        )
    except DataError as exc:
        # metro's messages name the path as given; the stored path is internal.
        msg = str(exc).replace(str(stored.path), "the uploaded file")
        raise InvalidInputError("Invalid dataset", [FieldError(("body", "file"), msg)]) from None
    names = list(ds.feature_names) if ds.feature_names is not None else None
    columns = [*names, label_column] if names is not None and stored.format != ".npz" else names
    return Inspection(n_rows=ds.n_samples, n_columns=ds.n_features, columns=columns)


def _inspect_shape(stored: StoredUpload) -> Inspection:
    path = stored.path
    if stored.format in (".csv", ".csv.gz"):
        import pandas as pd

        n_rows = 0
        columns: list[str] | None = None
        with pd.read_csv(path, chunksize=_CSV_CHUNK_ROWS, low_memory=False) as reader:
            for chunk in reader:
                if columns is None:
                    columns = [str(c) for c in chunk.columns]
                n_rows += len(chunk)
        if columns is None:  # header only
            columns = [str(c) for c in pd.read_csv(path, nrows=0).columns]
        return Inspection(n_rows=n_rows, n_columns=len(columns), columns=columns)
    if stored.format == ".parquet":
        import pyarrow.parquet as pq

        meta = pq.ParquetFile(path)
        names = list(meta.schema_arrow.names)
        return Inspection(n_rows=meta.metadata.num_rows, n_columns=len(names), columns=names)
    import numpy as np

    # allow_pickle=False: loading an uploaded pickle would run arbitrary code.
    with np.load(path, allow_pickle=False) as archive:
        if "X" not in archive.files:
            raise InvalidInputError(
                "Invalid dataset",
                [FieldError(("body", "file"), "an npz dataset must contain an array 'X'")],
            )
        shape = archive["X"].shape
    n_features = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    return Inspection(n_rows=int(shape[0]), n_columns=n_features, columns=None)
