"""Reading an NPZ archive of arrays ``X``, ``y`` and optionally ``feature_names`` and
``label_names``.

``X`` may be a table ``(n, d)``, grayscale images ``(n, H, W)`` or images in either channel
order; it leaves as a table or channels-first images. ``y`` is one label per row, or, for
multi-label data, an ``(n, L)`` matrix whose columns are the labels named by ``label_names`` (or
``"0"``, ``"1"``, ... without it). The zip directory and the ``.npy`` headers declare every
size, so an archive over a limit is refused before its arrays are decompressed.
"""

from __future__ import annotations

import math
import zipfile
from collections.abc import Sequence
from typing import Any

import numpy as np

from metro.datasets._base import (
    DataError,
    DataLimitError,
    LabelColumnError,
    Loaded,
    TableShape,
    parser_reason,
    show_values,
)
from metro.datasets._limits import Limits, check_columns, check_expanded_size, check_rows


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


def _check_npz_x(shape: tuple[int, ...], limits: Limits) -> None:
    """Rows and (for a table) columns of X as declared, before a byte of it is decompressed."""
    if shape:
        check_rows(shape[0], limits.rows)
    if len(shape) >= 2 and 0 in shape[1:]:
        raise DataError(f"array 'X' has no features (shape {shape})")
    if len(shape) == 2 and limits.columns is not None and shape[1] > limits.columns:
        raise DataLimitError(
            f"dataset has {shape[1]} columns, more than the limit {limits.columns}"
        )


def _open_npz(fh: Any, limits: Limits) -> Any:
    """``np.load`` of the archive, once the sizes its members declare are within the limits.

    The zip directory states each member's decompressed size and the zip reader never delivers
    more than that, so the sum bounds what loading can allocate, however well it compresses.
    """
    with zipfile.ZipFile(fh) as directory:
        check_expanded_size(sum(info.file_size for info in directory.infolist()), limits)
    fh.seek(0)
    # allow_pickle=False: an uploaded pickle would run arbitrary code when loaded.
    return np.load(fh, allow_pickle=False)


def read_npz(real: str, given: str, limits: Limits, labels: Sequence[str] | None = None) -> Loaded:
    """``(X, y, feature_names)`` of the archive; with ``labels`` (multi-label data), ``y`` is
    the ``(n, len(labels))`` matrix of those columns of the archive's 2-D ``y``, in that order."""

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
                    found = show_values(names, 10)
                    raise DataError(f"npz file must contain arrays 'X' and 'y'; found {found}")
                _check_npz_x(_npz_array_shape(archive, "X"), limits)
                y = archive["y"]  # small, and its length lets an oversized X be refused unread
                if labels is not None:
                    raw_labels = archive["label_names"] if "label_names" in names else None
                    y = _label_columns(y, raw_labels, labels)
                elif y.ndim == 2 and y.shape[1] == 1:
                    y = y[:, 0]
                if labels is None and y.ndim != 1:
                    raise DataError(
                        f"array 'y' must be one-dimensional, got shape {y.shape} (a multi-label "
                        "y of rows x labels needs label_columns naming its labels)"
                    )
                check_rows(int(y.shape[0]), limits.rows)
                X = archive["X"]
                raw_names = archive["feature_names"] if "feature_names" in names else None
    except DataError:
        raise
    except ValueError as exc:
        if "allow_pickle" in str(exc):
            raise fail(
                "arrays of Python objects are not accepted, only numbers and strings"
            ) from None
        raise fail(parser_reason(exc, real, given)) from None
    except (OSError, EOFError, zipfile.BadZipFile, KeyError) as exc:
        raise fail(parser_reason(exc, real, given)) from None

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
        feature_names = _names(raw_names, "feature_names", int(X.shape[1]), "X")
        check_columns(feature_names, Limits())
    return X, y, feature_names


def _names(raw: np.ndarray, array: str, count: int, of: str) -> tuple[str, ...]:
    """The strings of a names array (``feature_names``, ``label_names``): one per column of the
    array ``of``, bytes read as UTF-8."""
    if raw.dtype.kind not in "US" or raw.shape != (count,):
        raise DataError(
            f"{array} must be {count} strings, one per column of {of}; "
            f"got shape {raw.shape} of dtype {raw.dtype}"
        )
    return tuple(
        n.decode("utf-8", "replace") if isinstance(n, bytes) else str(n) for n in raw.tolist()
    )


def _label_columns(y: np.ndarray, raw_names: np.ndarray | None, wanted: Sequence[str]) -> Any:
    """The columns ``wanted`` of a multi-label ``y`` (rows x labels), found by the archive's
    ``label_names`` (one string per column) or, without them, by their index ("0", "1", ...)."""
    if y.ndim != 2:
        raise DataError(f"array 'y' must be rows x labels for label_columns, got shape {y.shape}")
    if raw_names is None:
        found: tuple[str, ...] = tuple(str(j) for j in range(y.shape[1]))
    else:
        found = _names(raw_names, "label_names", int(y.shape[1]), "y")
        if len(set(found)) != len(found):
            raise DataError("label_names must not repeat a name")
    for name in wanted:
        if name not in found:
            raise LabelColumnError(
                f"label column {name!r} not found; the labels of y are {show_values(found, 10)}"
            )
    return y[:, [found.index(name) for name in wanted]]


def npz_shape(real: str, given: str, limits: Limits) -> TableShape:
    """Rows and input size of ``X`` from its ``.npy`` header; no array is decompressed."""
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
        raise DataError(
            f"could not read {given} as NPZ: {parser_reason(exc, real, given)}"
        ) from None
    _check_npz_x(shape, limits)
    if not shape:
        raise DataError("array 'X' must have rows, got a scalar")
    return TableShape(n_rows=shape[0], n_columns=math.prod(shape[1:]), columns=None)
