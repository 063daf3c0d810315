"""Tests for metro.data: every source, every user-facing error, and the split guarantees."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
import zlib

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metro.data import (
    DataError,
    DataLimitError,
    Dataset,
    TableShape,
    inspect_file,
    load_dataset,
    parse_labels,
    split_indices,
    subset,
)


def _msg(text: str) -> str:
    """A literal ``match=`` pattern."""
    return re.escape(text)


def _write_csv(path, text: str):
    path.write_text(text)
    return str(path)


@pytest.fixture
def table() -> pd.DataFrame:
    """Six rows whose first feature is the row number, so alignment with y can be checked."""
    return pd.DataFrame(
        {
            "x1": np.arange(6, dtype=np.int64),
            "x2": [0.5, 1.5, 2.5, 3.5, 4.5, 5.5],
            "flag": [True, False, True, False, True, False],
            "y": [0, 1, 1, 0, 1, 0],
        }
    )


# --------------------------------------------------------------------------------------------------
# Dataset and subset


def test_dataset_properties_tabular():
    ds = Dataset(
        X=np.ones((4, 3)),
        y=[0, 1, 1, 0],
        feature_names=["a", "b", "c"],
        positive_label=1,
        negative_label=0,
        source="mem",
    )
    assert ds.X.dtype == np.float32 and ds.y.dtype == np.int64
    assert ds.feature_names == ("a", "b", "c")
    assert (ds.n_samples, ds.n_features, ds.is_image) == (4, 3, False)
    assert ds.n_positives == 2 and ds.positive_fraction == 0.5


def test_dataset_properties_images():
    ds = Dataset(np.zeros((5, 3, 4, 6)), np.array([1, 0, 0, 0, 0]), None, "cat", "dog", "mem")
    assert ds.is_image and ds.n_features == 72 and ds.positive_fraction == pytest.approx(0.2)


def test_dataset_rejects_inconsistent_arrays():
    with pytest.raises(ValueError, match="must contain only 0 and 1"):
        Dataset(np.zeros((2, 1)), np.array([0, 2]), None, 1, 0, "mem")
    with pytest.raises(ValueError, match="y must have shape"):
        Dataset(np.zeros((2, 1)), np.array([0, 1, 1]), None, 1, 0, "mem")
    with pytest.raises(ValueError, match="2 feature names"):
        Dataset(np.zeros((2, 3)), np.array([0, 1]), ("a", "b"), 1, 0, "mem")


def test_subset_keeps_rows_aligned_and_metadata():
    ds = Dataset(np.arange(10).reshape(5, 2), [0, 1, 0, 1, 1], ("a", "b"), "yes", "no", "src")
    part = subset(ds, np.array([4, 1]))
    np.testing.assert_array_equal(part.X, [[8, 9], [2, 3]])
    np.testing.assert_array_equal(part.y, [1, 1])
    assert (part.feature_names, part.positive_label, part.negative_label, part.source) == (
        ("a", "b"),
        "yes",
        "no",
        "src",
    )
    masked = subset(ds, ds.y == 0)
    np.testing.assert_array_equal(masked.X[:, 0], [0, 4])
    empty = subset(ds, [])
    assert empty.n_samples == 0 and empty.positive_fraction == 0.0
    with pytest.raises(IndexError):
        subset(ds, [5])
    with pytest.raises(IndexError):
        subset(ds, [-1])


# --------------------------------------------------------------------------------------------------
# parse_labels


@pytest.mark.parametrize(
    ("raw", "positive", "negative", "expected"),
    [
        ([0, 1, 1, 0], 1, 0, [0, 1, 1, 0]),
        ([-1, 1, 1, -1], 1, -1, [0, 1, 1, 0]),
        ([True, False, True], True, False, [1, 0, 1]),
        (["0", "1", "1"], "1", "0", [0, 1, 1]),
        (["-1", "+1"], "+1", "-1", [0, 1]),
        ([0.0, 1.0], 1.0, 0.0, [0, 1]),
        (["false", "TRUE"], "TRUE", "false", [0, 1]),
    ],
)
def test_parse_labels_default_positive(raw, positive, negative, expected):
    y, pos, neg = parse_labels(np.array(raw))
    np.testing.assert_array_equal(y, expected)
    assert y.dtype == np.int64
    assert (pos, neg) == (positive, negative)
    assert type(pos) is type(positive)  # python scalars, so they serialise to JSON
    json.dumps([pos, neg])


def test_parse_labels_requires_positive_for_other_labels():
    with pytest.raises(
        DataError, match=_msg("positive_label is required: the labels are ['cat', 'dog']")
    ):
        parse_labels(["dog", "cat", "dog"])
    with pytest.raises(DataError, match=_msg("positive_label is required: the labels are [2, 4]")):
        parse_labels([4, 2])


def test_parse_labels_string_labels_with_positive():
    y, pos, neg = parse_labels(np.array(["dog", "cat", "dog"], dtype=object), positive_label="cat")
    np.testing.assert_array_equal(y, [0, 1, 0])
    assert (pos, neg) == ("cat", "dog")


def test_parse_labels_explicit_positive_overrides_default():
    y, pos, neg = parse_labels([-1, 1, 1], positive_label=-1)
    np.testing.assert_array_equal(y, [1, 0, 0])
    assert (pos, neg) == (-1, 1)


@pytest.mark.parametrize(
    ("raw", "given", "positive"),
    [
        ([2, 4, 4], "4", 4),  # a number sent as text over HTTP
        ([2, 4, 4], "4.0", 4),
        ([2.0, 4.0], 4, 4.0),
        (["2", "4"], 4, "4"),  # the reverse
        ([True, False], "true", True),
        ([True, False], 1, True),
        ([0, 1], True, 1),
    ],
)
def test_parse_labels_matches_positive_across_types(raw, given, positive):
    y, pos, _ = parse_labels(raw, positive_label=given)
    assert pos == positive and type(pos) is type(positive)
    assert y.sum() == sum(1 for v in raw if v == positive)


def test_parse_labels_unknown_positive_names_classes():
    with pytest.raises(
        DataError, match=_msg("positive_label 'bird' is not one of the labels ['cat', 'dog']")
    ):
        parse_labels(["cat", "dog"], positive_label="bird")
    with pytest.raises(DataError, match=_msg("positive_label 5 is not one of the labels [0, 1]")):
        parse_labels([0, 1], positive_label=5)
    with pytest.raises(DataError, match="positive_label must be a string, number or boolean"):
        parse_labels([0, 1], positive_label=[1])


def test_parse_labels_needs_exactly_two_classes():
    with pytest.raises(DataError, match=_msg("found 1 class: [3]")):
        parse_labels([3, 3, 3])
    with pytest.raises(DataError, match=_msg("found 3 classes: ['a', 'b', 'c']")):
        parse_labels(["c", "a", "b"])
    with pytest.raises(DataError, match=_msg("found 7 classes: [0, 1, 2, 3, 4, ...]")):
        parse_labels(list(range(7)))
    with pytest.raises(DataError, match=_msg("found 0 classes: []")):
        parse_labels([])


def test_parse_labels_rejects_missing_and_bad_shapes():
    with pytest.raises(
        DataError, match=_msg("labels contain 2 missing or non-finite values (first at row 1)")
    ):
        parse_labels([0.0, np.nan, 1.0, np.inf])
    with pytest.raises(
        DataError, match=_msg("labels contain 1 missing or non-finite values (first at row 2)")
    ):
        parse_labels(np.array(["a", "b", None], dtype=object), positive_label="a")
    y, _, _ = parse_labels(np.array([[0], [1]]))  # a column vector is fine
    np.testing.assert_array_equal(y, [0, 1])
    with pytest.raises(DataError, match="one-dimensional"):
        parse_labels(np.zeros((2, 2)))


# --------------------------------------------------------------------------------------------------
# CSV


def test_csv_loads_features_labels_and_names(tmp_path, table):
    path = tmp_path / "train.csv"
    table.to_csv(path, index=False)
    ds = load_dataset(str(path))
    assert ds.X.dtype == np.float32 and ds.X.shape == (6, 3)
    assert ds.feature_names == ("x1", "x2", "flag")
    np.testing.assert_array_equal(ds.X[:, 0], np.arange(6))  # rows stay in file order
    np.testing.assert_array_equal(ds.y, table["y"])
    np.testing.assert_array_equal(ds.X[:, 2], [1, 0, 1, 0, 1, 0])  # booleans become 0/1
    assert (ds.positive_label, ds.negative_label, ds.source) == (1, 0, str(path))


def test_csv_gz_file_uri_and_uppercase_extension(tmp_path, table):
    gz = tmp_path / "train.CSV.GZ"
    with gzip.open(gz, "wt") as fh:
        table.to_csv(fh, index=False)
    ds = load_dataset(gz.as_uri())
    assert ds.source == gz.as_uri() and ds.n_samples == 6
    np.testing.assert_array_equal(ds.y, table["y"])


def test_csv_file_uri_with_escaped_characters(tmp_path, table):
    path = tmp_path / "my data.csv"
    table.to_csv(path, index=False)
    assert "%20" in path.as_uri()
    assert load_dataset(path.as_uri()).n_samples == 6


def test_csv_string_labels_and_custom_label_column(tmp_path):
    path = _write_csv(tmp_path / "a.csv", "a,species\n1,cat\n2,dog\n3,cat\n")
    with pytest.raises(DataError, match="positive_label is required"):
        load_dataset(path, label_column="species")
    ds = load_dataset(path, label_column="species", positive_label="cat")
    np.testing.assert_array_equal(ds.y, [1, 0, 1])
    assert (ds.positive_label, ds.negative_label, ds.feature_names) == ("cat", "dog", ("a",))


def test_csv_positive_label_given_as_text(tmp_path):
    path = _write_csv(tmp_path / "a.csv", "a,y\n1,2\n2,7\n3,7\n")
    ds = load_dataset(path, positive_label="7")
    np.testing.assert_array_equal(ds.y, [0, 1, 1])
    assert ds.positive_label == 7


def test_csv_missing_label_column(tmp_path):
    path = _write_csv(tmp_path / "a.csv", "a,b,target\n1,2,0\n3,4,1\n")
    with pytest.raises(
        DataError, match=_msg("label column 'y' not found; columns are ['a', 'b', 'target']")
    ):
        load_dataset(path)
    header = ",".join(f"c{i}" for i in range(12))
    wide = _write_csv(tmp_path / "wide.csv", header + "\n" + ",".join("1" * 12) + "\n")
    with pytest.raises(DataError, match=_msg("'c9', ...] (12 in total)")):
        load_dataset(wide)


def test_csv_non_numeric_feature(tmp_path):
    path = _write_csv(tmp_path / "a.csv", "size,city,y\n1,Paris,0\n2,Rome,1\n")
    with pytest.raises(
        DataError, match=_msg("feature column 'city' is not numeric (e.g. value 'Paris')")
    ):
        load_dataset(path)
    mixed = _write_csv(tmp_path / "b.csv", "size,y\n1,0\n2.5,1\nabc,0\n")
    with pytest.raises(
        DataError, match=_msg("feature column 'size' is not numeric (e.g. value 'abc')")
    ):
        load_dataset(mixed)


def test_csv_only_label_column(tmp_path):
    path = _write_csv(tmp_path / "a.csv", "y\n0\n1\n")
    with pytest.raises(DataError, match="no feature columns"):
        load_dataset(path)


def test_csv_nan_and_inf_features(tmp_path):
    path = _write_csv(tmp_path / "a.csv", "x1,x2,y\n1,2,0\n1,,1\n1,inf,0\n,3,1\n")
    with pytest.raises(
        DataError,
        match=_msg("features contain 3 NaN or infinite values (first at row 1, column 'x2')"),
    ):
        load_dataset(path)


def test_csv_value_too_large_for_float32(tmp_path):
    path = _write_csv(tmp_path / "a.csv", "x,y\n1,0\n1e300,1\n")
    with pytest.raises(DataError, match="1 of them too large for float32"):
        load_dataset(path)


def test_csv_missing_labels(tmp_path):
    path = _write_csv(tmp_path / "a.csv", "x,y\n1,0\n2,\n3,1\n")
    with pytest.raises(
        DataError, match=_msg("labels contain 1 missing or non-finite values (first at row 1)")
    ):
        load_dataset(path)


def test_csv_without_rows(tmp_path):
    path = _write_csv(tmp_path / "a.csv", "x,y\n")
    with pytest.raises(DataError, match="dataset has no rows"):
        load_dataset(path)


def test_csv_max_rows(tmp_path, table):
    path = tmp_path / "a.csv"
    table.to_csv(path, index=False)
    with pytest.raises(DataError, match=_msg("dataset has at least 4 rows, more than the limit 3")):
        load_dataset(str(path), max_rows=3)
    assert load_dataset(str(path), max_rows=6).n_samples == 6
    with pytest.raises(ValueError, match="max_rows"):
        load_dataset(str(path), max_rows=0)


def _gzip_bomb(path, header: bytes, repeated: bytes, count: int):
    """A gzip file of ``header`` then ``repeated`` ``count`` times, written without ever holding
    the expanded bytes: a few hundred KB on disk for hundreds of MB of text."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31: a gzip container
    with open(path, "wb") as out:
        out.write(packer.compress(header))
        block = repeated * max(1, (1 << 20) // len(repeated))
        per_block = len(block) // len(repeated)
        for _ in range(count // per_block):
            out.write(packer.compress(block))
        out.write(packer.compress(repeated * (count % per_block)))
        out.write(packer.flush())
    return str(path)


def test_csv_gzip_bomb_stops_at_the_row_limit(tmp_path):
    path = _gzip_bomb(tmp_path / "bomb.csv.gz", b"a,y\n", b"1,0\n0,1\n", 1_000_000)
    assert os.path.getsize(path) < 100_000  # 2 million rows, 8 MB of text
    with pytest.raises(DataLimitError, match=_msg("at least 1001 rows, more than the limit 1000")):
        load_dataset(path, max_rows=1000)
    with pytest.raises(DataLimitError, match=_msg("at least 1001 rows, more than the limit 1000")):
        inspect_file(path, max_rows=1000)
    with pytest.raises(DataLimitError, match=_msg("expands to more than the limit 100000 bytes")):
        inspect_file(path, max_decompressed_bytes=100_000)


def test_csv_gzip_bomb_of_one_endless_line_is_refused_with_bounded_memory(tmp_path):
    """256 MB of a single line: no row limit helps, only the decompressed-bytes limit does. Run
    in a fresh interpreter, whose peak resident memory says what the read cost."""
    path = _gzip_bomb(tmp_path / "line.csv.gz", b"a,y\n", b"1", 256 << 20)
    script = f"""
import resource, sys
from metro.data import DataLimitError, load_dataset
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    load_dataset({path!r}, max_decompressed_bytes=8 << 20)
except DataLimitError as exc:
    print("refused:", exc)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print("grew_kb", after - before)
"""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert "refused: dataset expands to more than the limit 8388608 bytes" in result.stdout
    grew_kb = int(result.stdout.split("grew_kb")[1])
    assert grew_kb < 64 * 1024, result.stdout  # the line alone is 256 MB


def test_csv_header_with_too_many_columns(tmp_path):
    names = ",".join(f"c{i}" for i in range(20_000))
    path = _write_csv(tmp_path / "wide.csv", f"{names},y\n" + "0," * 20_000 + "1\n")
    with pytest.raises(DataLimitError, match=_msg("20001 columns, more than the limit 100")):
        load_dataset(path, max_columns=100)
    # A header longer than any allowed one is refused after a bounded read, before parsing.
    endless = _gzip_bomb(tmp_path / "header.csv.gz", b"", b"a,", 4 << 20)
    with pytest.raises(DataLimitError, match=r"the header of .* is longer than 1048576 bytes"):
        inspect_file(endless, max_columns=100)
    with pytest.raises(ValueError, match="max_columns"):
        load_dataset(path, max_columns=0)


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
    with pytest.raises(DataError, match=_msg(f"column names must be unique; {expected}")):
        load_dataset(path, label_column="y")
    with pytest.raises(DataError, match="column names must be unique"):
        inspect_file(path)


def test_npz_feature_names_must_be_unique(tmp_path):
    path = tmp_path / "a.npz"
    np.savez(path, X=np.zeros((4, 2)), y=np.array([1, 0, 0, 1]), feature_names=np.array(["a", "a"]))
    with pytest.raises(DataError, match=_msg("column names must be unique; 'a' appears")):
        load_dataset(str(path))


def test_compressed_npz_and_parquet_are_judged_by_their_metadata(tmp_path):
    npz = tmp_path / "zeros.npz"
    np.savez_compressed(npz, X=np.zeros((200_000, 10)), y=np.arange(200_000) % 2)
    assert os.path.getsize(npz) < 200_000  # 17.6 MB once decompressed
    with pytest.raises(DataLimitError, match=r"expands to 17600\d+ bytes, more than the limit"):
        load_dataset(str(npz), max_decompressed_bytes=1 << 20)
    with pytest.raises(DataLimitError, match=_msg("200000 rows, more than the limit 1000")):
        inspect_file(str(npz), max_rows=1000)
    with pytest.raises(DataLimitError, match=_msg("10 columns, more than the limit 5")):
        load_dataset(str(npz), max_columns=5)
    assert inspect_file(str(npz)) == TableShape(n_rows=200_000, n_columns=10, columns=None)
    parquet = tmp_path / "zeros.parquet"
    pd.DataFrame({"a": np.zeros(200_000), "y": np.arange(200_000) % 2}).to_parquet(parquet)
    with pytest.raises(DataLimitError, match=_msg("200000 rows, more than the limit 1000")):
        load_dataset(str(parquet), max_rows=1000)
    with pytest.raises(DataLimitError, match=_msg("2 columns, more than the limit 1")):
        inspect_file(str(parquet), max_columns=1)
    assert inspect_file(str(parquet)) == TableShape(n_rows=200_000, n_columns=2, columns=("a", "y"))


def test_inspect_file_reads_the_shape(tmp_path, table):
    path = tmp_path / "a.csv"
    table.to_csv(path, index=False)
    assert inspect_file(str(path), max_rows=6) == TableShape(
        n_rows=6, n_columns=4, columns=("x1", "x2", "flag", "y")
    )


def test_nul_in_a_path_is_a_data_error(tmp_path):
    with pytest.raises(DataError, match="contains a NUL character"):
        load_dataset("file:///data/a%00.csv")
    with pytest.raises(DataError, match="contains a NUL character"):
        load_dataset(str(tmp_path / "a\x00.csv"))


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("empty.csv", b"", "could not read {} as CSV: "),
        (
            "latin1.csv",
            "x,y\n\xe9,0\n".encode("latin-1"),
            "could not read {} as CSV: the file is not UTF-8 text",
        ),
        ("broken.csv.gz", b"not gzip at all", "could not read {} as CSV: "),
        ("ragged.csv", b'x,y\n1,0\n"2,1\n', "could not read {} as CSV: "),
    ],
)
def test_csv_unreadable(tmp_path, monkeypatch, name, content, reason):
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_bytes(content)
    with pytest.raises(DataError, match=_msg(reason.format(name))) as info:
        load_dataset(name)
    assert str(tmp_path) not in str(info.value)  # only the path the user gave is shown


