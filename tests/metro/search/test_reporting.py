"""What a search reports about its choice: the lambda and shift the delivered model was trained
with, the ratio a bisection or Dinkelbach search reached, the held-out counts it chose by, and
warnings (a lambda at the grid's edge, a degenerate classifier)."""

from __future__ import annotations

import numpy as np
import pytest

from metro import SearchConfig, f1, precision, weighted_accuracy
from metro.search import (
    Candidate,
    FiniteHypothesisSolver,
    WarningCode,
    bisection_search,
    cells_from_predictions,
    dinkelbach_search,
    grid_search,
    threshold_predictions,
)


class _ScoreSolver:
    """Each lambda's 'fit' is a fixed score vector, judged on the rows ``rows`` (a fold)."""

    def __init__(self, spec, scores_by_lambda, labels, rows):
        self.spec, self.scores, self.labels, self.rows = spec, scores_by_lambda, labels, rows

    def solve(self, lambdas, *, shift, warm_start=None):
        out = []
        for lam in lambdas:
            s = self.scores(lam)[self.rows]
            y = self.labels[self.rows]
            cells = cells_from_predictions(y, (s >= 0)[:, None])[0]
            out.append(Candidate(
                lam=float(lam), shift=shift, train_cells=cells, validation_cells=cells,
                validation_scores=s, validation_labels=y,
            ))  # fmt: skip
        return out


def _labels(n=300, seed=3):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    return labels, rng.normal(size=n) + 2.0 * labels


def _folds(spec, scores, labels, k=3):
    rows = np.array_split(np.random.default_rng(0).permutation(labels.size), k)
    return [_ScoreSolver(spec, scores, labels, r) for r in rows]


def _codes(result):
    return [w.code for w in result.warnings]


def test_a_choice_at_the_grids_end_is_warned_about_and_an_interior_one_is_not():
    labels, base = _labels()
    spec = f1().resolve(labels)
    # The F1 of sign(base - c) peaks near c = 1; lambda moves c, so the grid's best point is
    # where c is closest to 1.
    narrowed = SearchConfig(n_lambdas=9, shift="minimal", threshold="zero", lambda_min=-0.8)
    edge = grid_search(
        _folds(spec, lambda lam: base - 1.0 + 3 * (lam + 0.95), labels), config=narrowed
    )
    assert edge.trained_lambda == pytest.approx(edge.grid[0])
    assert _codes(edge) == [WarningCode.LAMBDA_AT_GRID_EDGE]
    assert "lowest of the 9 grid points" in edge.warnings[0].message
    assert "lambda_min" in edge.warnings[0].message
    # At the metric's own bound (F1's lambda is at least -1) there is no beyond, nor a bound
    # to move: no warning (it fired on half of the small-data fits).
    own = grid_search(
        _folds(spec, lambda lam: base - 1.0 + 3 * (lam + 0.95), labels),
        config=SearchConfig(n_lambdas=9, shift="minimal", threshold="zero"),
    )
    assert own.trained_lambda == pytest.approx(own.grid[0]) and own.grid[0] == pytest.approx(-0.9)
    assert own.warnings == []

    inside = grid_search(
        _folds(spec, lambda lam: base - 1.0 + 3 * (lam + 0.5), labels),
        config=SearchConfig(n_lambdas=9, shift="minimal", threshold="zero"),
    )
    assert own.grid[0] < inside.trained_lambda < own.grid[-1]
    assert inside.warnings == []


def test_the_held_out_counts_the_grid_chose_by_are_reported_with_their_split():
    labels, base = _labels()
    spec = f1().resolve(labels)
    result = grid_search(
        _folds(spec, lambda lam: base - 1.0 + 3 * (lam + 0.5), labels),
        config=SearchConfig(n_lambdas=9, shift="minimal"),
    )
    tp, fp, fn, tn = result.selection_counts
    assert tp + fp + fn + tn == labels.size  # every row held out once, pooled
    assert -result.selection_loss == pytest.approx(2 * tp / (2 * tp + fp + fn))
    assert (result.n_folds, result.selection_split) == (3, "cross-validation")
    assert result.ratio_reached is None  # a grid reaches no ratio: it picks a point


def test_a_classifier_whose_metric_rests_on_one_true_positive_is_warned_about():
    labels, base = _labels()
    spec = precision().resolve(labels)
    top = np.argsort(base)[-1]  # the single highest score: a positive, precision 1.0
    assert labels[top] == 1
    scores = np.where(np.arange(labels.size) == top, 1.0, -1.0)
    result = grid_search(
        _folds(spec, lambda lam: scores, labels),
        config=SearchConfig(n_lambdas=3, shift="minimal", threshold="zero"),
    )
    assert result.selection_counts[0] == 1 and -result.selection_loss == 1.0
    assert WarningCode.FEW_TRUE_POSITIVES in _codes(result)
    message = next(w.message for w in result.warnings if w.code is WarningCode.FEW_TRUE_POSITIVES)
    assert "1 true positive" in message and "TP 1, FP 0" in message


def test_a_classifier_that_predicts_one_class_is_warned_about():
    labels, _ = _labels()
    spec = f1().resolve(labels)
    result = grid_search(
        _folds(spec, lambda lam: np.full(labels.size, -1.0), labels),
        config=SearchConfig(n_lambdas=3, shift="minimal", threshold="zero"),
    )
    assert WarningCode.PREDICTS_ONE_CLASS in _codes(result)
    assert "negative" in result.warnings[-1].message


def test_a_warning_names_the_metric_with_its_costs():
    """Two weighted accuracies with different costs are different metrics: a warning about
    one names its costs, as its job and its constraint do."""
    labels, _ = _labels()
    spec = weighted_accuracy(w_fn=20.0).resolve(labels)
    result = grid_search(
        _folds(spec, lambda lam: np.full(labels.size, -1.0), labels),
        config=SearchConfig(n_lambdas=3, shift="minimal", threshold="zero"),
    )
    messages = [w.message for w in result.warnings]
    assert messages and all("Weighted accuracy (w_fn 20)" in m for m in messages)


def _finite_solver(seed=5):
    rng = np.random.default_rng(seed)
    y = (rng.random(200) < 0.3).astype(int)
    x = rng.normal(size=200) + 1.5 * y
    spec = f1().resolve(y)
    return FiniteHypothesisSolver(spec, y, threshold_predictions(x))


@pytest.mark.parametrize("search", [bisection_search, dinkelbach_search])
def test_sequential_searches_tell_the_trained_lambda_from_the_ratio_reached(search):
    solver = _finite_solver()
    result = search(solver, config=SearchConfig(shift="auto", epsilon=1e-3))
    # The model delivered was fitted at a lambda the search visited, with that fit's shift...
    assert result.trained_lambda == result.best.lam
    assert result.trained_shift == result.best.shift
    assert result.trained_lambda in {s.lam for s in result.trace}
    # ... while the ratio reached is the middle of the last bracket.
    a, b = result.bracket
    assert result.ratio_reached == pytest.approx((a + b) / 2)
    assert result.grid is None and result.selection_split == "train"
