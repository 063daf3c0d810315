"""Dataset and subset: the one shape every source ends as."""

from __future__ import annotations

import numpy as np
import pytest

from metro.datasets import Dataset, subset


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


def test_the_content_digest_is_of_the_values_not_of_where_they_came_from():
    X = np.arange(12, dtype=np.float64).reshape(6, 2)
    y = np.array([0, 1, 0, 1, 1, 0])
    ds = Dataset(X, y, ("a", "b"), 1, 0, "file:///one.csv")
    same = Dataset(X.astype(np.float32).copy(), y.copy(), ("a", "b"), 1, 0, "s3://b/two.csv")
    assert ds.content_sha256 == same.content_sha256
    assert len(ds.content_sha256) == 64
    others = [
        Dataset(X + np.eye(6, 2), y, ("a", "b"), 1, 0, "x"),  # a feature value
        Dataset(X, 1 - y, ("a", "b"), 1, 0, "x"),  # the labels
        Dataset(X, y, ("a", "c"), 1, 0, "x"),  # a column's name
        Dataset(X, y, ("a", "b"), "yes", "no", "x"),  # what the labels stand for
        Dataset(X.reshape(6, 2)[:, ::-1], y, ("a", "b"), 1, 0, "x"),  # the columns' order
        subset(ds, np.arange(5)),  # a row fewer
    ]
    digests = {o.content_sha256 for o in others}
    assert ds.content_sha256 not in digests and len(digests) == len(others)
