"""What one read may take (rows, columns, decompressed bytes), and the checks that hold it to that.

Every reader checks the limits as early as its format allows (a file's metadata before its data,
a stream's bytes as they are decompressed), so that a small file that expands to gigabytes costs
no more than the limit. ``None`` is no limit, for library use.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from metro.datasets._base import MAX_SHOWN_COLUMNS, DataError, DataLimitError

# What the header line of a CSV may take per allowed column, so that a header of a billion
# separators is refused after a bounded read instead of becoming a billion strings.
_HEADER_BYTES_PER_COLUMN = 256
MIN_HEADER_BYTES = 1024 * 1024  # above pandas' read size, so a short header is never refused


@dataclass(frozen=True)
class Limits:
    """What one read may take; ``None`` is no limit (library use)."""

    rows: int | None = None
    columns: int | None = None
    decompressed_bytes: int | None = None

    @property
    def header_bytes(self) -> int | None:
        """The longest CSV header read before giving up: room for every allowed column."""
        if self.columns is None:
            return self.decompressed_bytes
        budget = max(MIN_HEADER_BYTES, self.columns * _HEADER_BYTES_PER_COLUMN)
        return budget if self.decompressed_bytes is None else min(budget, self.decompressed_bytes)


def limits_of(max_rows: Any, max_columns: Any, max_decompressed_bytes: Any) -> Limits:
    """The caller's ``max_*`` arguments, checked; a bad one is the caller's bug (ValueError)."""
    for name, value in (
        ("max_rows", max_rows),
        ("max_columns", max_columns),
        ("max_decompressed_bytes", max_decompressed_bytes),
    ):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            raise ValueError(f"{name} must be a positive int or None, got {value!r}")
    return Limits(rows=max_rows, columns=max_columns, decompressed_bytes=max_decompressed_bytes)


def check_rows(n_rows: int, max_rows: int | None, *, at_least: bool = False) -> None:
    if n_rows == 0:
        raise DataError("dataset has no rows")
    if max_rows is not None and n_rows > max_rows:
        count = f"at least {n_rows}" if at_least else str(n_rows)
        raise DataLimitError(f"dataset has {count} rows, more than the limit {max_rows}")


def check_columns(names: Sequence[str], limits: Limits) -> None:
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
        shown = ", ".join(repr(name) for name in duplicated[:MAX_SHOWN_COLUMNS])
        more = ", ..." if len(duplicated) > MAX_SHOWN_COLUMNS else ""
        raise DataError(f"column names must be unique; {shown}{more} {verb} more than once")


def check_expanded_size(n_bytes: int, limits: Limits) -> None:
    if limits.decompressed_bytes is not None and n_bytes > limits.decompressed_bytes:
        raise DataLimitError(
            f"dataset expands to {n_bytes} bytes, more than the limit "
            f"{limits.decompressed_bytes} bytes"
        )
