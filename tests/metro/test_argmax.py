"""The argmax over classes and its offsets tuned for an average (metro.argmax), against brute
force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from metro import get_metric
from metro.argmax import _best_offset, predict_argmax, tune_offsets
from metro.averaging import averaged_score, class_cells


def test_ovr_rule_is_largest_positive_margin_else_largest_margin():
    margins = np.array(
        [
            [0.5, 2.0, -1.0],  # two positives: the larger
            [-3.0, -0.5, -2.0],  # none positive: the largest margin
            [-1.0, -1.0, 0.0],  # one positive
        ]
    )
    assert predict_argmax(margins).tolist() == [1, 1, 2]
    assert predict_argmax(margins, np.array([0.0, 0.0, 10.0])).tolist() == [2, 2, 2]


def _macro(scores, y, b, k):
    return averaged_score(get_metric("f1"), class_cells(y, predict_argmax(scores, b), k), "macro")


@pytest.mark.parametrize("seed", range(5))
def test_one_offset_step_is_exact_against_brute_force(seed):
    # with the others fixed, the tuner's best offset for a class is the best over every offset
    rng = np.random.default_rng(seed)
    k, n = 3, 15
    y = rng.integers(0, k, n)
    scores = rng.normal(size=(n, k)) + 0.8 * np.eye(k)[y]
    b = rng.normal(scale=0.3, size=k)
    spec = get_metric("f1")
    for c in range(k):
        value, best = _best_offset(scores, y, b, c, spec, "macro")
        trial = b.copy()
        trial[c] = value
        assert _macro(scores, y, trial, k) == pytest.approx(best)
        brute = []
        for v in np.linspace(-6, 6, 2401):
            trial[c] = v
            brute.append(_macro(scores, y, trial, k))
        assert best == pytest.approx(max(brute))


@pytest.mark.parametrize("seed", range(4))
def test_tuned_offsets_reach_the_grid_oracle_on_tiny_cases(seed):
    rng = np.random.default_rng(seed)
    k, n = 3, 12
    y = np.r_[np.arange(k), rng.integers(0, k, n - k)]
    scores = rng.normal(size=(n, k)) + 0.5 * np.eye(k)[y]
    offsets, tuned = tune_offsets(scores, y, spec=get_metric("f1"))
    assert tuned == pytest.approx(_macro(scores, y, offsets, k))
    assert tuned >= _macro(scores, y, np.zeros(k), k)  # never worse than the "ovr" rule
    grid = np.linspace(-3, 3, 41)
    oracle = max(
        _macro(scores, y, np.array([0.0, a, c]), k) for a, c in itertools.product(grid, grid)
    )
    assert tuned >= oracle - 1e-12


def test_offsets_stay_zero_where_nothing_beats_the_plain_argmax():
    """The plain argmax is already right on every row: every start ties, and the offsets are
    the first start's, zero (another start's offsets would move predictions on new rows for
    nothing)."""
    scores = np.vstack([2 * np.eye(3), 2 * np.eye(3)])
    offsets, score = tune_offsets(scores, np.array([0, 1, 2, 0, 1, 2]), spec=get_metric("f1"))
    np.testing.assert_array_equal(offsets, np.zeros(3))
    assert score == pytest.approx(1.0)


def test_tune_offsets_validates():
    with pytest.raises(ValueError, match="n x C"):
        tune_offsets(np.zeros((3, 1)), np.zeros(3), spec=get_metric("f1"))
    with pytest.raises(ValueError, match="class indices"):
        tune_offsets(np.zeros((3, 2)), np.array([0, 1, 2]), spec=get_metric("f1"))
    with pytest.raises(ValueError, match="average='samples'"):
        tune_offsets(
            np.zeros((3, 2)), np.array([0, 1, 1]), spec=get_metric("f1"), average="samples"
        )


def test_offsets_tuned_for_micro_f1_are_tuned_for_the_accuracy():
    """Multi-class micro-F1 is the accuracy: the offsets tuned for it score the accuracy of the
    argmax they decide, never below the plain argmax's."""
    rng = np.random.default_rng(7)
    y = rng.integers(0, 3, size=200)
    margins = rng.normal(size=(200, 3)) + 0.8 * np.eye(3)[y] + np.array([0.6, 0.0, -0.6])
    offsets, score = tune_offsets(margins, y, spec=get_metric("f1"), average="micro")
    assert score == pytest.approx(np.mean(predict_argmax(margins, offsets) == y))
    assert score >= np.mean(predict_argmax(margins) == y)


