"""load_dataset and inspect_file: the same limits and refusals whatever the format."""

from __future__ import annotations

import gzip
import os
import re

import numpy as np
import pandas as pd
import pytest

from metro.datasets import (
    FLOAT32_ROUNDING_LIMIT,
    DataError,
    DataLimitError,
    TableShape,
    check_float32_precision,
    inspect_file,
    load_dataset,
)


@pytest.mark.parametrize("fmt", [".csv", ".csv.gz", ".parquet"])
def test_duplicate_column_names_are_refused(tmp_path, fmt):
    """pandas renames a second 'y' to 'y.1': a feature that is a copy of the label."""
    if fmt == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        path = str(tmp_path / "dup.parquet")
        columns = [pa.array([0.5, 1.5, 2.5]), pa.array([0, 1, 0]), pa.array([0, 1, 0])]
        pq.write_table(pa.Table.from_arrays(columns, names=["a", "y", "y"]), path)
    else:
        text = b"a,y,y,b,b\n0.5,0,0,1,1\n1.5,1,1,2,2\n2.5,0,0,3,3\n"
        path = str(tmp_path / f"dup{fmt}")
        with open(path, "wb") as out:
            out.write(gzip.compress(text) if fmt == ".csv.gz" else text)
    expected = "'y' appears" if fmt == ".parquet" else "'b', 'y' appear"
    with pytest.raises(DataError, match=re.escape(f"column names must be unique; {expected}")):
        load_dataset(path, label_column="y")
    with pytest.raises(DataError, match="column names must be unique"):
        inspect_file(path)


def test_compressed_npz_and_parquet_are_judged_by_their_metadata(tmp_path):
    npz = tmp_path / "zeros.npz"
    np.savez_compressed(npz, X=np.zeros((200_000, 10)), y=np.arange(200_000) % 2)
    assert os.path.getsize(npz) < 200_000  # 17.6 MB once decompressed
    with pytest.raises(DataLimitError, match=r"expands to 17600\d+ bytes, more than the limit"):
        load_dataset(str(npz), max_decompressed_bytes=1 << 20)
    with pytest.raises(DataLimitError, match=re.escape("200000 rows, more than the limit 1000")):
        inspect_file(str(npz), max_rows=1000)
    with pytest.raises(DataLimitError, match=re.escape("10 columns, more than the limit 5")):
        load_dataset(str(npz), max_columns=5)
    assert inspect_file(str(npz)) == TableShape(n_rows=200_000, n_columns=10, columns=None)
    parquet = tmp_path / "zeros.parquet"
    pd.DataFrame({"a": np.zeros(200_000), "y": np.arange(200_000) % 2}).to_parquet(parquet)
    with pytest.raises(DataLimitError, match=re.escape("200000 rows, more than the limit 1000")):
        load_dataset(str(parquet), max_rows=1000)
    with pytest.raises(DataLimitError, match=re.escape("2 columns, more than the limit 1")):
        inspect_file(str(parquet), max_columns=1)
    assert inspect_file(str(parquet)) == TableShape(n_rows=200_000, n_columns=2, columns=("a", "y"))


def test_inspect_file_reads_the_shape(tmp_path, table):
    path = tmp_path / "a.csv"
    table.to_csv(path, index=False)
    assert inspect_file(str(path), max_rows=6) == TableShape(
        n_rows=6, n_columns=4, columns=("x1", "x2", "flag", "y")
    )


def _timestamps(spread_seconds: float, n: int = 200) -> np.ndarray:
    rng = np.random.default_rng(0)
    return 1.7e9 + rng.uniform(0, spread_seconds, n)


@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_a_column_float32_rounds_together_is_refused_naming_it(dtype):
    """Unix seconds over ten minutes: float32 keeps them in 128-second steps, 5 or 6 values for
    what were 200; the standardization inside the model comes after the cast, too late."""
    X = np.column_stack([_timestamps(600), np.arange(200.0)]).astype(dtype)
    assert np.unique(X[:, 0].astype(np.float32)).size < 8  # what the cast leaves
    with pytest.raises(DataError, match=r"^column 'when' cannot be held in float32") as caught:
        check_float32_precision(X, feature_names=("when", "n"))
    message = str(caught.value)
    assert f"its mean, {X[:, 0].astype(np.float64).mean():.12g}, say" in message
    assert "and the same from the rows you predict" in message


