"""Reading Parquet files."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from metro.datasets import DataError, load_dataset


@pytest.mark.parametrize("suffix", [".parquet", ".pq", ".PARQUET"])
def test_parquet_loads(tmp_path, table, suffix):
    path = tmp_path / f"train{suffix}"
    table.to_parquet(path, index=False)
    ds = load_dataset(str(path))
    assert ds.feature_names == ("x1", "x2", "flag")
    np.testing.assert_array_equal(ds.X[:, 1], table["x2"].astype(np.float32))
    np.testing.assert_array_equal(ds.y, table["y"])


def test_parquet_string_labels_and_nullable_features(tmp_path):
    frame = pd.DataFrame(
        {"n": pd.array([1, None, 3], dtype="Int64"), "label": ["spam", "ham", "spam"]}
    )
    path = tmp_path / "a.parquet"
    frame.to_parquet(path)
    with pytest.raises(
        DataError,
        match=re.escape("features contain 1 NaN or infinite values (first at row 1, column 'n')"),
    ):
        load_dataset(str(path), label_column="label", positive_label="spam")
    frame["n"] = pd.array([1, 2, 3], dtype="Int64")
    frame.to_parquet(path)
    ds = load_dataset(str(path), label_column="label", positive_label="spam")
    np.testing.assert_array_equal(ds.y, [1, 0, 1])


def test_parquet_errors(tmp_path, table):
    path = tmp_path / "a.parquet"
    table.to_parquet(path)
    with pytest.raises(DataError, match=re.escape("dataset has 6 rows, more than the limit 2")):
        load_dataset(str(path), max_rows=2)
    with pytest.raises(DataError, match="label column 'label' not found"):
        load_dataset(str(path), label_column="label")
    table.assign(city=["a", "b", "c", "d", "e", "f"]).to_parquet(path)
    with pytest.raises(
        DataError, match=re.escape("feature column 'city' is not numeric (e.g. value 'a')")
    ):
        load_dataset(str(path))
    # A text longer than any number: refused from Arrow's lengths, before pandas copies it,
    # as text or as a categorical's.
    for long in (["1", "2", "3", "4", "5", "x" * 20_000],
                 pd.Categorical(["1", "2", "3", "4", "5", "x" * 20_000])):  # fmt: skip
        table.assign(city=long).to_parquet(path)
        with pytest.raises(
            DataError, match=re.escape("feature column 'city' is not numeric (a value of 20000 ")
        ):
            load_dataset(str(path))
    padded = [" " * 450 + "1.5", "2", "3", "4", "5", "1." + "0" * 450]  # numbers all the same
    table.assign(city=padded).to_parquet(path)
    ds = load_dataset(str(path))
    np.testing.assert_array_equal(ds.X[:, -1], [1.5, 2, 3, 4, 5, 1])
    table.assign(city=["1", "2", "3", "4", "5", "6" * 300]).to_parquet(path)
    with pytest.raises(DataError, match="1 of them too large for float32"):
        load_dataset(str(path))  # within the length: the number rules as before
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1 definitely not parquet")
    with pytest.raises(DataError, match=re.escape(f"could not read {broken} as Parquet: ")):
        load_dataset(str(broken))


@pytest.mark.parametrize(
    "column",
    [
        pd.to_datetime(["2020-01-01", "2021-06-30", "2022-12-31", "2023-03-03"]),
        pd.to_timedelta([1, 2, 3, 4], unit="D"),
    ],
    ids=["datetime", "timedelta"],
)
def test_a_date_or_time_feature_is_refused_not_read_as_nanoseconds(tmp_path, column):
    frame = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "when": column, "y": [0, 1, 0, 1]})
    path = tmp_path / "dated.parquet"
    frame.to_parquet(path)
    with pytest.raises(DataError, match="feature column 'when' holds dates or times"):
        load_dataset(str(path))