def test_tuned_offsets_score_what_the_argmax_with_them_decides():
    """On margins with near-ties (rounded to two decimals, as a low-precision export gives) the
    coordinate ascent claimed steps the argmax does not make: 3 of 20 such cases scored below
    the returned score."""
    spec = get_metric("f1").resolve(np.array([0, 1]))
    for trial in range(20):
        rng = np.random.default_rng(2 * trial + 1)
        y = rng.integers(0, 4, size=300)
        margins = np.round(rng.normal(size=(300, 4)).astype(np.float32) + np.eye(4)[y], 2)
        offsets, claimed = tune_offsets(margins, y, spec=spec, average="macro")
        decided = class_cells(y, predict_argmax(margins, offsets), 4)
        assert claimed == averaged_score(spec, decided, "macro"), trial
        # never below the rule it starts from (b = 0)
        assert claimed >= averaged_score(spec, class_cells(y, predict_argmax(margins), 4), "macro")


def test_an_offset_moves_only_for_a_strict_gain():
    """On margins with ties (one decimal), class 1's best offset scores what 0 scores: taking it
    anyway (a step without a gain) moved the decisions on new rows for nothing, and no test
    noticed. Every offset kept is one whose removal alone costs score."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 40)
    margins = np.round(rng.normal(size=(40, 3)) + np.eye(3)[y], 1)
    offsets, tuned = tune_offsets(margins, y, spec=get_metric("f1"))
    assert tuned == pytest.approx(_macro(margins, y, offsets, 3))
    moved = np.flatnonzero(offsets)
    assert moved.size
    for c in moved:
        back = offsets.copy()
        back[c] = 0.0
        assert _macro(margins, y, back, 3) < tuned, c


def _reachable_best(scores, y, b, c, k):
    """Brute force for one class's offset: every decision an offset of class ``c`` can make is
    made by one of these offsets (below every cut, above every cut, or halfway between two
    distinct cuts t_i = max_{d != c} (m_d + b_d) - m_c), scored as predict_argmax decides."""
    others = scores + b
    others[:, c] = -np.inf
    t = np.unique(others.max(axis=1) - scores[:, c])
    offsets = np.r_[t[0] - 1.0, (t[1:] + t[:-1]) / 2.0, t[-1] + 1.0]
    trial = b.copy()
    best = -np.inf
    for v in offsets:
        trial[c] = v
        best = max(best, _macro(scores, y, trial, k))
    return best


@pytest.mark.parametrize("seed", range(8))
def test_one_offset_step_is_exact_where_rows_tie_at_one_cut(seed):
    """Margins on a 0.5 grid: many rows share a cut value t, and no offset splits them (they go
    to class c together or not at all). The step's claimed score is the one its offset makes,
    and the best of every reachable decision; counting a cut inside a tie (a split no offset
    makes) claimed a score above every reachable one."""
    rng = np.random.default_rng(seed)
    k, n = 3, 14
    y = rng.integers(0, k, n)
    scores = np.round(2 * (rng.normal(size=(n, k)) + 0.6 * np.eye(k)[y])) / 2
    b = np.zeros(k)
    spec = get_metric("f1")
    for c in range(k):
        value, claimed = _best_offset(scores, y, b, c, spec, "macro")
        trial = b.copy()
        trial[c] = value
        assert _macro(scores, y, trial, k) == pytest.approx(claimed), c
        assert claimed == pytest.approx(_reachable_best(scores, y, b, c, k)), c
