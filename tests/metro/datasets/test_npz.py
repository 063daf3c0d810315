"""Reading NPZ archives: tables, images in either channel order, and what is refused."""

from __future__ import annotations

import re

import numpy as np
import pytest

from metro.datasets import DataError, load_dataset


def test_npz_feature_names_must_be_unique(tmp_path):
    path = tmp_path / "a.npz"
    np.savez(path, X=np.zeros((4, 2)), y=np.array([1, 0, 0, 1]), feature_names=np.array(["a", "a"]))
    with pytest.raises(DataError, match=re.escape("column names must be unique; 'a' appears")):
        load_dataset(str(path))


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
        DataError,
        match=re.escape("npz file must contain arrays 'X' and 'y'; found ['X', 'labels']"),
    ):
        load_dataset(str(path))
    np.savez(path, X=np.zeros((100, 2)), y=np.r_[np.zeros(50), np.ones(49)])
    with pytest.raises(DataError, match=re.escape("X has 100 rows but y has 99")):
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
    with pytest.raises(DataError, match=re.escape("dataset has 5 rows, more than the limit 4")):
        load_dataset(str(path), max_rows=4)
    np.savez(path, X=np.array([[np.nan, 1.0], [1.0, 1.0]]), y=np.array([0, 1]))
    with pytest.raises(DataError, match=re.escape("(first at row 0, column 0)")):
        load_dataset(str(path))
    images = np.zeros((2, 1, 3, 3))
    images[1, 0, 2, 1] = np.inf
    np.savez(path, X=images, y=np.array([0, 1]))
    with pytest.raises(
        DataError,
        match=re.escape("1 NaN or infinite values (first at row 1, channel 0, pixel (2, 1))"),
    ):
        load_dataset(str(path))


def test_npz_refuses_pickles_and_garbage(tmp_path):
    path = tmp_path / "a.npz"
    np.savez(path, X=np.array([[1], [2]], dtype=object), y=np.array([0, 1]))
    with pytest.raises(DataError, match="arrays of Python objects are not accepted"):
        load_dataset(str(path))
    path.write_bytes(b"\x80\x04garbage that np.load would unpickle")
    with pytest.raises(
        DataError, match=re.escape(f"could not read {path} as NPZ: the file is not a zip")
    ):
        load_dataset(str(path))
    path.write_bytes(b"PK\x03\x04truncated")
    with pytest.raises(DataError, match=re.escape(f"could not read {path} as NPZ: ")):
        load_dataset(str(path))


def test_an_npz_whose_x_has_no_features_is_refused(tmp_path):
    # It was stored, accepted as a job, and failed with "n_inputs must hold positive integers".
    path = tmp_path / "empty.npz"
    np.savez(path, X=np.zeros((120, 0)), y=np.arange(120) % 2)
    with pytest.raises(DataError, match=re.escape("array 'X' has no features (shape (120, 0))")):
        load_dataset(str(path))