# --------------------------------------------------------------------------------------------------
# Parquet


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
        match=_msg("features contain 1 NaN or infinite values (first at row 1, column 'n')"),
    ):
        load_dataset(str(path), label_column="label", positive_label="spam")
    frame["n"] = pd.array([1, 2, 3], dtype="Int64")
    frame.to_parquet(path)
    ds = load_dataset(str(path), label_column="label", positive_label="spam")
    np.testing.assert_array_equal(ds.y, [1, 0, 1])


def test_parquet_errors(tmp_path, table):
    path = tmp_path / "a.parquet"
    table.to_parquet(path)
    with pytest.raises(DataError, match=_msg("dataset has 6 rows, more than the limit 2")):
        load_dataset(str(path), max_rows=2)
    with pytest.raises(DataError, match="label column 'label' not found"):
        load_dataset(str(path), label_column="label")
    table.assign(city=["a", "b", "c", "d", "e", "f"]).to_parquet(path)
    with pytest.raises(
        DataError, match=_msg("feature column 'city' is not numeric (e.g. value 'a')")
    ):
        load_dataset(str(path))
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1 definitely not parquet")
    with pytest.raises(DataError, match=_msg(f"could not read {broken} as Parquet: ")):
        load_dataset(str(broken))


# --------------------------------------------------------------------------------------------------
# NPZ


