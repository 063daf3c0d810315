"""The averaged metrics (metro.averaging) against scikit-learn's."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import f1_score, fbeta_score, jaccard_score, precision_score, recall_score

from metro import get_metric
from metro.averaging import averaged_score, class_cells, label_cells, sklearn_average

SKLEARN = {
    "f1": lambda t, p, a: f1_score(t, p, average=a, zero_division=0),
    "jaccard": lambda t, p, a: jaccard_score(t, p, average=a, zero_division=0),
    "precision": lambda t, p, a: precision_score(t, p, average=a, zero_division=0),
    "recall": lambda t, p, a: recall_score(t, p, average=a, zero_division=0),
}


@pytest.mark.parametrize("metric", sorted(SKLEARN))
@pytest.mark.parametrize("average", ["macro", "weighted", "micro"])
@pytest.mark.parametrize("seed", range(4))
def test_multiclass_average_matches_sklearn(metric, average, seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(3, 7))
    t = rng.integers(0, k, 80)
    t[:k] = np.arange(k)  # every class is present in y_true
    p = np.where(rng.random(80) < 0.5, t, rng.integers(0, k, 80))
    spec = get_metric(metric)
    ours = averaged_score(spec, class_cells(t, p, k), average)
    assert ours == pytest.approx(SKLEARN[metric](t, p, average))


@pytest.mark.parametrize("metric", sorted(SKLEARN))
@pytest.mark.parametrize("average", ["macro", "weighted", "micro"])
def test_multilabel_average_matches_sklearn(metric, average):
    rng = np.random.default_rng(1)
    T = rng.integers(0, 2, (60, 5))
    P = np.where(rng.random((60, 5)) < 0.6, T, 1 - T)
    P[:, 4] = 0  # a label never predicted: 0/0 precision scores zero_division, as in sklearn
    ours = averaged_score(get_metric(metric), label_cells(T, P), average)
    assert ours == pytest.approx(SKLEARN[metric](T, P, average))


@pytest.mark.parametrize("metric", sorted(SKLEARN))
def test_weighted_average_without_a_true_row_is_sklearns_plain_mean(metric):
    """Every label all 0: sklearn's support weights are all 0, and it takes the plain mean (of
    each label's zero_division where 0/0); this took a weighted sum of 0."""
    T = np.zeros((30, 3), dtype=int)
    P = (np.arange(90).reshape(30, 3) % 4 == 0).astype(int)
    for zero_division in (0, 1):
        spec = get_metric(metric, zero_division=zero_division)
        ours = averaged_score(spec, label_cells(T, P), "weighted")
        theirs = {"f1": f1_score, "jaccard": jaccard_score, "precision": precision_score,
                  "recall": recall_score}[metric](T, P, average="weighted",
                                                  zero_division=zero_division)  # fmt: skip
        assert ours == pytest.approx(theirs), zero_division


def test_f_beta_per_label_matches_sklearn():
    rng = np.random.default_rng(2)
    t, p = rng.integers(0, 4, 100), rng.integers(0, 4, 100)
    spec = get_metric("f_beta", beta=0.5)
    ours = averaged_score(spec, class_cells(t, p, 4), "macro")
    assert ours == pytest.approx(fbeta_score(t, p, beta=0.5, average="macro"))


def test_class_cells_are_the_one_vs_rest_cells():
    t = np.array([0, 0, 1, 2, 2, 2])
    p = np.array([0, 1, 1, 2, 0, 2])
    cells = class_cells(t, p, 3)
    for c in range(3):
        tc, pc = t == c, p == c
        expected = [(tc & pc).sum(), (~tc & pc).sum(), (tc & ~pc).sum(), (~tc & ~pc).sum()]
        assert cells[c].tolist() == expected
    assert cells.sum(axis=1).tolist() == [6, 6, 6]


@pytest.mark.parametrize("average", ["macro", "weighted", "micro"])
def test_a_class_with_no_rows_and_no_predictions_is_left_out_as_sklearn_leaves_it(average):
    """A split without class 2, which nothing predicts: scikit-learn averages over the labels
    present (F1 1.0 here), as the job's reported figures must."""
    y = np.array([0, 0, 1, 1])
    cells = class_cells(y, y, 3)
    got = sklearn_average(get_metric("f1"), cells, average)
    assert got == pytest.approx(f1_score(y, y, average=average)) and got == pytest.approx(1.0)


@pytest.mark.parametrize("metric", sorted(SKLEARN))
def test_a_class_only_predicted_is_averaged_as_sklearn_averages_it(metric):
    """Class 2 is never true but predicted once: scikit-learn averages over the labels in
    y_true or y_pred, so its 0 counts (precision 0, recall's 0/0)."""
    t = np.array([0, 0, 1, 1, 0, 1])
    p = np.array([0, 1, 1, 1, 2, 0])
    got = sklearn_average(get_metric(metric), class_cells(t, p, 3), "macro")
    assert got == pytest.approx(SKLEARN[metric](t, p, "macro"))


def test_label_cells_are_sklearns_multilabel_confusion_matrices():
    from sklearn.metrics import multilabel_confusion_matrix

    rng = np.random.default_rng(3)
    T, P = rng.integers(0, 2, (40, 5)), rng.integers(0, 2, (40, 5))
    (tn, fp), (fn, tp) = np.moveaxis(multilabel_confusion_matrix(T, P), 0, -1)
    np.testing.assert_array_equal(label_cells(T, P), np.stack([tp, fp, fn, tn], axis=1))


@pytest.mark.parametrize("beta", [0.5, 2.0])
def test_micro_f_beta_pools_the_cells_as_sklearn_does(beta):
    rng = np.random.default_rng(4)
    T = rng.integers(0, 2, (70, 4))
    P = np.where(rng.random((70, 4)) < 0.7, T, 1 - T)
    spec = get_metric("f_beta", beta=beta)
    ours = averaged_score(spec, label_cells(T, P), "micro")
    assert ours == pytest.approx(fbeta_score(T, P, beta=beta, average="micro"))


@pytest.mark.parametrize("metric", ["f1", "precision", "recall"])
def test_multiclass_micro_is_the_accuracy(metric):
    """Every wrong row of a multi-class prediction is one false positive (of the class it was
    given) and one false negative (of its own): the pooled ratio is the accuracy."""
    rng = np.random.default_rng(5)
    t = rng.integers(0, 4, 90)
    p = np.where(rng.random(90) < 0.6, t, rng.integers(0, 4, 90))
    got = averaged_score(get_metric(metric), class_cells(t, p, 4), "micro")
    assert got == pytest.approx(np.mean(t == p))


def test_micro_over_a_stack_of_cells_is_the_pooled_metric_of_each():
    """[..., C, 4]: the offsets' search scores many candidate cells at once."""
    rng = np.random.default_rng(6)
    cells = rng.integers(0, 20, (7, 3, 4)).astype(float)
    spec = get_metric("f1")
    got = averaged_score(spec, cells, "micro")
    expected = [averaged_score(spec, c, "micro") for c in cells]
    np.testing.assert_allclose(got, expected)


def test_samples_is_refused_with_why():
    with pytest.raises(ValueError, match="'samples' is not trained for"):
        averaged_score(get_metric("f1"), np.ones((2, 4)), "samples")