def test_columns_float32_holds_pass_and_the_limit_is_relative_to_the_spread():
    # A day of seconds (rounding 64 s against a spread of 25,000), money in cents, small ints.
    day = _timestamps(86_400)
    check_float32_precision(np.column_stack([day, 1e6 + np.arange(200.0), np.ones(200)]))
    # Subtracting the constant the message names makes the refused column fine.
    minutes = _timestamps(600)
    check_float32_precision((minutes - minutes.mean())[:, None])
    # The limit is relative to the spread: near 1e6 float32 rounds by up to 0.031 (half its
    # step of 0.0625), 22% of a spread of 0.144 and 3.6% of a spread of 0.87.
    uniform = np.random.default_rng(1).uniform(0, 1, 500)
    assert 0.036 < FLOAT32_ROUNDING_LIMIT < 0.22
    with pytest.raises(DataError, match=r"float32 rounds them by up to 0\.031"):
        check_float32_precision((1e6 + 0.5 * uniform)[:, None])
    check_float32_precision((1e6 + 3 * uniform)[:, None])
    # Real columns the first limit (1%) refused: a GPS latitude within about 10 m, and
    # constants float32 cannot write exactly (an edition 3.4, a probability 1/3).
    gps = 40.7128 + np.random.default_rng(2).normal(0, 1e-4, 500)
    check_float32_precision(np.column_stack([gps, np.full(500, 3.4), np.full(500, 1 / 3)]))


def test_float32_input_and_images_are_not_checked():
    check_float32_precision(_timestamps(3600).astype(np.float32)[:, None])
    check_float32_precision(np.full((4, 1, 2, 2), 1.7e9) + np.arange(4.0)[:, None, None, None])


def test_load_dataset_refuses_such_a_column(tmp_path):
    path = tmp_path / "t.csv"
    rows = [f"{1_700_000_000 + 13 * i},{i % 2}" for i in range(100)]
    path.write_text("when,y\n" + "\n".join(rows) + "\n")
    with pytest.raises(DataError, match="column 'when' cannot be held in float32"):
        load_dataset(str(path), label_column="y")


# -- features that look like an id ----------------------------------------------------------------


def _with_column(values: np.ndarray, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.column_stack([values, rng.normal(size=(values.size, 2))])


@pytest.mark.parametrize("name", ["txn_id", "customerId", "CustomerID", "ID", "row.id", "uuid"])
def test_distinct_integers_named_as_an_id_are_id_like_over_any_range(name):
    """Transaction ids sampled from a range six times the rows (an extract's ids) filled no
    range and were trained on without a word; named as an id, they are named."""
    from metro.datasets import id_like_features

    rng = np.random.default_rng(1)
    ids = rng.choice(np.arange(100_000, 124_000), size=4000, replace=False)
    for values in (ids, np.sort(ids)):
        assert id_like_features(_with_column(values), [name, "a", "b"]) == [name]


@pytest.mark.parametrize("name", ["paid", "amount_cents", "valid", "PAID", "width"])
def test_distinct_integers_over_a_wide_range_not_named_as_an_id_are_not(name):
    """A measurement (amounts in cents, distinct on every row of a sample) is not called an
    id for being distinct alone; nor is a name that merely ends in the letters i, d."""
    from metro.datasets import id_like_features

    rng = np.random.default_rng(2)
    values = rng.choice(np.arange(0, 10_000_000), size=500, replace=False)
    assert id_like_features(_with_column(values), [name, "a", "b"]) == []


def test_an_id_named_column_that_repeats_a_value_is_not_id_like():
    """A shop id shared by many rows is a category, not the rows' own id."""
    from metro.datasets import id_like_features

    shops = np.repeat(np.arange(100), 5)
    assert id_like_features(_with_column(shops), ["shop_id", "a", "b"]) == []
    assert id_like_features(_with_column(np.arange(500) + 7), None) == ["column 0"]