def test_npz_tabular_with_feature_names(tmp_path):
    X = np.arange(12, dtype=np.float64).reshape(4, 3)
    path = tmp_path / "a.npz"
    np.savez(path, X=X, y=np.array([1, 0, 0, 1]), feature_names=np.array(["a", "b", "c"]))
    ds = load_dataset(str(path), label_column="ignored")
    np.testing.assert_array_equal(ds.X, X)
    np.testing.assert_array_equal(ds.y, [1, 0, 0, 1])
    assert ds.feature_names == ("a", "b", "c") and not ds.is_image


def test_npz_grayscale_gets_channel_axis(tmp_path):
    X = np.random.default_rng(0).integers(0, 256, (3, 5, 7), dtype=np.uint8)
    path = tmp_path / "a.npz"
    np.savez(path, X=X, y=np.array([0, 1, 0]))
    ds = load_dataset(str(path))
    assert ds.X.shape == (3, 1, 5, 7) and ds.is_image
    np.testing.assert_array_equal(ds.X[:, 0], X)  # no rescaling: values stay 0..255


def test_npz_channels_last_is_transposed(tmp_path):
    X = np.zeros((2, 5, 6, 3), dtype=np.uint8)  # N, H, W, C
    X[1, 2, 4, 2] = 7
    X[0, 4, 0, 1] = 9
    path = tmp_path / "a.npz"
    np.savez(path, X=X, y=np.array([0, 1]))
    ds = load_dataset(str(path))
    assert ds.X.shape == (2, 3, 5, 6)
    assert ds.X[1, 2, 2, 4] == 7 and ds.X[0, 1, 4, 0] == 9
    assert ds.X.sum() == 16


