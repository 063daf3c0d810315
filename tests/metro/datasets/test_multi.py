"""Multi-class and multi-label tables: class order, label matrices, their refusals."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from metro.datasets import (
    MAX_CLASSES,
    DataError,
    MultiTargetDataset,
    load_multi_target,
    parse_classes,
    parse_label_matrix,
    stratify_key,
)


def _table(tmp_path, frame: pd.DataFrame, name: str = "t.csv") -> str:
    path = tmp_path / name
    if name.endswith(".parquet"):
        frame.to_parquet(path)
    else:
        frame.to_csv(path, index=False)
    return str(path)


def test_parse_classes_sorts_numbers_before_text_and_keeps_rows_aligned():
    y, classes = parse_classes(np.array(["b", 2, "a", 10, "b", 2, "a", 10], dtype=object))
    assert classes == (2, 10, "a", "b")
    assert y.tolist() == [3, 0, 2, 1, 3, 0, 2, 1]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (["a"] * 6, "at least two classes"),
        (["a", "a", "b", "b", "c"], "class 'c' has 1 positive row.*add rows to class 'c'"),
        ([1.0, np.nan, 2.0, 2.0], "missing or non-finite"),
        (list(range(MAX_CLASSES + 1)) * 2, "more than the limit"),
    ],
)
def test_parse_classes_refuses(raw, message):
    with pytest.raises(DataError, match=message):
        parse_classes(np.asarray(raw, dtype=object))


def test_parse_label_matrix_reads_each_column_and_names_a_bad_one():
    raw = np.array([[1, "true"], [0, "false"], [1, "false"], [0, "true"]], dtype=object)
    Y = parse_label_matrix(raw, ["a", "b"])
    assert Y.tolist() == [[1, 1], [0, 0], [1, 0], [0, 1]]
    with pytest.raises(DataError, match="label column 'b'"):
        parse_label_matrix(np.array([[1, 3], [0, 3], [1, 3], [0, 3]]), ["a", "b"])
    with pytest.raises(DataError, match="label 'a' has 1 positive row") as few:
        parse_label_matrix(np.array([[1, 1], [0, 0], [0, 1], [0, 0]]), ["a", "b"])
    assert str(few.value).endswith("add rows of each side, or leave 'a' out of label_columns")
    # A column that is not 0/1 says what one holds, not to give a positive_label or an
    # average, which an averaged job over label columns cannot.
    for column, shown in ((["yes", "no"] * 2, "['no', 'yes']"), ([0, 1, 2, 1], "[0, 1, 2]")):
        raw = np.column_stack([np.array([1, 0, 1, 0], dtype=object), np.array(column, object)])
        with pytest.raises(DataError) as info:
            parse_label_matrix(raw, ["a", "b"])
        assert str(info.value) == (
            "label column 'b' must hold 0 and 1 (or -1 and 1, false and true): one column per "
            f"label, 1 where a row has it; it holds {shown}"
        )


@pytest.mark.parametrize("name", ["t.csv", "t.parquet"])
def test_load_multiclass_and_multilabel_tables(tmp_path, name):
    frame = pd.DataFrame(
        {
            "x1": np.arange(8.0),
            "kind": ["cat", "dog", "eel", "cat", "dog", "eel", "cat", "dog"],
            "a": [1, 0, 1, 0, 1, 0, 1, 0],
            "b": [0, 0, 1, 1, 0, 0, 1, 1],
        }
    )
    uri = _table(tmp_path, frame, name)
    multi = load_multi_target(uri, label_column="kind")
    assert multi.target == "multiclass" and multi.classes == ("cat", "dog", "eel")
    assert multi.feature_names == ("x1", "a", "b")
    assert multi.y.tolist() == [0, 1, 2, 0, 1, 2, 0, 1]
    with pytest.raises(DataError, match="feature column 'kind' is not numeric"):
        load_multi_target(uri, label_columns=["b", "a"])
    # ... unless it is left out of the features (Parquet's text column too)
    kept = load_multi_target(uri, label_columns=["b", "a"], ignore_columns=["kind"])
    assert kept.feature_names == ("x1",) and kept.classes == ("b", "a")
    with pytest.raises(DataError, match="ignore_columns names the label column"):
        load_multi_target(uri, label_columns=["b", "a"], ignore_columns=["a"])
    other = _table(tmp_path, frame.drop(columns="kind"), "labels-" + name)
    labels = load_multi_target(other, label_columns=["b", "a"])
    assert labels.target == "multilabel" and labels.classes == ("b", "a")
    assert labels.feature_names == ("x1",)
    assert labels.y[:, 0].tolist() == frame["b"].tolist()
    assert labels.indicators.shape == (8, 2)
    # the same file read twice is one digest; another target is another
    assert multi.content_sha256 == load_multi_target(uri, label_column="kind").content_sha256
    assert multi.content_sha256 != labels.content_sha256


def test_load_multi_target_refusals(tmp_path):
    frame = pd.DataFrame({"x": np.arange(6.0), "y": [0, 1, 2, 0, 1, 2], "z": [0, 1] * 3})
    uri = _table(tmp_path, frame)
    with pytest.raises(DataError, match="label column 'w' not found"):
        load_multi_target(uri, label_columns=["z", "w"])
    with pytest.raises(DataError, match="must not repeat"):
        load_multi_target(uri, label_columns=["z", "z"])
    with pytest.raises(DataError, match="no feature columns"):
        load_multi_target(_table(tmp_path, frame[["y", "z"]], "u.csv"), label_columns=["y", "z"])
    with pytest.raises(DataError, match="label_columns needs a table"):
        load_multi_target("builtin://digits", label_columns=["a", "b"])


def test_a_multilabel_npz_names_its_labels_or_numbers_them(tmp_path):
    X = np.arange(16.0, dtype=np.float32).reshape(8, 2)
    Y = np.array([[1, 0, 1], [0, 1, 0], [1, 1, 0], [0, 0, 1]] * 2)
    named = tmp_path / "named.npz"
    np.savez(named, X=X, y=Y, label_names=np.array(["red", "green", "blue"]))
    labels = load_multi_target(str(named), label_columns=["blue", "red"])
    assert labels.target == "multilabel" and labels.classes == ("blue", "red")
    assert labels.y.tolist() == Y[:, [2, 0]].tolist()
    np.testing.assert_array_equal(labels.X, X)
    # Without label_names the columns are named by their index.
    plain = tmp_path / "plain.npz"
    np.savez(plain, X=X, y=Y)
    assert load_multi_target(str(plain), label_columns=["1", "0"]).y.tolist() == (
        Y[:, [1, 0]].tolist()
    )
    with pytest.raises(DataError, match=r"label column 'pink' not found; the labels of y are"):
        load_multi_target(str(named), label_columns=["red", "pink"])
    # Each label is read as a table's label column is (metro.datasets.parse_label_matrix).
    np.savez(tmp_path / "one.npz", X=X, y=np.c_[np.ones(8, int), Y[:, 1]])
    with pytest.raises(
        DataError, match="label column '0' holds the one value 1 on all 8 rows: a label every"
    ):
        load_multi_target(str(tmp_path / "one.npz"), label_columns=["0", "1"])
    bad = tmp_path / "bad.npz"
    np.savez(bad, X=X, y=Y, label_names=np.array(["a", "b"]))
    with pytest.raises(DataError, match="label_names must be 3 strings, one per column of y"):
        load_multi_target(str(bad), label_columns=["a", "b"])
    np.savez(bad, X=X, y=Y, label_names=np.array(["a", "a", "b"]))
    with pytest.raises(DataError, match="label_names must not repeat"):
        load_multi_target(str(bad), label_columns=["a", "b"])
    np.savez(bad, X=X, y=Y[:, 0])
    with pytest.raises(DataError, match="must be rows x labels for label_columns"):
        load_multi_target(str(bad), label_columns=["0", "1"])
    # One 0/1 column is binary data (it trained as two classes, then failed at 99%).
    with pytest.raises(DataError, match="label_columns names one column: one 0/1 column is"):
        load_multi_target(str(plain), label_columns=["0"])
    # A binary or multi-class job on a multi-label y says what it would take.
    with pytest.raises(DataError, match="needs label_columns naming its labels"):
        load_multi_target(str(named), label_column="y")
    with pytest.raises(DataError, match="negative needs positive"):
        load_multi_target("builtin://digits?negative=3")


def test_the_builtin_digits_are_ten_classes_without_a_positive_digit():
    from sklearn.datasets import load_digits

    digits = load_multi_target("builtin://digits")
    assert digits.classes == tuple(range(10)) and digits.n_samples == 1797
    assert digits.y.tolist() == load_digits().target.tolist()
    images = load_multi_target("builtin://digits?as_images=true")
    assert images.X.shape == (1797, 1, 8, 8) and images.feature_names is None
    # one digit against the rest is two classes, as a binary job reads it
    nine = load_multi_target("builtin://digits?positive=9")
    assert nine.classes == (9, "not 9")


def test_dataset_checks_its_invariants():
    X = np.zeros((4, 2))
    with pytest.raises(ValueError, match="class indices"):
        MultiTargetDataset(X=X, y=np.array([0, 1, 2, 3]), classes=("a", "b"), target="multiclass",
                           feature_names=None, source="x")  # fmt: skip
    with pytest.raises(ValueError, match="only 0 and 1"):
        MultiTargetDataset(X=X, y=np.full((4, 2), 2), classes=("a", "b"), target="multilabel",
                           feature_names=None, source="x")  # fmt: skip


def test_stratify_key_groups_rows_by_their_rarest_label():
    Y = np.array([[1, 0], [1, 1], [0, 1], [0, 0], [1, 0], [1, 0]])
    ds = MultiTargetDataset(X=np.zeros((6, 1)), y=Y, classes=("a", "b"), target="multilabel",
                            feature_names=None, source="x")  # fmt: skip
    # label b (2 rows) is rarer than a (4 rows); the row with neither is its own group
    assert stratify_key(ds).tolist() == [0, 1, 1, -1, 0, 0]


@pytest.mark.parametrize("value", [0, 1])
def test_a_label_column_of_one_value_is_refused_naming_it_and_what_to_do(tmp_path, value):
    # Every row 0 (no positives: F1 and precision 0/0) or every row 1: no search can train it.
    frame = pd.DataFrame(
        {"x": np.arange(8.0), "a": [1, 0] * 4, "b": [0, 1, 1, 0] * 2, "c": [value] * 8}
    )
    with pytest.raises(DataError) as info:
        load_multi_target(_table(tmp_path, frame), label_columns=["a", "b", "c"])
    message = str(info.value)
    assert message.startswith(f"label column 'c' holds the one value {value} on all 8 rows")
    assert message.endswith("leave 'c' out of label_columns")
    # Without it the same file loads (the column left in the features is harmless).
    assert load_multi_target(_table(tmp_path, frame), label_columns=["a", "b"]).n_classes == 2


def test_a_multiclass_label_column_of_one_class_is_refused_naming_it(tmp_path):
    frame = pd.DataFrame({"x": np.arange(6.0), "kind": ["a"] * 6})
    with pytest.raises(DataError) as info:
        load_multi_target(_table(tmp_path, frame), label_column="kind")
    assert str(info.value).startswith("label column 'kind': labels must have at least two")
    assert "name one that holds two classes or more" in str(info.value)
