"""load_dataset and inspect_file: the same limits and refusals whatever the format."""

from __future__ import annotations

import gzip
import os
import re

import numpy as np
import pandas as pd
import pytest

from metro.datasets import DataError, DataLimitError, TableShape, inspect_file, load_dataset


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