@pytest.mark.parametrize("shape", [(2, 3, 5, 6), (2, 1, 8, 8), (2, 3, 4, 3)])
def test_npz_channels_first_is_kept(tmp_path, shape):
    X = np.random.default_rng(1).random(shape)
    path = tmp_path / "a.npz"
    np.savez(path, X=X, y=np.array([0, 1]))
    ds = load_dataset(str(path))
    np.testing.assert_allclose(ds.X, X.astype(np.float32))


def test_npz_errors(tmp_path):
    path = tmp_path / "a.npz"
    np.savez(path, X=np.zeros((3, 2)), labels=np.zeros(3))
    with pytest.raises(
        DataError, match=_msg("npz file must contain arrays 'X' and 'y'; found ['X', 'labels']")
    ):
        load_dataset(str(path))
    np.savez(path, X=np.zeros((100, 2)), y=np.r_[np.zeros(50), np.ones(49)])
    with pytest.raises(DataError, match=_msg("X has 100 rows but y has 99")):
        load_dataset(str(path))
    np.savez(path, X=np.zeros(4), y=np.array([0, 1, 0, 1]))
    with pytest.raises(DataError, match=r"array 'X' must have 2 .* got shape \(4,\)"):
        load_dataset(str(path))
    np.savez(path, X=np.array([["a"], ["b"]]), y=np.array([0, 1]))
    with pytest.raises(DataError, match="array 'X' must be numeric"):
        load_dataset(str(path))
    np.savez(path, X=np.zeros((2, 2)), y=np.array([0, 1]), feature_names=np.array(["a"]))
    with pytest.raises(DataError, match="feature_names must be 2 strings"):
        load_dataset(str(path))
    np.savez(path, X=np.zeros((5, 2)), y=np.array([0, 1, 0, 1, 0]))
    with pytest.raises(DataError, match=_msg("dataset has 5 rows, more than the limit 4")):
        load_dataset(str(path), max_rows=4)
    np.savez(path, X=np.array([[np.nan, 1.0], [1.0, 1.0]]), y=np.array([0, 1]))
    with pytest.raises(DataError, match=_msg("(first at row 0, column 0)")):
        load_dataset(str(path))
    images = np.zeros((2, 1, 3, 3))
    images[1, 0, 2, 1] = np.inf
    np.savez(path, X=images, y=np.array([0, 1]))
    with pytest.raises(
        DataError, match=_msg("1 NaN or infinite values (first at row 1, channel 0, pixel (2, 1))")
    ):
        load_dataset(str(path))


