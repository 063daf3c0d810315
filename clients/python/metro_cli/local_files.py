"""What can be checked of a local data file before it is uploaded, with the standard library
alone: that it exists and can be read, that its name says a format the server reads, and for a
CSV (or CSV.gz) that its header holds the label column and its label column the positive label.

These checks only spare an upload that would be refused: the server loads every upload given a
label column exactly as a job will (``POST /v1/datasets``), and refuses what it cannot train on.
The messages are worded as the server's are."""

from __future__ import annotations

import csv
import gzip
import math
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from metro_cli.errors import CliError

# The formats the server reads, by the end of the file's name (any case), as it tells them.
FORMATS = {".csv.gz": "CSV.gz", ".csv": "CSV", ".parquet": "Parquet", ".pq": "Parquet",
           ".npz": "NPZ"}  # fmt: skip
DEFAULT_LABEL_COLUMN = "y"  # the label column of a job that names none
# How far the positive label is looked for: past this many rows without it, the server decides.
MAX_ROWS_SCANNED = 1_000_000
_SHOWN_COLUMNS = 10
_SHOWN_LABELS = 5


def data_format(path: Path) -> str | None:
    """The file's format by its name (CSV, CSV.gz, Parquet, NPZ), None for another name."""
    name = path.name.lower()
    return next((kind for suffix, kind in FORMATS.items() if name.endswith(suffix)), None)


def check_readable(path: Path) -> str:
    """Refuse a path that is not a readable data file the server would take; its format."""
    if not path.exists():
        raise CliError(f"no such file: {path}")
    if not path.is_file():
        raise CliError(f"{path} is not a file")
    try:
        with path.open("rb"):
            pass
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
    kind = data_format(path)
    if kind is None:
        raise CliError(
            f"{path}: the server reads files named *.csv, *.csv.gz, *.parquet (or *.pq) and "
            "*.npz, and tells their format by that name"
        )
    return kind


# As the server says it (metro.datasets): Excel's "Unicode text" is UTF-16.
NOT_UTF8 = "the file is not UTF-8 text (from a spreadsheet, save it as CSV UTF-8)"


# The separators a header read as one column is judged by, as the server's (metro.datasets).
OTHER_SEPARATORS = {";": "semicolons", "\t": "tabs", "|": "bars"}


def refuse_other_separators(path: Path, header: list[str]) -> None:
    """A header that reads as one column holding another separator: the file is not
    comma-separated (a spreadsheet's export where ',' is the decimal mark uses ';')."""
    if len(header) != 1:
        return
    for separator, word in OTHER_SEPARATORS.items():
        if separator in header[0]:
            raise CliError(
                f"{path}: the header reads as one column {header[0][:80]!r}: the file seems "
                f"separated by {word}; the server reads CSV separated by commas, with '.' as "
                "the decimal mark: export it so"
            )


