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
    real: str, given: str, label_column: str | Sequence[str], limits: Limits
) -> Loaded:
    import pyarrow as pa

    try:
        with open(real, "rb") as fh:
            frame = _open_parquet(fh, limits).read().to_pandas()
    except DataError:
        raise
    except (ValueError, OSError, pa.ArrowException) as exc:
        raise _unreadable(exc, real, given) from None
    return from_table(frame, label_column)


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