def test_npz_refuses_pickles_and_garbage(tmp_path):
    path = tmp_path / "a.npz"
    np.savez(path, X=np.array([[1], [2]], dtype=object), y=np.array([0, 1]))
    with pytest.raises(DataError, match="arrays of Python objects are not accepted"):
        load_dataset(str(path))
    path.write_bytes(b"\x80\x04garbage that np.load would unpickle")
    with pytest.raises(
        DataError, match=_msg(f"could not read {path} as NPZ: the file is not a zip")
    ):
        load_dataset(str(path))
    path.write_bytes(b"PK\x03\x04truncated")
    with pytest.raises(DataError, match=_msg(f"could not read {path} as NPZ: ")):
        load_dataset(str(path))


# --------------------------------------------------------------------------------------------------
# Paths, formats and data roots


def test_unknown_format_and_missing_file(tmp_path):
    odd = tmp_path / "data.xyz"
    odd.write_text("x")
    with pytest.raises(
        DataError,
        match=_msg("unknown format '.xyz'; expected one of .csv, .csv.gz, .parquet, .npz"),
    ):
        load_dataset(str(odd))
    with pytest.raises(DataError, match=_msg("file not found: nowhere/data.csv")):
        load_dataset("nowhere/data.csv")
    with pytest.raises(DataError, match=_msg("not a regular file")):
        load_dataset(str(tmp_path))
    with pytest.raises(DataError, match="unsupported URI scheme 'https://'"):
        load_dataset("https://example.com/data.csv")
    with pytest.raises(DataError, match="file URIs must be absolute"):
        load_dataset("file://data.csv")
    with pytest.raises(DataError, match="uri is empty"):
        load_dataset("  ")


