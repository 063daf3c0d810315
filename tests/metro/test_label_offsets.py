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


def _problem(seed: int, n: int = 14, labels: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, labels)) < [0.2, 0.4, 0.6][:labels]).astype(int)
    # Informative but noisy margins, on scales that differ by label (as fits' margins do).
    margins = (Y - 0.5) * rng.uniform(0.5, 2.0, labels) + rng.normal(scale=0.8, size=(n, labels))
    return np.round(margins, 3), Y


def _cuts(column: np.ndarray) -> list[float]:
    """An offset for every reachable decision of one label: none on, and on from each margin."""
    values = np.unique(column)
    return [-(values.max() + 1.0)] + [-float(v) for v in values]


def _micro(spec, margins, Y, b) -> float:
    return float(averaged_score(spec, label_cells(Y, predict_labels(margins, b)), "micro"))


@pytest.mark.parametrize("metric", ["f1", "jaccard", "precision"])
@pytest.mark.parametrize("seed", range(5))
def test_each_step_is_the_exact_best_cut_of_its_label(metric, seed):
    """With the other labels fixed, the step's offset scores the maximum over every cut of the
    label's margins, and the rule scores what the step says."""
    spec = get_metric(metric)
    margins, Y = _problem(seed)
    b = np.zeros(3)
    cells = label_cells(Y, predict_labels(margins, b))
    for label in range(3):
        rest = cells.sum(axis=0) - cells[label]
        value, score = _best_label_offset(margins, Y, rest, label, spec)
        brute = max(
            _micro(spec, margins, Y, np.where(np.arange(3) == label, cut, b))
            for cut in _cuts(margins[:, label])
        )
        assert score == pytest.approx(brute)
        trial = b.copy()
        trial[label] = value
        assert _micro(spec, margins, Y, trial) == pytest.approx(brute)


@pytest.mark.parametrize("metric", ["f1", "jaccard"])
@pytest.mark.parametrize("seed", range(6))
def test_tuned_offsets_are_a_coordinate_optimum_no_worse_than_zero(metric, seed):
    """The end point: no single label's cut improves the pooled metric, the score is the rule's
    own, and it is never below every label's own threshold (b = 0); the global optimum over
    every combination of cuts bounds it from above."""
    spec = get_metric(metric)
    margins, Y = _problem(seed, n=10)
    b, score = tune_label_offsets(margins, Y, spec=spec)
    assert score == pytest.approx(_micro(spec, margins, Y, b))
    assert score >= _micro(spec, margins, Y, np.zeros(3)) - 1e-12
    for label in range(3):
        for cut in _cuts(margins[:, label]):
            trial = b.copy()
            trial[label] = cut
            assert _micro(spec, margins, Y, trial) <= score + 1e-12
    best = max(
        _micro(spec, margins, Y, np.array(combo))
        for combo in itertools.product(*(_cuts(margins[:, j]) for j in range(3)))
    )
    assert score <= best + 1e-12


def test_offsets_move_a_label_whose_own_threshold_hurts_the_pooled_metric():
    """Label 1's margins rank its rows perfectly but put four of its six rows above 0, two of
    them negatives: at b = 0 it adds two false positives to the pooled cells; the tuned offset
    moves its cut between its positives and its negatives, and label 0 (right at b = 0) stays."""
    Y = np.array([[1, 1], [1, 0], [0, 1], [0, 0], [1, 0], [0, 0]])
    margins = np.array(
        [[1.0, 0.85], [1.0, 0.15], [-1.0, 0.75], [-1.0, 0.05], [1.0, 0.25], [-1.0, -0.05]]
    )
    spec = get_metric("f1")
    assert predict_labels(margins)[:, 1].tolist() == [1, 1, 1, 1, 1, 0]
    b, score = tune_label_offsets(margins, Y, spec=spec)
    assert predict_labels(margins, b).tolist() == Y.tolist()
    assert score == pytest.approx(1.0)
    assert _micro(spec, margins, Y, np.zeros(2)) < 0.85


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
