"""Reading a Parquet file as features and raw labels, judged by its footer before its data.

The footer states the rows, the columns and the bytes each row group holds once decompressed,
so a file over a limit is refused before a row of it is read. pyarrow is imported when a Parquet
file is read, not when the library is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from metro.datasets._base import DataError, Loaded, TableShape, parser_reason
from metro.datasets._limits import Limits, check_columns, check_expanded_size, check_rows
from metro.datasets._table import from_table


def _open_parquet(fh: Any, limits: Limits) -> Any:
    """The ParquetFile, once its footer shows it within the limits; nothing else is read yet."""
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(fh)
    meta = parquet.metadata
    check_columns([str(name) for name in parquet.schema_arrow.names], limits)
    check_rows(meta.num_rows, limits.rows)
    check_expanded_size(
        sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups)), limits
    )
    return parquet


def _unreadable(exc: BaseException, real: str, given: str) -> DataError:
    return DataError(f"could not read {given} as Parquet: {parser_reason(exc, real, given)}")


def read_parquet(
    real: str,
    given: str,
    label_column: str | Sequence[str],
    limits: Limits,
    ignore_columns: Sequence[str] = (),
) -> Loaded:
    import pyarrow as pa

    try:
        with open(real, "rb") as fh:
            table = _open_parquet(fh, limits).read()
        _refuse_long_text(table, label_column, ignore_columns)
        frame = table.to_pandas()
    except DataError:
        raise
    except (ValueError, OSError, pa.ArrowException) as exc:
        raise _unreadable(exc, real, given) from None
    return from_table(frame, label_column, ignore_columns)


# The longest text a numeric feature's cell may hold: a number written out, with ample room
# for padding and digits (float() reads "  1.5" and a thousand zeros after "1.").
_LONGEST_NUMBER_TEXT = 10_000


def _refuse_long_text(
    table: Any, label_column: str | Sequence[str], ignore_columns: Sequence[str] = ()
) -> None:
    """A text feature column (read as numbers where every value is one) with a cell longer than
    any number is written: refused from Arrow's own lengths, before pandas copies each text into
    a Python object and tries it as a number (a 10 KB file with one 200 MB cell took the reader
    1.5 GB and 8 s, to say it was not numeric)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    labels = {label_column} if isinstance(label_column, str) else set(label_column)
    labels |= set(ignore_columns)  # not features either: any text they hold is theirs
    texts = (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary,
             pa.types.is_large_binary)  # fmt: skip
    for name, column in zip(table.column_names, table.columns, strict=True):
        kind = column.type
        if pa.types.is_dictionary(kind):  # a categorical: its texts are its dictionaries'
            kind = kind.value_type
            values = [chunk.dictionary for chunk in column.chunks]
        else:
            values = list(column.chunks)
        if str(name) in labels or not any(is_text(kind) for is_text in texts):
            continue
        lengths = [pc.max(pc.binary_length(v)).as_py() for v in values if len(v)]
        longest = max((n for n in lengths if n is not None), default=None)
        if longest is not None and longest > _LONGEST_NUMBER_TEXT:
            raise DataError(
                f"feature column '{name}' is not numeric (a value of {longest} characters)"
            )


def parquet_shape(real: str, given: str, limits: Limits) -> TableShape:
    """Rows and column names from the footer alone."""
    import pyarrow as pa

    try:
        with open(real, "rb") as fh:
            parquet = _open_parquet(fh, limits)
            names = [str(name) for name in parquet.schema_arrow.names]
            n_rows = int(parquet.metadata.num_rows)
    except DataError:
        raise
    except (ValueError, OSError, pa.ArrowException) as exc:
        raise _unreadable(exc, real, given) from None
    return TableShape(n_rows=n_rows, n_columns=len(names), columns=tuple(names))
