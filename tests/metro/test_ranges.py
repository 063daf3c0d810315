"""Training ranges: recorded on the rows the delivered model was trained on, saved in the
manifest (and the ONNX metadata), read back, and checked against new rows."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_classification

from metro import MetroClassifier, load_classifier
from metro.model_selection import split_indices
from metro.ranges import FeatureRanges, FeatureRangeWarning, out_of_range
from metro.serialization import MANIFEST_FILE, ONNX_FILE

FAST = {"n_lambdas": 3, "cv": 3, "refine": "off", "random_state": 0}


def _binary(n: int = 200) -> tuple[pd.DataFrame, np.ndarray]:
    X, y = make_classification(n_samples=n, n_features=5, n_informative=3, random_state=0)
    return pd.DataFrame(X, columns=[f"f{i}" for i in range(5)]), y


def _brute_force(X: np.ndarray, low: np.ndarray, high: np.ndarray) -> tuple[dict[int, int], int]:
    """Rows outside per column, and rows with any value outside, one cell at a time."""
    per_column: dict[int, int] = {}
    rows = 0
    for i in range(X.shape[0]):
        any_outside = False
        for j in range(X.shape[1]):
            value = X[i, j]
            if np.isnan(low[j]) or np.isnan(value):
                continue
            if value < low[j] or value > high[j]:
                per_column[j] = per_column.get(j, 0) + 1
                any_outside = True
        rows += any_outside
    return per_column, rows


@pytest.mark.parametrize("seed", range(5))
def test_the_check_finds_exactly_the_columns_a_cell_by_cell_loop_finds(seed):
    rng = np.random.default_rng(seed)
    train = rng.normal(size=(50, 12))
    train[:, 3] = np.nan  # a feature with no finite training value: never checked
    train[7, 5] = np.inf  # an infinity is no range
    ranges = FeatureRanges.of(train)
    assert ranges is not None
    X = rng.normal(scale=1.6, size=(40, 12))
    X[rng.random(X.shape) < 0.05] = np.nan  # NaN is neither inside nor outside
    X[0, 1] = np.inf
    per_column, rows = _brute_force(X, ranges.low, ranges.high)
    names = [f"c{j}" for j in range(12)]
    report = out_of_range(X, ranges, feature_names=names, max_columns=100)
    assert {c.column: c.rows for c in report.columns} == per_column
    assert report.n_columns == len(per_column) and report.n_rows == rows
    assert report.n_checked == 40 and bool(report) == bool(per_column)
    assert [c.name for c in report.columns] == [names[c.column] for c in report.columns]
    # Bounded: the columns with most rows outside, ties in column order.
    top = out_of_range(X, ranges, max_columns=3)
    expected = sorted(per_column, key=lambda j: (-per_column[j], j))[:3]
    assert [c.column for c in top.columns] == expected and top.n_columns == len(per_column)
    assert all(
        c.min == ranges.low[c.column] and c.max == ranges.high[c.column] for c in top.columns
    )


def test_ranges_keep_finite_values_only_and_nan_where_a_column_has_none():
    train = np.array([[1.0, np.nan, -np.inf], [3.0, np.nan, 2.0], [np.inf, np.nan, 5.0]])
    ranges = FeatureRanges.of(train)
    assert ranges is not None
    np.testing.assert_array_equal(ranges.low, [1.0, np.nan, 2.0])
    np.testing.assert_array_equal(ranges.high, [3.0, np.nan, 5.0])
    assert ranges.to_dict() == {"min": [1.0, None, 2.0], "max": [3.0, None, 5.0]}
    back = FeatureRanges.from_dict(ranges.to_dict(), n_features=3)
    np.testing.assert_array_equal(back.low, ranges.low)
    # A value on the edge is inside; the unranged column is never outside.
    assert not out_of_range(np.array([[1.0, 1e30, 5.0], [3.0, -1e30, 2.0]]), ranges)
    assert FeatureRanges.of(np.zeros((4, 1, 2, 2))) is None  # images keep no ranges
    with pytest.raises(ValueError, match="the model takes 4"):
        FeatureRanges.from_dict(ranges.to_dict(), n_features=4)
    with pytest.raises(ValueError, match="'min' and 'max'"):
        FeatureRanges.from_dict({"min": [1.0]}, n_features=1)
    with pytest.raises(ValueError, match="min is above its max"):
        FeatureRanges.from_dict({"min": [2.0], "max": [1.0]}, n_features=1)


def test_a_refit_records_the_ranges_of_every_row():
    X, y = _binary()
    est = MetroClassifier(**FAST).fit(X, y)
    np.testing.assert_array_equal(est.feature_ranges_.low, X.to_numpy(np.float32).min(axis=0))
    np.testing.assert_array_equal(est.feature_ranges_.high, X.to_numpy(np.float32).max(axis=0))


def test_a_holdout_model_records_the_ranges_of_its_training_rows_only():
    """refit=False delivers the holdout's fit: its rows are the split's training part."""
    X, y = _binary()
    est = MetroClassifier(
        cv=None, refit=False, n_lambdas=3, refine="off", random_state=0, validation_fraction=0.4
    ).fit(X, y)
    rows = split_indices(y, validation_fraction=0.4, test_fraction=0.0, random_state=0).train
    trained = X.to_numpy(np.float32)[rows]
    np.testing.assert_array_equal(est.feature_ranges_.low, trained.min(axis=0))
    np.testing.assert_array_equal(est.feature_ranges_.high, trained.max(axis=0))
    # Not the whole table's: some extreme sits in the held-out rows (so the test can fail).
    everything = X.to_numpy(np.float32)
    assert not (
        np.array_equal(est.feature_ranges_.low, everything.min(axis=0))
        and np.array_equal(est.feature_ranges_.high, everything.max(axis=0))
    )


def test_saved_ranges_are_read_back_and_checked_without_a_warning_by_default(tmp_path):
    X, y = _binary()
    est = MetroClassifier(**FAST).fit(X, y)
    manifest = est.save(tmp_path)
    assert manifest["feature_ranges"] == est.feature_ranges_.to_dict()
    loaded = load_classifier(tmp_path)
    np.testing.assert_array_equal(loaded.feature_ranges_.high, est.feature_ranges_.high)
    far = X.iloc[:3].copy()
    far.loc[far.index[1], "f2"] = 1000 * float(X["f2"].abs().max())
    report = loaded.out_of_range(far)
    assert report.n_rows == 1 and [(c.name, c.rows) for c in report.columns] == [("f2", 1)]
    assert "'f2': 1 row(s) outside" in report.message()
    assert not loaded.out_of_range(X)  # the training rows themselves are inside
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the default says nothing, every call
        assert np.array_equal(loaded.predict(far), est.predict(far))
    warned = load_classifier(tmp_path, warn_out_of_range=True)
    with pytest.warns(FeatureRangeWarning, match="'f2': 1 row"):
        warned.decision_function(far)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warned.predict(X)  # inside: no warning
    # ONNX Runtime users read them beside the feature names.
    import onnx

    meta = {p.key: p.value for p in onnx.load(str(tmp_path / ONNX_FILE)).metadata_props}
    assert json.loads(meta["feature_ranges"]) == manifest["feature_ranges"]


def test_a_manifest_written_before_ranges_loads_and_checks_nothing(tmp_path):
    X, y = _binary()
    est = MetroClassifier(**FAST).fit(X, y)
    est.save(tmp_path)
    path = tmp_path / MANIFEST_FILE
    old = json.loads(path.read_text())
    del old["feature_ranges"]
    path.write_text(json.dumps(old))
    loaded = load_classifier(tmp_path, warn_out_of_range=True)
    assert loaded.feature_ranges_ is None
    far = X * 1000
    assert loaded.out_of_range(far) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.array_equal(loaded.predict(X), est.predict(X))


def test_an_averaged_fit_saves_the_ranges_of_the_rows_its_classes_were_trained_on(tmp_path):
    X, _ = _binary(240)
    y = np.arange(240) % 3
    est = MetroClassifier(average="macro", **FAST).fit(X, y)
    everything = X.to_numpy(np.float32)
    np.testing.assert_array_equal(est.feature_ranges_.low, everything.min(axis=0))
    np.testing.assert_array_equal(est.feature_ranges_.high, everything.max(axis=0))
    loaded = load_classifier(est.save(tmp_path) and tmp_path)
    far = X.iloc[:2].copy()
    far.loc[far.index[0], "f4"] = -1e6
    assert [(c.name, c.rows) for c in loaded.out_of_range(far).columns] == [("f4", 1)]


def test_a_multilabel_fit_keeps_the_ranges_of_every_row(tmp_path):
    X, _ = _binary(240)
    Y = np.column_stack([np.arange(240) % 2, (np.arange(240) // 2) % 2])
    est = MetroClassifier(average="macro", **FAST).fit(X.to_numpy(), Y)
    everything = X.to_numpy(np.float32)
    np.testing.assert_array_equal(est.feature_ranges_.low, everything.min(axis=0))
    manifest = est.save(tmp_path, onnx=False)
    assert manifest["decision"] == "per_label"
    assert manifest["feature_ranges"]["max"] == everything.max(axis=0).tolist()


def test_a_manifest_of_unreadable_ranges_loads_says_so_and_checks_nothing(tmp_path):
    """Ranges of another width refused the whole model (ModelFormatError), though its weights
    and decision are intact and the ranges only inform: it loads, predicts as saved, and the
    load warns once that the range check is off."""
    X, y = _binary()
    est = MetroClassifier(**FAST).fit(X, y)
    est.save(tmp_path)
    path = tmp_path / MANIFEST_FILE
    damaged = json.loads(path.read_text())
    damaged["feature_ranges"] = {"min": [0.0], "max": [1.0]}
    path.write_text(json.dumps(damaged))
    with pytest.warns(UserWarning, match="feature_ranges are unreadable") as said:
        loaded = load_classifier(tmp_path, warn_out_of_range=True)
    assert len(said) == 1 and said[0].filename == __file__  # the caller's line
    assert loaded.feature_ranges_ is None and loaded.out_of_range(X * 1000) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.array_equal(loaded.predict(X), est.predict(X))
