"""Per-label offsets for a micro-averaged multi-label metric (metro.label_offsets), against a
brute-force search over every label's cuts."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from sklearn.metrics import f1_score, fbeta_score, jaccard_score

from metro import get_metric
from metro.averaging import averaged_score, label_cells
from metro.label_offsets import _best_label_offset, predict_labels, tune_label_offsets
from metro.search.base import FEW_TRUE_POSITIVES
from metro.search.safeguard import MIN_PREDICTED_RATIO


def _problem(seed: int, n: int = 14, labels: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, labels)) < [0.2, 0.4, 0.6][:labels]).astype(int)
    # Informative but noisy margins, on scales that differ by label (as fits' margins do).
    margins = (Y - 0.5) * rng.uniform(0.5, 2.0, labels) + rng.normal(scale=0.8, size=(n, labels))
    return np.round(margins, 3), Y


def _cuts(column: np.ndarray, y: np.ndarray | None = None) -> list[float]:
    """An offset for every reachable decision of one label (none on, and on from each margin)
    or, given its labels ``y``, for those open to it: the ones its own counts support (at least
    FEW_TRUE_POSITIVES true positives, predicted positives at least MIN_PREDICTED_RATIO of its
    positives) and its own threshold's (offset 0)."""
    values = np.unique(column)
    cuts = [-(values.max() + 1.0)] + [-float(v) for v in values]
    if y is None:
        return cuts
    open_ = [0.0]
    for cut in cuts:
        on = column + cut >= 0
        tp, fp = int(np.sum(on & (y == 1))), int(np.sum(on & (y == 0)))
        if tp >= FEW_TRUE_POSITIVES and tp + fp >= MIN_PREDICTED_RATIO * int(np.sum(y == 1)):
            open_.append(cut)
    return open_


def _micro(spec, margins, Y, b) -> float:
    return float(averaged_score(spec, label_cells(Y, predict_labels(margins, b)), "micro"))


@pytest.mark.parametrize("metric", ["f1", "jaccard", "precision"])
@pytest.mark.parametrize("seed", range(5))
def test_each_step_is_the_exact_best_cut_of_its_label(metric, seed):
    """With the other labels fixed, the step's offset scores the maximum over every cut of the
    label's margins open to it, and the rule scores what the step says."""
    spec = get_metric(metric)
    margins, Y = _problem(seed, n=40)
    b = np.zeros(3)
    cells = label_cells(Y, predict_labels(margins, b))
    for label in range(3):
        rest = cells.sum(axis=0) - cells[label]
        value, score = _best_label_offset(margins, Y, rest, label, spec)
        brute = max(
            _micro(spec, margins, Y, np.where(np.arange(3) == label, cut, b))
            for cut in _cuts(margins[:, label], Y[:, label])
        )
        assert score == pytest.approx(brute)
        trial = b.copy()
        trial[label] = value
        assert _micro(spec, margins, Y, trial) == pytest.approx(brute)


@pytest.mark.parametrize("metric", ["f1", "jaccard"])
@pytest.mark.parametrize("seed", range(6))
def test_tuned_offsets_are_a_coordinate_optimum_no_worse_than_zero(metric, seed):
    """The end point: no single label's open cut improves the pooled metric, the score is the
    rule's own, and it is never below every label's own threshold (b = 0); the global optimum
    over every combination of open cuts bounds it from above."""
    spec = get_metric(metric)
    margins, Y = _problem(seed, n=30)
    b, score = tune_label_offsets(margins, Y, spec=spec)
    assert score == pytest.approx(_micro(spec, margins, Y, b))
    assert score >= _micro(spec, margins, Y, np.zeros(3)) - 1e-12
    for label in range(3):
        for cut in _cuts(margins[:, label], Y[:, label]):
            trial = b.copy()
            trial[label] = cut
            assert _micro(spec, margins, Y, trial) <= score + 1e-12
    best = max(
        _micro(spec, margins, Y, np.array(combo))
        for combo in itertools.product(*(_cuts(margins[:, j], Y[:, j]) for j in range(3)))
    )
    assert score <= best + 1e-12


def test_offsets_move_a_label_whose_own_threshold_hurts_the_pooled_metric():
    """Label 1's margins rank its rows perfectly but put four of each six rows above 0, two of
    them negatives: at b = 0 it adds false positives to the pooled cells; the tuned offset moves
    its cut between its positives and its negatives (10 true positives: supported), and label 0
    (right at b = 0) stays."""
    Y = np.repeat(np.array([[1, 1], [1, 0], [0, 1], [0, 0], [1, 0], [0, 0]]), 5, axis=0)
    margins = np.repeat(
        np.array(
            [[1.0, 0.85], [1.0, 0.15], [-1.0, 0.75], [-1.0, 0.05], [1.0, 0.25], [-1.0, -0.05]]
        ),
        5,
        axis=0,
    )
    spec = get_metric("f1")
    assert predict_labels(margins)[:, 1].sum() == 25
    b, score = tune_label_offsets(margins, Y, spec=spec)
    assert predict_labels(margins, b).tolist() == Y.tolist()
    assert score == pytest.approx(1.0)
    assert _micro(spec, margins, Y, np.zeros(2)) < 0.85


def test_no_label_is_tuned_onto_a_cut_its_own_counts_cannot_support():
    """Micro precision, unconstrained, turned two labels of three off and the third down to 8
    rows of 2,000, and reported 1.0: a cut is open to a label only where its own counts hold 5
    true positives and a tenth of its positives flagged, or at its own threshold."""
    rng = np.random.default_rng(0)
    Y = (rng.random((2000, 3)) < 0.3).astype(int)
    margins = rng.normal(size=(2000, 3)) + Y - 0.5
    b, score = tune_label_offsets(margins, Y, spec=get_metric("precision"))
    cells = label_cells(Y, predict_labels(margins, b))
    for label, (tp, fp, fn, _) in enumerate(cells):
        own = np.array_equal(
            predict_labels(margins)[:, label], predict_labels(margins, b)[:, label]
        )
        assert own or (tp >= FEW_TRUE_POSITIVES and tp + fp >= MIN_PREDICTED_RATIO * (tp + fn))
    assert score < 1.0


def test_pooled_scores_match_sklearns_micro_average():
    margins, Y = _problem(3, n=40)
    b, score = tune_label_offsets(margins, Y, spec=get_metric("f_beta", beta=2.0))
    P = predict_labels(margins, b)
    assert score == pytest.approx(fbeta_score(Y, P, beta=2.0, average="micro"))
    b, score = tune_label_offsets(margins, Y, spec=get_metric("jaccard"))
    assert score == pytest.approx(jaccard_score(Y, predict_labels(margins, b), average="micro"))
    assert f1_score(Y, P, average="micro") > 0


@pytest.mark.parametrize(
    ("margins", "Y", "match"),
    [
        (np.zeros((4, 2)), np.zeros((4, 3)), "equal n x L"),
        (np.full((2, 2), np.nan), np.zeros((2, 2)), "finite"),
        (np.zeros((2, 2)), np.full((2, 2), 2), "0 and 1"),
    ],
)
def test_bad_input_is_refused(margins, Y, match):
    with pytest.raises(ValueError, match=match):
        tune_label_offsets(margins, Y, spec=get_metric("f1"))
