"""Reading CSV files, plain and gzip: values, user-facing errors and limits."""

from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys
import zlib

import numpy as np
import pytest

from metro.datasets import DataError, DataLimitError, inspect_file, load_dataset


def _write_csv(path, text: str):
    path.write_text(text)
    return str(path)


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
        DataError, match=re.escape("label column 'y' not found; columns are ['a', 'b', 'target']")
    ):
        load_dataset(path)
    header = ",".join(f"c{i}" for i in range(12))
    wide = _write_csv(tmp_path / "wide.csv", header + "\n" + ",".join("1" * 12) + "\n")
    with pytest.raises(DataError, match=re.escape("'c9', ...] (12 in total)")):
        load_dataset(wide)


def test_csv_non_numeric_feature(tmp_path):
    path = _write_csv(tmp_path / "a.csv", "size,city,y\n1,Paris,0\n2,Rome,1\n")
    with pytest.raises(
        DataError, match=re.escape("feature column 'city' is not numeric (e.g. value 'Paris');")
    ):
        load_dataset(path)
    mixed = _write_csv(tmp_path / "b.csv", "size,y\n1,0\n2.5,1\nabc,0\n")
    with pytest.raises(
        DataError, match=re.escape("feature column 'size' is not numeric (e.g. value 'abc')")
    ):
        load_dataset(mixed)


def test_ignored_columns_are_left_out_of_the_features(tmp_path):
    """An id, a name, a date: columns that are not features, left out whatever they hold (a
    text column failed the load, and a numeric id was trained on as a feature)."""
    path = _write_csv(
        tmp_path / "a.csv",
        "id,name,size,when,y\n7,Ann,1,2020-01-01,0\n8,Bo,2,2021-05-01,1\n9,Cy,3,x,0\n",
    )
    with pytest.raises(DataError, match=r"'name' is not numeric .*\(ignore_columns\)"):
        load_dataset(path)
    ds = load_dataset(path, ignore_columns=["id", "name", "when"])
    assert ds.feature_names == ("size",) and ds.X[:, 0].tolist() == [1.0, 2.0, 3.0]
    for ignored, said in [
        (["name", "when", "zip"], r"ignore_columns names \['zip'\], not a column of the table"),
        (["name", "name"], r"ignore_columns names \['name'\] more than once"),
        (["y"], r"ignore_columns names the label column \['y'\]"),
        (["id", "name", "when", "size"], r"no feature columns: .* and ignored ones"),
    ]:
        with pytest.raises(DataError, match=said):
            load_dataset(path, ignore_columns=ignored)
    with pytest.raises(DataError, match="a built-in data set has no named columns"):
        load_dataset("builtin://breast_cancer", ignore_columns=["id"])


def test_csv_only_label_column(tmp_path):
    path = _write_csv(tmp_path / "a.csv", "y\n0\n1\n")
    with pytest.raises(DataError, match="no feature columns"):
        load_dataset(path)


def test_csv_nan_and_inf_features(tmp_path):
    path = _write_csv(tmp_path / "a.csv", "x1,x2,y\n1,2,0\n1,,1\n1,inf,0\n,3,1\n")
    with pytest.raises(
        DataError,
        match=re.escape("features contain 3 NaN or infinite values (first at row 1, column 'x2')"),
    ):
        load_dataset(path)


def test_csv_value_too_large_for_float32(tmp_path):
    path = _write_csv(tmp_path / "a.csv", "x,y\n1,0\n1e300,1\n")
    with pytest.raises(DataError, match="1 of them too large for float32"):
        load_dataset(path)


def test_csv_missing_labels(tmp_path):
    path = _write_csv(tmp_path / "a.csv", "x,y\n1,0\n2,\n3,1\n")
    with pytest.raises(
        DataError, match=re.escape("labels contain 1 missing or non-finite values (first at row 1)")
    ):
        load_dataset(path)


def test_csv_without_rows(tmp_path):
    path = _write_csv(tmp_path / "a.csv", "x,y\n")
    with pytest.raises(DataError, match="dataset has no rows"):
        load_dataset(path)


def test_csv_max_rows(tmp_path, table):
    path = tmp_path / "a.csv"
    table.to_csv(path, index=False)
    with pytest.raises(
        DataError, match=re.escape("dataset has at least 4 rows, more than the limit 3")
    ):
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
    with pytest.raises(
        DataLimitError, match=re.escape("at least 1001 rows, more than the limit 1000")
    ):
        load_dataset(path, max_rows=1000)
    with pytest.raises(
        DataLimitError, match=re.escape("at least 1001 rows, more than the limit 1000")
    ):
        inspect_file(path, max_rows=1000)
    with pytest.raises(
        DataLimitError, match=re.escape("expands to more than the limit 100000 bytes")
    ):
        inspect_file(path, max_decompressed_bytes=100_000)