def check_local_dataset(
    path: Path,
    *,
    label_column: str | None,
    positive_label: Any,
    option: str = "--label-column",
    ignore_columns: list[str] | None = None,
    label_columns: list[str] | None = None,
) -> None:
    """Refuse, before anything is uploaded, a local file that a job could not train on, as far
    as the standard library can tell: one that is missing or unreadable, whose name says no
    format the server reads, or, for a CSV, whose header lacks the label column (or one of a
    multi-label job's ``label_columns``) or a column to ignore (the error lists the columns)
    or whose label column lacks the positive label."""
    kind = check_readable(path)
    if kind not in ("CSV", "CSV.gz"):
        return  # Parquet and NPZ need libraries this package does without: the server checks
    label = DEFAULT_LABEL_COLUMN if label_column is None else label_column
    try:
        with _open_text(path, kind) as handle:
            rows = csv.reader(handle)
            columns = next(rows, None)
            if columns is None:
                raise CliError(f"{path}: the file is empty (a CSV needs a header row)")
            refuse_other_separators(path, columns)
            for wanted in label_columns or [label]:
                if wanted in columns:
                    continue
                hint = ""
                if label_column is None and not label_columns:
                    hint = f" (the default label column: name yours with {option})"
                total = f" ({len(columns)} in total)" if len(columns) > _SHOWN_COLUMNS else ""
                raise CliError(
                    f"{path}: label column '{wanted}' not found; columns are "
                    f"{_show(columns, _SHOWN_COLUMNS)}{total}{hint}"
                )
            missing = [name for name in ignore_columns or [] if name not in columns]
            if missing:
                total = f" ({len(columns)} in total)" if len(columns) > _SHOWN_COLUMNS else ""
                raise CliError(
                    f"{path}: --ignore-columns names {_show(missing, _SHOWN_COLUMNS)}, not a "
                    f"column of it; columns are {_show(columns, _SHOWN_COLUMNS)}{total}"
                )
            if positive_label is not None:
                _check_positive_label(path, positive_label, _column(rows, columns.index(label)))
    except UnicodeDecodeError:
        raise CliError(f"could not read {path} as CSV: {NOT_UTF8}") from None
    except (OSError, csv.Error, EOFError) as exc:
        raise CliError(f"could not read {path} as CSV: {exc}") from None


def _open_text(path: Path, kind: str) -> Any:
    # utf-8-sig: a byte-order mark (Excel's "CSV UTF-8") is not part of the first column's
    # name, which the server does not count as one either.
    if kind == "CSV.gz":
        return gzip.open(path, "rt", encoding="utf-8-sig", newline="")
    return path.open(encoding="utf-8-sig", newline="")


def _column(rows: Iterable[list[str]], index: int) -> Iterator[str]:
    """The column's non-empty cells, of at most MAX_ROWS_SCANNED rows."""
    for n, row in enumerate(rows):
        if n >= MAX_ROWS_SCANNED:
            return
        if index < len(row) and row[index] != "":
            yield row[index]


def _check_positive_label(path: Path, wanted: Any, cells: Iterator[str]) -> None:
    """Refuse a positive label that no cell of a whole (scanned) label column matches, matched
    as the server matches it: the same text, or the same number ("1" for 1, "1.0" for 1), or
    the same truth value ("True" for true)."""
    seen: set[str] = set()
    scanned = 0
    for cell in cells:
        scanned += 1
        seen.add(cell)
    if scanned >= MAX_ROWS_SCANNED or not seen:
        return  # not all of it was read, or no label at all: the server tells
    # A cell TRUE is the number 1 too only where the whole column is booleans, as the server
    # types a label column ('True' beside 'no' is text).
    booleans = all(_as_bool(cell) is not None for cell in seen)
    if any(_matches(cell, wanted, booleans=booleans) for cell in seen):
        return
    labels = sorted((_typed(c) for c in seen), key=_order)
    raise CliError(
        f"{path}: positive_label {wanted!r} is not one of the labels {_show(labels, _SHOWN_LABELS)}"
    )


def _as_number(value: Any) -> float | None:
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


def _matches(cell: str, wanted: Any, *, booleans: bool = False) -> bool:
    if isinstance(wanted, str) and cell == wanted:
        return True
    number, flag = _as_number(wanted), _as_bool(wanted)
    cell_flag = _as_bool(cell)
    cell_number = float(cell_flag) if booleans and cell_flag is not None else _as_number(cell)
    return (number is not None and cell_number == number) or (
        flag is not None and cell_flag is flag
    )


def _typed(cell: str) -> Any:
    """A label as the server shows it: 1 rather than '1'."""
    for parse in (int, float):
        try:
            return parse(cell)
        except ValueError:
            pass
    flag = _as_bool(cell)
    return cell if flag is None else flag


def _order(value: Any) -> tuple[int, Any]:
    if isinstance(value, bool | int | float):
        return (0, float(value))
    return (1, str(value))


def _show(values: list[Any], limit: int) -> str:
    shown = ", ".join(repr(v) for v in values[:limit])
    return f"[{shown}, ...]" if len(values) > limit else f"[{shown}]"