@pytest.fixture
def roots(tmp_path, table):
    """An allowed root holding a.csv, and a file next to it that must stay out of reach."""
    root = tmp_path / "root"
    root.mkdir()
    table.to_csv(root / "a.csv", index=False)
    table.to_csv(tmp_path / "secret.csv", index=False)
    return root


def test_data_roots_allow_files_inside(roots):
    assert load_dataset(str(roots / "a.csv"), data_roots=[roots]).n_samples == 6
    assert load_dataset((roots / "a.csv").as_uri(), data_roots=[str(roots)]).n_samples == 6
    (roots / "link.csv").symlink_to(roots / "a.csv")  # a link that stays inside is fine
    assert load_dataset(str(roots / "link.csv"), data_roots=[roots]).n_samples == 6


def test_data_roots_block_dotdot_escape(roots):
    with pytest.raises(DataError, match="path is outside the allowed data roots"):
        load_dataset(str(roots / ".." / "secret.csv"), data_roots=[roots])
    with pytest.raises(DataError, match="path is outside the allowed data roots"):
        load_dataset(f"file://{roots}/../secret.csv", data_roots=[roots])


def test_data_roots_block_symlink_escape(roots, tmp_path):
    (roots / "sneaky.csv").symlink_to(tmp_path / "secret.csv")
    with pytest.raises(DataError, match="path is outside the allowed data roots"):
        load_dataset(str(roots / "sneaky.csv"), data_roots=[roots])
    (roots / "dir").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(DataError, match="path is outside the allowed data roots"):
        load_dataset(str(roots / "dir" / "secret.csv"), data_roots=[roots])


def test_data_roots_checked_before_existence(roots, tmp_path):
    # A missing file outside the roots must not be distinguishable from an existing one.
    with pytest.raises(DataError, match="outside the allowed data roots"):
        load_dataset(str(tmp_path / "missing.csv"), data_roots=[roots])
    with pytest.raises(DataError, match="outside the allowed data roots"):
        load_dataset(str(roots / "a.csv"), data_roots=[])
    # A sibling directory whose name merely starts with the root's is not inside it.
    sibling = tmp_path / "root2"
    sibling.mkdir()
    (sibling / "b.csv").write_text("x,y\n1,0\n2,1\n")
    with pytest.raises(DataError, match="outside the allowed data roots"):
        load_dataset(str(sibling / "b.csv"), data_roots=[roots])


def test_data_roots_do_not_apply_to_builtins(roots):
    assert load_dataset("builtin://breast_cancer", data_roots=[roots]).n_samples == 569


# --------------------------------------------------------------------------------------------------
# Built-ins