def test_csv_gzip_bomb_of_one_endless_line_is_refused_with_bounded_memory(tmp_path):
    """256 MB of a single line: no row limit helps, only the decompressed-bytes limit does. Run
    in a fresh interpreter, whose peak resident memory says what the read cost."""
    path = _gzip_bomb(tmp_path / "line.csv.gz", b"a,y\n", b"1", 256 << 20)
    script = f"""
import resource, sys
from metro.datasets import DataLimitError, load_dataset
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
    with pytest.raises(DataLimitError, match=re.escape("20001 columns, more than the limit 100")):
        load_dataset(path, max_columns=100)
    # A header longer than any allowed one is refused after a bounded read, before parsing.
    endless = _gzip_bomb(tmp_path / "header.csv.gz", b"", b"a,", 4 << 20)
    with pytest.raises(DataLimitError, match=r"the header of .* is longer than 1048576 bytes"):
        inspect_file(endless, max_columns=100)
    with pytest.raises(ValueError, match="max_columns"):
        load_dataset(path, max_columns=0)


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
    with pytest.raises(DataError, match=re.escape(reason.format(name))) as info:
        load_dataset(name)
    assert str(tmp_path) not in str(info.value)  # only the path the user gave is shown


def test_an_integer_too_large_for_a_number_names_its_column(tmp_path):
    # pandas raised OverflowError, which the worker reported as an internal error.
    path = tmp_path / "huge.csv"
    path.write_text("a,b,y\n" + "9" * 400 + ",1,0\n2,3,1\n4,5,0\n")
    with pytest.raises(DataError, match="feature column 'a' holds a value too large for a number"):
        load_dataset(str(path))


def test_csv_index_written_with_the_table_is_refused(tmp_path, table):
    """pandas' to_csv writes the index unless told not to: an unnamed column of row numbers,
    which as a feature would tie the model to the rows' order (here sorted by the label)."""
    ordered = table.sort_values("y").reset_index(drop=True)
    path = tmp_path / "indexed.csv"
    ordered.to_csv(path)  # index=True, the default
    with pytest.raises(
        DataError, match=re.escape("column 1 has no name and holds the row numbers 0 to 5")
    ):
        load_dataset(str(path))
    ordered.index += 1  # numbered from 1, as R's write.csv does
    ordered.to_csv(path)
    with pytest.raises(DataError, match=re.escape("the row numbers 1 to 6: an index")):
        load_dataset(str(path))
    # An unnamed column of other values, or a named column of row numbers, is a feature.
    _write_csv(path, ",y\n5,0\n3,1\n")
    assert load_dataset(str(path)).feature_names == ("Unnamed: 0",)
    _write_csv(path, "row,y\n0,0\n1,1\n")
    assert load_dataset(str(path)).feature_names == ("row",)


def test_an_index_is_refused_by_inspect_file_too_across_its_chunks(tmp_path, table, monkeypatch):
    """Uploaded without a label column, a file is only counted (in chunks), never loaded: the
    index check runs on the chunks, so the upload is refused as load_dataset refuses it, rather
    than accepted and its job failed later by the worker."""
    import metro.datasets._csv as csv_module

    path = tmp_path / "indexed.csv"
    table.to_csv(path)
    with pytest.raises(
        DataError, match=re.escape("column 1 has no name and holds the row numbers 0 to 5")
    ):
        inspect_file(str(path))
    monkeypatch.setattr(csv_module, "_CSV_COUNT_CHUNK_ROWS", 4)  # rows 0-3, then 4-5
    with pytest.raises(DataError, match=re.escape("the row numbers 0 to 5")):
        inspect_file(str(path))
    # A range that breaks in a later chunk, restarts there, or is not integers in one of them
    # is a feature, as it is for load_dataset.
    for column in ("0\n1\n2\n3\n5\n6\n", "0\n1\n2\n3\n0\n1\n", "0\n1\n2\n3\n4.5\n5\n"):
        rows = [f"{v},{i % 2}" for i, v in enumerate(column.split())]
        _write_csv(path, ",y\n" + "\n".join(rows) + "\n")
        assert inspect_file(str(path)).n_rows == 6
        assert load_dataset(str(path)).feature_names == ("Unnamed: 0",)


def test_one_class_written_two_ways_is_refused_not_made_two(tmp_path):
    """' yes' beside 'yes', 'Yes' beside 'yes', '1.0' beside '1', or '?' for a missing label:
    each was a class of its own, and the refusal's advice (an average over the classes) made a
    model with a class ' yes' beside 'yes'."""
    from metro.datasets import load_multi_target

    path = tmp_path / "labels.csv"
    for written, said in [
        (
            ["yes", " yes", "no"],
            r"labels 'yes' and ' yes' differ only in surrounding spaces, letter case",
        ),
        (["Yes", "yes", "no"], "labels 'Yes' and 'yes' differ"),
        (["1", "1.0", "0"], "labels '1' and '1.0' differ"),
        (["a", "?", "b"], r"label '\?' marks a missing label"),
    ]:
        _write_csv(path, "a,y\n" + "".join(f"{i},{w}\n" for i, w in enumerate(written * 4)))
        for read in (load_dataset, load_multi_target):
            with pytest.raises(DataError, match=said):
                read(str(path))
    # ... while classes that only look close are classes: '+' and '-' (UCI's credit data),
    # keys 'C' and 'c', codes '1.1' and '1.10', 'A1' and 'a1', '-01' and '-1'
    for written in (["+", "-"], ["C", "c", "x"], ["1.1", "1.10", "2"], ["A1", "a1", "x"],
                    ["-01", "-1", "2"]):  # fmt: skip
        _write_csv(path, "a,y\n" + "".join(f"{i},{w}\n" for i, w in enumerate(written * 4)))
        if len(written) == 2:
            assert load_dataset(str(path), positive_label="+").positive_label == "+"
        else:
            assert set(load_multi_target(str(path)).classes) == set(written)


