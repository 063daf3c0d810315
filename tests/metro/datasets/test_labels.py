"""parse_labels: two classes as {0, 1}, and which one is positive."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from metro.datasets import DataError, parse_labels


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
        DataError, match=re.escape("positive_label is required: the labels are ['cat', 'dog']")
    ):
        parse_labels(["dog", "cat", "dog"])
    with pytest.raises(
        DataError, match=re.escape("positive_label is required: the labels are [2, 4]")
    ):
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
        DataError, match=re.escape("positive_label 'bird' is not one of the labels ['cat', 'dog']")
    ):
        parse_labels(["cat", "dog"], positive_label="bird")
    with pytest.raises(
        DataError, match=re.escape("positive_label 5 is not one of the labels [0, 1]")
    ):
        parse_labels([0, 1], positive_label=5)
    with pytest.raises(DataError, match="positive_label must be a string, number or boolean"):
        parse_labels([0, 1], positive_label=[1])


def test_parse_labels_needs_exactly_two_classes():
    with pytest.raises(DataError, match=re.escape("found 1 class: [3]")):
        parse_labels([3, 3, 3])
    with pytest.raises(DataError, match=re.escape("found 3 classes: ['a', 'b', 'c']")):
        parse_labels(["c", "a", "b"])
    with pytest.raises(DataError, match=re.escape("found 7 classes: [0, 1, 2, 3, 4, ...]")):
        parse_labels(list(range(7)))
    with pytest.raises(DataError, match=re.escape("found 0 classes: []")):
        parse_labels([])


def test_parse_labels_rejects_missing_and_bad_shapes():
    with pytest.raises(
        DataError, match=re.escape("labels contain 2 missing or non-finite values (first at row 1)")
    ):
        parse_labels([0.0, np.nan, 1.0, np.inf])
    with pytest.raises(
        DataError, match=re.escape("labels contain 1 missing or non-finite values (first at row 2)")
    ):
        parse_labels(np.array(["a", "b", None], dtype=object), positive_label="a")
    y, _, _ = parse_labels(np.array([[0], [1]]))  # a column vector is fine
    np.testing.assert_array_equal(y, [0, 1])
    with pytest.raises(DataError, match="one-dimensional"):
        parse_labels(np.zeros((2, 2)))


def test_three_classes_point_to_an_average_and_one_class_does_not():
    with pytest.raises(DataError) as three:
        parse_labels(["cat", "dog", "fish"])
    assert str(three.value).endswith(
        "found 3 classes: ['cat', 'dog', 'fish']; a metric over several classes takes an "
        "average (macro, weighted or micro)"
    )
    with pytest.raises(DataError) as one:
        parse_labels(["cat", "cat"])
    assert "average" not in str(one.value)
