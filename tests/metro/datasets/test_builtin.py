"""The builtin:// data sets and their parameters."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from metro.datasets import DataError, load_dataset


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
    with pytest.raises(DataError, match=re.escape(message)):
        load_dataset(uri)


def test_builtin_max_rows_checked_before_generating():
    with pytest.raises(
        DataError, match=re.escape("dataset has 10000000 rows, more than the limit 100")
    ):
        load_dataset("builtin://synthetic?n_samples=10000000&n_features=2", max_rows=100)
    with pytest.raises(DataError, match=re.escape("dataset has 569 rows, more than the limit 100")):
        load_dataset("builtin://breast_cancer", max_rows=100)
