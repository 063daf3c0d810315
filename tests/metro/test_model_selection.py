"""split_indices: stratified, seeded, disjoint and covering, with infeasible requests named."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metro.datasets import DataError, load_dataset, subset
from metro.model_selection import split_indices


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
        match=re.escape(
            "too few positives (2) for a train/validation/test split "
            "with at least 1 positive in each split: the data needs at least 3 positive rows"
        ),
    ):
        split_indices(_labels(2, 98), random_state=0)
    with pytest.raises(
        DataError,
        match=re.escape(
            "too few positives (3) for a train/validation split "
            "with at least 2 positives in each split: the data needs at least 4 positive rows"
        ),
    ):
        split_indices(_labels(3, 97), test_fraction=0, min_positives_per_split=2, random_state=0)
    with pytest.raises(
        DataError, match=re.escape("too few negatives (1) for a train/validation/test split")
    ):
        split_indices(_labels(99, 1), random_state=0)


def test_split_too_small_parts():
    with pytest.raises(DataError, match=re.escape("dataset has 2 rows, too few for a split")):
        split_indices(np.array([0, 1]))
    with pytest.raises(
        DataError,
        match=re.escape(
            "the validation split would have 3 rows, too few for at least 2 positive and "
            "2 negative rows: the data needs more rows (calling split_indices: a larger "
            "validation_fraction"
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
