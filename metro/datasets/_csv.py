"""Reading a CSV file (plain or gzip), within the limits, as features and raw labels.

The file is decompressed here rather than in pandas, through a stream that stops at the byte
limit, so that the limit counts what the parser sees, not the few bytes on disk.
"""

from __future__ import annotations

import csv
import gzip
import io
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from metro.datasets._base import DataError, DataLimitError, Loaded, TableShape, parser_reason
from metro.datasets._limits import MIN_HEADER_BYTES, Limits, check_columns, check_rows
from metro.datasets._table import from_table

_CSV_COUNT_CHUNK_ROWS = 100_000  # rows per chunk when only counting the rows of a CSV
_CSV_ERRORS = (ValueError, OSError, EOFError, pd.errors.ParserError, pd.errors.EmptyDataError)


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


def _unreadable(exc: BaseException, real: str, given: str) -> DataError:
    return DataError(f"could not read {given} as CSV: {parser_reason(exc, real, given)}")


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


def _csv_header(real: str, given: str, fmt: str, limits: Limits) -> list[str]:
    """The column names exactly as written, before pandas renames duplicates (``y`` to ``y.1``).

    Read from the whole lines within a bounded prefix of the file (a first line longer than the
    prefix is refused unparsed), with the standard library's CSV reader: the same quoting rules
    as pandas' default dialect, and linear in the header's length whatever its width.
    """
    budget = limits.header_bytes

    def first_record(stream: Any) -> list[str]:
        if budget is None:  # no limit: read up to the first line break, however far
            head = b""
            while (chunk := stream.read(MIN_HEADER_BYTES)) and b"\n" not in chunk:
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
        raise _unreadable(exc, real, given) from None
    _refuse_other_separators(names, given)
    check_columns(names, limits)
    return names


# What spreadsheets in many locales export "CSV" with (';' where ',' is the decimal mark).
_OTHER_SEPARATORS = {";": "semicolons", "\t": "tabs", "|": "bars"}


def _refuse_other_separators(names: list[str], given: str) -> None:
    """A header that reads as one column holding another separator: the file is separated by
    it, not by commas. It said "label column 'y' not found; columns are ['id;x1;x2;y']"."""
    if len(names) != 1:
        return
    for separator, word in _OTHER_SEPARATORS.items():
        if separator in names[0]:
            raise DataError(
                f"the header of {given} reads as one column {names[0][:80]!r}: the file seems "
                f"separated by {word}; a CSV here is separated by commas, with '.' as the "
                "decimal mark: export it so (in a spreadsheet, as comma-separated values), or "
                "convert it (pandas: read_csv(sep=..., decimal=...).to_csv(index=False))"
            )


def read_csv(
    real: str,
    given: str,
    fmt: str,
    label_column: str | Sequence[str],
    limits: Limits,
    ignore_columns: Sequence[str] = (),
) -> Loaded:
    names = _csv_header(real, given, fmt, limits)
    # Reads one row past the limit, so an oversized upload is refused without parsing all of it.
    nrows = None if limits.rows is None else limits.rows + 1
    message = f"dataset expands to more than the limit {limits.decompressed_bytes} bytes"
    labels = [label_column] if isinstance(label_column, str) else list(label_column)
    as_text = {name: str for name in labels if name in names}
    # R's write.csv / write.table writes row names as a first field the header does not name:
    # pandas reads them as the index (dropped below), as it did before rows were read strictly.
    row_names = _row_names_written(real, fmt, len(names))
    try:
        frame = _read_csv_stream(
            real, fmt, limits.decompressed_bytes, message,
            lambda stream: (
                pd.read_csv(stream, nrows=nrows, low_memory=False, dtype=as_text)
                if row_names
                else _strict_read(stream, nrows=nrows, dtype=as_text)
            ),
        )  # fmt: skip
        if row_names:
            frame = frame.reset_index(drop=True)
    except DataError:
        raise
    except _CSV_ERRORS as exc:
        raise _unreadable(exc, real, given) from None
    check_rows(len(frame), limits.rows, at_least=True)
    _refuse_written_index(frame, names)
    frame = _without_empty_unnamed(frame, names, ignore_columns)
    for name in as_text:
        frame[name] = _typed_labels(frame[name])
    return from_table(frame, label_column, ignore_columns)


