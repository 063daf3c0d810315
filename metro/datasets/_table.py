"""A table read from CSV or Parquet, as features and raw labels: shared by both readers, so that
a column is numeric, missing or misnamed by the same rules whichever format it came in."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from metro.datasets._base import (
    MAX_SHOWN_COLUMNS,
    DataError,
    LabelColumnError,
    Loaded,
    python_scalar,
    show_values,
)
from metro.datasets._limits import Limits, check_columns


def check_ignore_columns(
    ignore_columns: Sequence[str], label_columns: Sequence[str] = ()
) -> list[str]:
    """``ignore_columns`` as a list of distinct names, none of them a label column, or a
    ``DataError`` saying which is not."""
    if isinstance(ignore_columns, str) or not all(isinstance(n, str) for n in ignore_columns):
        raise TypeError("ignore_columns must be a list of column names")
    names = list(ignore_columns)
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise DataError(f"ignore_columns names {show_values(repeated)} more than once")
    labels = [n for n in names if n in set(label_columns)]
    if labels:
        raise DataError(
            f"ignore_columns names the label column {show_values(labels)}: a label is never a "
            "feature; leave it out of ignore_columns"
        )
    return names


def from_table(
    frame: pd.DataFrame, label_column: str | Sequence[str], ignore_columns: Sequence[str] = ()
) -> Loaded:
    """Features and raw labels of a table. ``label_column`` is one column (raw labels ``(n,)``)
    or, for multi-label data, a sequence of columns (raw labels ``(n, L)``, in that order).
    ``ignore_columns`` are neither (an id, a note, a date): left out of the features, whatever
    they hold."""
    columns = [str(c) for c in frame.columns]
    frame.columns = pd.Index(columns)
    wanted = [label_column] if isinstance(label_column, str) else list(label_column)
    extra = f" ({len(columns)} in total)" if len(columns) > MAX_SHOWN_COLUMNS else ""
    for name in wanted:
        if name not in columns:
            raise LabelColumnError(
                f"label column '{name}' not found; columns are "
                f"{show_values(columns, MAX_SHOWN_COLUMNS)}{extra}"
            )
    ignored = set(check_ignore_columns(ignore_columns, wanted))
    missing = [name for name in ignore_columns if name not in columns]
    if missing:
        raise DataError(
            f"ignore_columns names {show_values(missing)}, not a column of the table; columns "
            f"are {show_values(columns, MAX_SHOWN_COLUMNS)}{extra}"
        )
    check_columns(columns, Limits())
    features = [c for c in columns if c not in wanted and c not in ignored]
    if not features:
        held = ", ".join(f"'{name}'" for name in wanted)
        noun = "column" if len(wanted) == 1 else "columns"
        rest = " and ignored ones" if ignored else ""
        raise DataError(f"no feature columns: the table holds only the label {noun} {held}{rest}")
    values = []
    for name in features:
        column = frame[name]
        if pd.api.types.is_datetime64_any_dtype(column) or pd.api.types.is_timedelta64_dtype(
            column
        ):
            # pandas would read them as nanoseconds (1.6e18 for a date of 2020), silently.
            raise DataError(
                f"feature column '{name}' holds dates or times ({column.dtype}); convert it to "
                "a number (days since a date, say) or leave it out of the features "
                "(ignore_columns)"
            )
        if pd.api.types.is_bool_dtype(column) or (
            pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_complex_dtype(column)
        ):
            values.append(column.to_numpy(dtype=np.float64, na_value=np.nan))
            continue
        # Object columns whose every value is a number (Decimals, booleans with gaps, numeric
        # strings) are still numeric data; anything else is a mistake worth naming.
        try:
            numeric = pd.to_numeric(column, errors="coerce")
        except OverflowError:  # an integer of hundreds of digits: no float holds it
            raise DataError(
                f"feature column '{name}' holds a value too large for a number"
            ) from None
        bad = column[numeric.isna() & column.notna()]
        if len(bad) or pd.api.types.is_complex_dtype(numeric):
            example = f" (e.g. value {python_scalar(bad.iloc[0])!r})" if len(bad) else ""
            raise DataError(
                f"feature column '{name}' is not numeric{example}; features are numbers: "
                "encode it as numbers, or leave it out of the features (ignore_columns)"
            )
        values.append(numeric.to_numpy(dtype=np.float64, na_value=np.nan))
    X = np.column_stack(values)
    if isinstance(label_column, str):
        return X, frame[label_column].to_numpy(), tuple(features)
    return X, frame[wanted].to_numpy(), tuple(features)