def test_builtin_breast_cancer():
    ds = load_dataset("builtin://breast_cancer")
    assert ds.X.shape == (569, 30) and ds.X.dtype == np.float32
    assert ds.n_positives == 212
    assert (ds.positive_label, ds.negative_label) == ("malignant", "benign")
    assert ds.feature_names is not None and ds.feature_names[0] == "mean radius"
    flipped = load_dataset("builtin://breast_cancer", positive_label="benign")
    assert flipped.n_positives == 357
    np.testing.assert_array_equal(flipped.y, 1 - ds.y)


def test_builtin_digits_one_vs_rest():
    ds = load_dataset("builtin://digits?positive=9")
    assert ds.X.shape == (1797, 64) and ds.n_positives == 180
    assert (ds.positive_label, ds.negative_label) == (9, "not 9")
    assert ds.X.min() == 0 and ds.X.max() == 16
    json.dumps([ds.positive_label, ds.negative_label])


def test_builtin_digits_pair_and_images():
    ds = load_dataset("builtin://digits?positive=3&negative=5")
    assert ds.X.shape == (365, 64) and ds.n_positives == 183
    assert (ds.positive_label, ds.negative_label) == (3, 5)
    images = load_dataset("builtin://digits?positive=3&negative=5&as_images=true")
    assert images.X.shape == (365, 1, 8, 8) and images.is_image and images.feature_names is None
    np.testing.assert_array_equal(images.X.reshape(365, 64), ds.X)
    np.testing.assert_array_equal(images.y, ds.y)
    reverse = load_dataset("builtin://digits?negative=3&positive=5")
    assert reverse.n_positives == 182


def test_builtin_synthetic():
    ds = load_dataset("builtin://synthetic")
    assert ds.X.shape == (2000, 20) and ds.feature_names == tuple(f"x{i}" for i in range(20))
    assert 0.03 < ds.positive_fraction < 0.08
    assert (ds.positive_label, ds.negative_label) == (1, 0)
    again = load_dataset("builtin://synthetic?seed=0")
    np.testing.assert_array_equal(ds.X, again.X)
    other = load_dataset("builtin://synthetic?seed=1")
    assert not np.array_equal(ds.X, other.X)
    small = load_dataset("builtin://synthetic?n_samples=300&n_features=2&positive_fraction=0.3")
    assert small.X.shape == (300, 2) and 0.2 < small.positive_fraction < 0.4


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        (
            "builtin://iris",
            "unknown builtin dataset 'iris'; expected one of breast_cancer, digits, synthetic",
        ),
        ("builtin://breast_cancer?scale=1", "unknown parameter 'scale'; valid parameters: none"),
        ("builtin://digits", "builtin://digits needs the parameter 'positive'"),
        ("builtin://digits?positive=10", "positive must be between 0 and 9, got 10"),
        ("builtin://digits?positive=x", "positive must be an integer, got 'x'"),
        ("builtin://digits?positive=3&negative=3", "negative must differ from positive (3)"),
        ("builtin://digits?positive=3&as_images=maybe", "as_images must be true or false"),
        ("builtin://digits?positive=3&positive=4", "parameter 'positive' is given twice"),
        ("builtin://digits?positive=3&size=2", "valid parameters: positive, negative, as_images"),
        (
            "builtin://synthetic?positive_fraction=2",
            "positive_fraction must be strictly between 0 and 1",
        ),
        ("builtin://synthetic?positive_fraction=lots", "positive_fraction must be a number"),
        ("builtin://synthetic?n_samples=-5", "n_samples must be between"),
        ("builtin://synthetic?n_features=1", "n_features must be between"),
        (
            "builtin://synthetic?noise=1",
            "valid parameters: n_samples, n_features, positive_fraction, seed",
        ),
    ],
)
def test_builtin_errors(uri, message):
    with pytest.raises(DataError, match=_msg(message)):
        load_dataset(uri)


def test_builtin_max_rows_checked_before_generating():
    with pytest.raises(DataError, match=_msg("dataset has 10000000 rows, more than the limit 100")):
        load_dataset("builtin://synthetic?n_samples=10000000&n_features=2", max_rows=100)
    with pytest.raises(DataError, match=_msg("dataset has 569 rows, more than the limit 100")):
        load_dataset("builtin://breast_cancer", max_rows=100)


# --------------------------------------------------------------------------------------------------
# split_indices


def _labels(n_pos: int, n_neg: int, seed: int = 0) -> np.ndarray:
    return (
        np.random.default_rng(seed)
        .permutation(np.r_[np.ones(n_pos), np.zeros(n_neg)])
        .astype(np.int64)
    )


def _check_partition(splits, y, tolerance: float = 1.0) -> None:
    parts = [splits.train, splits.validation, splits.test]
    joined = np.concatenate(parts)
    assert all(p.dtype == np.int64 for p in parts)
    assert all(np.all(np.diff(p) > 0) for p in parts)  # sorted, hence no duplicates inside a part
    np.testing.assert_array_equal(np.sort(joined), np.arange(y.size))  # disjoint and covering
    overall = y.mean()
    for part in parts:
        assert abs(y[part].sum() - part.size * overall) <= tolerance