@pytest.mark.parametrize(
    ("written", "classes"),
    [
        (["007", "010", "100"], ("007", "010", "100")),  # pandas: 7, 10, 100
        (["1", "01", "2"], ("01", "1", "2")),  # pandas: 1, 1, 2 (a code's zero is kept)
        (["0", "1", "2"], (0, 1, 2)),
        (["0.5", "1.5", "2"], (0.5, 1.5, 2.0)),
        (["True", "False", "True"], (False, True)),
        (["1e3", "5", "7"], ("1e3", "5", "7")),  # not written as its number is
        ([" 0", " 1", " 2"], (0, 1, 2)),  # "a, 0": spaces are not part of a number (as pandas)
    ],
)
def test_labels_are_read_as_written(tmp_path, written, classes):
    """A label column is read as text and typed only where no value changes or merges."""
    from metro.datasets import load_multi_target

    path = tmp_path / "labels.csv"
    _write_csv(path, "a,y\n" + "".join(f"{i},{w}\n" for i, w in enumerate(written * 4)))
    if len(set(classes)) == 2:
        loaded = load_dataset(str(path), positive_label=True)
        assert loaded.y.tolist() == [1, 0, 1] * 4
        return
    assert load_multi_target(str(path)).classes == classes
    # A binary file's positive label is matched as written too.
    _write_csv(path, "a,y\n" + "".join(f"{i},{w}\n" for i, w in enumerate(written[:2] * 4)))
    assert load_dataset(str(path), positive_label=written[0]).y.tolist() == [1, 0] * 4


def test_a_missing_label_is_missing_whatever_its_spelling(tmp_path):
    path = tmp_path / "labels.csv"
    _write_csv(path, "a,y\n1,0\n2,1\n3,NA\n4,\n5,1\n")
    with pytest.raises(DataError, match="labels contain 2 missing"):
        load_dataset(str(path))


def test_a_csv_separated_by_semicolons_is_named_as_such(tmp_path):
    """A spreadsheet's "CSV" in a locale with decimal commas: it said "label column 'y' not
    found; columns are ['id;x1;y']"."""
    path = _write_csv(tmp_path / "a.csv", "id;x1;y\n1;1,5;0\n2;2,5;1\n")
    for read in (load_dataset, inspect_file):
        with pytest.raises(DataError, match=r"reads as one column 'id;x1;y': .* by semicolons"):
            read(path)
    tabs = _write_csv(tmp_path / "b.csv", "x1\ty\n1\t0\n2\t1\n")
    with pytest.raises(DataError, match="separated by tabs"):
        load_dataset(tabs)


def test_a_row_with_a_field_too_many_is_refused_and_a_comma_ending_each_line_is_read(tmp_path):
    """pandas took the first column as the rows' index where the first row had one field more
    than the header (an unquoted comma in a cell), and shifted every column left without a
    word; a comma ending every line made an empty feature 'Unnamed: 3'."""
    ragged = _write_csv(tmp_path / "a.csv", "note,x1,y\nlate, again,1,0\nok,2,1\nok,3,0\n")
    with pytest.raises(DataError, match="a row has more fields than the header"):
        load_dataset(ragged, ignore_columns=["note"])
    # R's write.csv: every row starts with its row name, which the header does not name
    r_table = _write_csv(tmp_path / "r.csv", '"a","b","y"\n"r1",1,3,1\n"r2",2,6,0\n"r3",3,1,1\n')
    ds = load_dataset(r_table)
    assert ds.feature_names == ("a", "b") and ds.X.tolist() == [[1, 3], [2, 6], [3, 1]]
    # an empty unnamed column the user names is theirs to ignore
    trailing = _write_csv(tmp_path / "t.csv", "x1,x2,y,\n1,2,0,\n2,3,1,\n")
    assert load_dataset(trailing, ignore_columns=["Unnamed: 3"]).feature_names == ("x1", "x2")
    for text in ("x1,x2,y,\n1,2,0,\n2,3,1,\n", "x1,x2,y\n1,2,0,\n2,3,1,\n"):
        ds = load_dataset(_write_csv(tmp_path / "b.csv", text))
        assert ds.feature_names == ("x1", "x2") and ds.X.tolist() == [[1, 2], [2, 3]]
        assert ds.y.tolist() == [0, 1]