# The lines a file's start is judged by for row names written without a header cell.
_ROW_NAME_LINES = 50
_ROW_NAME_BYTES = 1 << 20


def _row_names_written(real: str, fmt: str, n_names: int) -> bool:
    """Whether every one of the first data lines has one field more than the header, the
    first of them a name (R's row names: "r1",1,3,1 under "a","b","y"), and not just one
    line (an unquoted comma in a cell, which shifted every column left)."""

    def first_lines(stream: Any) -> list[list[str]]:
        # A bounded prefix, whole lines only: one endless line (a bomb) costs no more.
        head = stream.read(_ROW_NAME_BYTES)
        head = head[: head.rfind(b"\n") + 1]
        text = io.StringIO(head.decode("utf-8-sig", errors="replace"), newline="")
        records = []
        for record in csv.reader(text):
            if record:
                records.append(record)
            if len(records) > _ROW_NAME_LINES:
                break
        return records[1:]  # after the header

    try:
        records = _read_csv_stream(real, fmt, None, "", first_lines)
    except (*_CSV_ERRORS, csv.Error, DataError):
        return False
    # A comma ending every data line (an empty last field) is not a row name: read strictly.
    return (
        len(records) >= 2
        and all(len(r) == n_names + 1 for r in records)
        and not all(r[-1] == "" for r in records)
    )