@pytest.mark.parametrize(("n_pos", "n_neg"), [(50, 50), (10, 90), (7, 993), (33, 17), (1000, 3)])
def test_split_stratified_disjoint_covering(n_pos, n_neg):
    y = _labels(n_pos, n_neg)
    splits = split_indices(y, random_state=0, min_positives_per_split=0)
    _check_partition(splits, y)
    n = y.size
    assert splits.validation.size == int(np.ceil(0.25 * n))
    assert splits.test.size == int(np.ceil(0.2 * n))


def test_split_is_deterministic_per_seed():
    y = _labels(40, 160)
    a = split_indices(y, random_state=3)
    b = split_indices(y, random_state=3)
    c = split_indices(y, random_state=4)
    for name in ("train", "validation", "test"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert not np.array_equal(a.train, c.train)


def test_split_with_empty_parts():
    y = _labels(20, 80)
    no_test = split_indices(y, test_fraction=0, random_state=0)
    assert no_test.test.size == 0 and no_test.test.dtype == np.int64
    assert no_test.validation.size == 25
    _check_partition(no_test, y)
    train_only = split_indices(y, validation_fraction=0, test_fraction=0, random_state=0)
    assert train_only.train.size == 100
    assert train_only.validation.size == train_only.test.size == 0


@pytest.mark.parametrize(
    ("validation_fraction", "test_fraction"),
    [(-0.1, 0.2), (1.0, 0.0), (0.2, 1.0), (0.5, 0.5), (0.7, 0.4)],
)
def test_split_rejects_bad_fractions(validation_fraction, test_fraction):
    with pytest.raises(ValueError, match="must be"):
        split_indices(
            _labels(10, 10), validation_fraction=validation_fraction, test_fraction=test_fraction
        )


def test_split_rejects_non_binary_labels():
    with pytest.raises(ValueError, match="only 0 and 1"):
        split_indices(np.array([0, 1, 2]))


def test_split_too_few_positives():
    with pytest.raises(
        DataError,
        match=_msg(
            "too few positives (2) for a train/validation/test split "
            "with at least 1 positive in each split"
        ),
    ):
        split_indices(_labels(2, 98), random_state=0)
    with pytest.raises(
        DataError,
        match=_msg(
            "too few positives (3) for a train/validation split "
            "with at least 2 positives in each split"
        ),
    ):
        split_indices(_labels(3, 97), test_fraction=0, min_positives_per_split=2, random_state=0)
    with pytest.raises(
        DataError, match=_msg("too few negatives (1) for a train/validation/test split")
    ):
        split_indices(_labels(99, 1), random_state=0)


def test_split_too_small_parts():
    with pytest.raises(DataError, match=_msg("dataset has 2 rows, too few for a split")):
        split_indices(np.array([0, 1]))
    with pytest.raises(
        DataError,
        match=_msg(
            "the validation split would have 3 rows, too few for at least 2 positive and "
            "2 negative rows; use a larger validation_fraction"
        ),
    ):
        split_indices(_labels(5, 5), min_positives_per_split=2)


def test_split_moves_positives_to_meet_the_minimum():
    # Proportional shares would give the 5-row validation and test parts 0.25 positives each.
    y = _labels(5, 95)
    splits = split_indices(y, validation_fraction=0.05, test_fraction=0.05, random_state=0)
    assert [int(y[p].sum()) for p in (splits.train, splits.validation, splits.test)] == [3, 1, 1]
    _check_partition(splits, y, tolerance=2)


@settings(max_examples=40, deadline=None)
@given(
    n_pos=st.integers(3, 60),
    n_neg=st.integers(3, 200),
    validation_fraction=st.sampled_from([0.0, 0.1, 0.25, 0.3]),
    test_fraction=st.sampled_from([0.0, 0.15, 0.2]),
    seed=st.integers(0, 2**16),
)
def test_split_properties(n_pos, n_neg, validation_fraction, test_fraction, seed):
    y = _labels(n_pos, n_neg, seed)
    splits = split_indices(
        y,
        validation_fraction=validation_fraction,
        test_fraction=test_fraction,
        random_state=seed,
        min_positives_per_split=0,
    )
    _check_partition(splits, y)


def test_split_of_loaded_dataset_via_subset():
    ds = load_dataset("builtin://breast_cancer")
    splits = split_indices(ds.y, random_state=0)
    parts = [subset(ds, idx) for idx in (splits.train, splits.validation, splits.test)]
    assert sum(p.n_samples for p in parts) == 569
    assert sum(p.n_positives for p in parts) == 212
    assert all(abs(p.positive_fraction - ds.positive_fraction) < 0.01 for p in parts)


def test_relative_path_and_relative_root(tmp_path, monkeypatch, table):
    # Relative paths resolve against the working directory, like any command-line tool.
    monkeypatch.chdir(tmp_path)
    table.to_csv("rel.csv", index=False)
    assert load_dataset("rel.csv", data_roots=[os.curdir]).n_samples == 6
