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


def _met(counts, constraints, n_folds=5):
    from metro.search.base import SearchResult

    best = Candidate(lam=0.0, shift="minimal", train_cells=np.full(4, 0.25))
    return SearchResult(
        strategy="grid", best=best, constraints=tuple(constraints), constraints_satisfied=True,
        selection_counts=counts, n_folds=n_folds,
    )  # fmt: skip


def _new_sample_chance(k, m, n, fraction, bound, draws=400_000, seed=0):
    """Brute force: a new sample of round(n * fraction) rows, each counted by the precision with
    probability m / n (binomial trials), its successes binomial at a rate drawn from the Jeffreys
    posterior Beta(k + 1/2, m - k + 1/2); the floor met where successes / trials >= bound, and
    missed with no trial (zero_division 0)."""
    rng = np.random.default_rng(seed)
    trials = rng.binomial(round(n * fraction), m / n, size=draws)
    rate = rng.beta(k + 0.5, m - k + 0.5, size=draws)
    hits = rng.binomial(trials, rate)
    return float(np.mean((trials > 0) & (hits >= bound * trials - 1e-12)))


@pytest.mark.parametrize(
    ("counts", "uncertain"),
    [((1, 0, 51, 207), True), ((2, 0, 50, 207), True), ((30, 8, 20, 200), False)],
)
def test_a_floor_met_on_a_handful_of_rows_is_warned_about_with_its_chance(counts, uncertain):
    """The search certifies a floor by a normal approximation, which on one predicted positive
    (precision 1 of 1) clears 0.7 at the default 0.55; the exact chance that a new fold-sized
    sample meets it is 0.13 (docs/quality.md). The choice is kept and the warning gives that
    chance, checked here by simulation."""
    from metro.constraints import get_constraints
    from metro.search.base import diagnose

    cons = get_constraints([{"metric": "precision", "at_least": 0.7}])
    found = [w for w in diagnose(_met(counts, cons), f1()) if w.code == "constraint_uncertain"]
    assert bool(found) == uncertain
    tp, fp = counts[0], counts[1]
    chance = _new_sample_chance(tp, tp + fp, sum(counts), 1 / 5, 0.7)
    if uncertain:
        (warning,) = found
        assert f"({tp} of the {tp + fp} rows it counts)" in warning.message
        shown = float(warning.message.split("probability ")[1].split(",")[0])
        assert shown == pytest.approx(chance, abs=0.011)
        assert "below the 0.55 it was judged at" in warning.message
    else:
        assert chance > 0.55


def test_no_uncertain_floor_is_reported_where_it_was_missed_or_judged_otherwise():
    """Not where the constraints were missed (constraints_not_met says so), not for a recall
    floor met on enough positives, not for a bound at the range's end (judged on the estimate),
    and not for a ratio that is no proportion (its normal bound is the whole judgement)."""
    from metro.constraints import get_constraints
    from metro.search.base import diagnose

    def codes(result):
        return {w.code for w in diagnose(result, f1())}

    cons = get_constraints([{"metric": "precision", "at_least": 0.7}])
    missed = _met((1, 0, 51, 207), cons)
    missed.constraints_satisfied = False
    assert WarningCode.CONSTRAINT_UNCERTAIN not in codes(missed)
    recall = get_constraints([{"metric": "recall", "at_least": 0.8}])
    assert WarningCode.CONSTRAINT_UNCERTAIN not in codes(_met((240, 200, 10, 800), recall))
    # 9 of 10 positives found: a new sample meets recall 0.8 with probability 0.66, above 0.55
    assert WarningCode.CONSTRAINT_UNCERTAIN not in codes(_met((9, 20, 1, 200), recall))
    # 4 of 4: certified by the normal bound (0.95), met by a new sample with probability 0.48
    assert WarningCode.CONSTRAINT_UNCERTAIN in codes(_met((4, 20, 0, 200), recall))
    everything = get_constraints([{"metric": "recall", "at_least": 1.0}])
    assert WarningCode.CONSTRAINT_UNCERTAIN not in codes(_met((10, 20, 0, 200), everything))
    # asked to judge on the estimate alone (confidence 0.5): no margin, and no warning
    asked = get_constraints([{"metric": "recall", "at_least": 0.7, "confidence": 0.5}])
    assert WarningCode.CONSTRAINT_UNCERTAIN not in codes(_met((7, 20, 3, 200), asked))
    f1_floor = get_constraints([{"metric": "f1", "at_least": 0.5}])
    assert WarningCode.CONSTRAINT_UNCERTAIN not in codes(_met((2, 0, 2, 200), f1_floor))