def _strict_read(stream: Any, **kw: Any) -> pd.DataFrame:
    """pd.read_csv without its implicit index: a first data row with one field more than the
    header (an unquoted comma in a cell) made pandas take the first column as the index and
    shift every column left, without a word. A comma ending every line is still read."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", pd.errors.ParserWarning)
        try:
            return pd.read_csv(stream, low_memory=False, index_col=False, **kw)
        except pd.errors.ParserWarning:
            raise DataError(
                "a row has more fields than the header: a cell holding a comma must be quoted "
                '("Smith, John")'
            ) from None


def _typed_labels(column: pd.Series) -> pd.Series:
    """A label column read as text, as numbers (or booleans) only where every value is written
    as that number is (``0``, ``1``, ``-2``, ``2.5``, ``True``) and no two values become one:
    pandas' own guess read ``007`` as 7 and merged ``1``, ``1.0`` and ``01`` into one class.
    Missing values (an empty cell, ``NA``) stay missing."""
    # Spaces around a number are not part of it (pandas read "1, 0" as 0), around text they are.
    stripped = column.map(str.strip, na_action="ignore")
    present = stripped.dropna()
    texts = pd.unique(present.to_numpy(dtype=object))
    if all(text in _BOOLEANS for text in texts):
        typed = stripped.map(_BOOLEANS, na_action="ignore")
        if len({_BOOLEANS[t] for t in texts}) == len(texts):
            return typed.astype(object if column.isna().any() else bool)
        return column
    numbers = pd.to_numeric(present, errors="coerce")
    if numbers.isna().any() or not all(_canonical(t) for t in texts):
        return column
    if numbers.nunique() != len(texts):  # 1 and 1.0: two classes as written
        return column
    return pd.to_numeric(stripped)


_BOOLEANS = {"True": True, "False": False, "true": True, "false": False, "TRUE": True,
             "FALSE": False}  # fmt: skip


def _canonical(text: str) -> bool:
    """Whether ``text`` is written as Python writes its number (so reading it loses nothing)."""
    try:
        return str(int(text)) == text
    except ValueError:
        pass
    try:
        return repr(float(text)) == text
    except ValueError:
        return False


def _without_empty_unnamed(
    frame: pd.DataFrame, names: Sequence[str], ignore_columns: Sequence[str] = ()
) -> pd.DataFrame:
    """The table without its columns that have no name and no value: what a comma ending
    every line (the header's too) makes, which was a feature named 'Unnamed: 3' of missing
    values, refused, and which no ignore_columns could name from the command line."""
    if frame.shape[1] != len(names):
        return frame
    empty = [
        position
        for position, name in enumerate(names)
        if not name.strip()
        and frame.columns[position] not in set(ignore_columns)  # named by the user: theirs
        and frame.iloc[:, position].isna().all()
    ]
    if not empty:
        return frame
    return frame.drop(columns=frame.columns[empty])


def _refuse_written_index(frame: pd.DataFrame, names: Sequence[str]) -> None:
    """A column without a name that holds the row numbers is a table's index written with it
    (pandas' ``to_csv`` writes one unless ``index=False``). Read as a feature it would tie the
    model to the rows' order, which in a file sorted by its label is the label itself."""
    watch = _IndexWatch(names)
    watch.see(frame)
    watch.refuse()


class _IndexWatch:
    """:func:`_refuse_written_index` over a file read in chunks: each unnamed column stays a
    candidate while every chunk is integers continuing 0, 1, 2, ... (or 1, 2, 3, ...)."""

    def __init__(self, names: Sequence[str]) -> None:
        self.n_names = len(names)
        self.start: dict[int, int] = {p: -1 for p, name in enumerate(names) if not name.strip()}
        self.rows = 0

    def see(self, chunk: pd.DataFrame) -> None:
        if chunk.shape[1] != self.n_names:
            self.start.clear()
        for position in list(self.start):
            column = chunk.iloc[:, position]
            if len(column) == 0:
                continue
            values = column.to_numpy()
            start = self.start[position]
            if self.rows == 0 and pd.api.types.is_integer_dtype(column):
                start = int(values[0])
            first = start + self.rows
            if (
                start not in (0, 1)
                or not pd.api.types.is_integer_dtype(column)
                or not np.array_equal(values, np.arange(first, first + len(values)))
            ):
                del self.start[position]
            else:
                self.start[position] = start
        self.rows += len(chunk)

    def refuse(self) -> None:
        if self.rows == 0 or not self.start:
            return
        position, start = next(iter(self.start.items()))
        raise DataError(
            f"column {position + 1} has no name and holds the row numbers "
            f"{start} to {start + self.rows - 1}: an index written with the table (pandas' "
            "to_csv writes one unless index=False), which would be read as a feature; write "
            "the file without it, or drop that column"
        )


def _count_csv_rows(real: str, given: str, fmt: str, limits: Limits, names: Sequence[str]) -> int:
    """Rows of a CSV, read in chunks and refused as soon as they pass the limit, or as an index
    written with the table (:func:`_refuse_written_index`) once all are read."""
    message = f"dataset expands to more than the limit {limits.decompressed_bytes} bytes"
    watch = _IndexWatch(names)

    nrows = None if limits.rows is None else limits.rows + 1  # one past the limit, as read_csv
    chunk_rows = _CSV_COUNT_CHUNK_ROWS if nrows is None else min(nrows, _CSV_COUNT_CHUNK_ROWS)

    def count(stream: Any) -> int:
        n_rows = 0
        with pd.read_csv(stream, chunksize=chunk_rows, nrows=nrows, low_memory=False) as chunks:
            for chunk in chunks:
                n_rows += len(chunk)
                check_rows(n_rows, limits.rows, at_least=True)
                watch.see(chunk)
        watch.refuse()
        return n_rows

    try:
        return _read_csv_stream(real, fmt, limits.decompressed_bytes, message, count)
    except DataError:
        raise
    except _CSV_ERRORS as exc:
        raise _unreadable(exc, real, given) from None


def csv_shape(real: str, given: str, fmt: str, limits: Limits) -> TableShape:
    """The header's names and the rows counted in chunks: memory bounded by the limits."""
    names = _csv_header(real, given, fmt, limits)
    n_rows = _count_csv_rows(real, given, fmt, limits, names)
    return TableShape(n_rows=n_rows, n_columns=len(names), columns=tuple(names))
