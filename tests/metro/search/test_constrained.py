"""The constrained grid: its choice against an oracle over the fits it made, the multipliers'
effect, the refit, and the estimator end to end."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import precision_score, recall_score

from metro import MetroClassifier
from metro.constraints import get_constraints
from metro.costs import empirical_l_lambda, penalty_cells
from metro.metrics import f1, precision
from metro.search import SearchConfig, run_search
from metro.search.constrained import multiplier_rows
from metro.search.finite import FiniteHypothesisSolver, threshold_predictions


def _finite(spec, constraints, seed=0, n=300):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    x = y + rng.normal(scale=1.2, size=n)
    # thresholds of x and of a second, noisier feature: a set that is not one ROC curve
    z = y + rng.normal(scale=2.0, size=n)
    preds = np.concatenate([threshold_predictions(x), threshold_predictions(z)], axis=1)
    return FiniteHypothesisSolver(spec, y, preds, constraints=constraints), preds, y


def test_finite_solver_minimizes_the_lagrangian():
    cons = get_constraints([{"metric": "recall", "at_least": 0.9}])
    solver, _, _ = _finite(precision(), cons)
    lambdas = np.array([-0.8, -0.6, -0.4])
    mus = np.array([[0.0], [1.0], [8.0]])
    picked = solver.solve(lambdas, shift="minimal", multipliers=mus)
    pen = penalty_cells(np.stack([c.cells for c in cons]), mus)
    for k, cand in enumerate(picked):
        values = empirical_l_lambda(solver.spec, lambdas[k], solver.cells, pen[k])
        assert empirical_l_lambda(solver.spec, lambdas[k], cand.train_cells, pen[k])[0] == (
            pytest.approx(values.min())
        )
        assert cand.multipliers == (float(mus[k, 0]),)


@pytest.mark.parametrize("seed", range(4))
def test_choice_is_the_best_feasible_fit_the_grid_made(seed):
    """Oracle: among every (lambda, mu) fit of the trace, the best metric whose constraint holds
    (on the training sample: no held-out part, threshold 0)."""
    spec = precision()
    cons = get_constraints([{"metric": "recall", "at_least": 0.75}])
    solver, _, _ = _finite(spec, cons, seed)
    config = SearchConfig(n_lambdas=9, threshold="zero", multipliers=(0.0, 0.5, 2.0, 8.0))
    result = run_search(solver, config=config, constraints=cons)
    assert result.strategy == "constrained-grid"
    seen = []
    for lam in np.linspace(*spec.lambda_range, 11)[1:-1]:
        for mu in config.multipliers:
            cand = solver.solve(np.array([lam]), shift="minimal",
                                multipliers=multiplier_rows(cons, mu, 1))[0]  # fmt: skip
            seen.append(cand)
    feasible = [c for c in seen if cons[0].holds(c.train_cells)]
    assert feasible, "the grid should reach the recall floor"
    best = min(c.train_loss(spec) for c in feasible)
    assert result.constraints_satisfied is True
    assert result.best.train_loss(spec) == pytest.approx(best)
    assert result.constraint_values[0] >= 0.75
    # the unconstrained optimum breaks the floor, so the constraint did something
    free = run_search(solver, config=SearchConfig(n_lambdas=9, threshold="zero"))
    assert not cons[0].holds(free.best.train_cells)


def test_multipliers_push_towards_the_constraint():
    cons = get_constraints([{"metric": "recall", "at_least": 0.95}])
    solver, _, _ = _finite(precision(), cons, 1)
    lam = np.array([-0.7])
    recalls = [
        cons[0].value(solver.solve(lam, shift="minimal",
                                   multipliers=multiplier_rows(cons, mu, 1))[0].train_cells)
        for mu in (0.0, 1.0, 4.0, 16.0)
    ]  # fmt: skip
    assert recalls == sorted(recalls) and recalls[-1] > recalls[0]


def test_an_unreachable_constraint_is_reported_not_hidden():
    cons = get_constraints([{"metric": "precision", "at_least": 1.0},
                            {"metric": "recall", "at_least": 1.0}])  # fmt: skip
    solver, _, _ = _finite(f1(), cons, 2)
    result = run_search(solver, config=SearchConfig(n_lambdas=5, threshold="zero"),
                        constraints=cons)  # fmt: skip
    assert result.constraints_satisfied is False
    assert len(result.constraint_values) == 2
    assert "constraints_not_met" in {w.code for w in result.warnings}


def test_constraints_need_the_grid():
    cons = get_constraints([{"metric": "recall", "at_least": 0.9}])
    solver, _, _ = _finite(f1(), cons)
    with pytest.raises(ValueError, match="constraints need the grid strategy"):
        run_search(solver, config=SearchConfig(strategy="bisection", cv=None), constraints=cons)


def test_bad_multipliers_are_refused():
    with pytest.raises(ValueError, match="multipliers"):
        SearchConfig(multipliers=(0.0, -1.0))
    with pytest.raises(ValueError, match="multipliers"):
        SearchConfig(multipliers=())


def _imbalanced(n, seed):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.25).astype(np.int64)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    X[:, 0] += 1.2 * y
    X[:, 1] += 0.6 * y * rng.normal(size=n)  # heteroscedastic: misspecified for a linear model
    return X, y


def test_estimator_meets_a_recall_floor_on_held_out_data():
    X, y = _imbalanced(1600, 0)
    X_test, y_test = _imbalanced(4000, 1)
    common = {"metric": "precision", "random_state": 0, "n_lambdas": 7,
              "training": {"max_iter": 200}}  # fmt: skip
    free = MetroClassifier(**common).fit(X, y)
    clf = MetroClassifier(**common, constraints=[{"metric": "recall", "at_least": 0.8}]).fit(X, y)
    assert recall_score(y_test, free.predict(X_test)) < 0.6  # precision alone gives up recall
    assert clf.constraints_satisfied_ is True
    assert "constraints_not_met" not in {w.code for w in clf.search_result_.warnings}
    assert clf.constraint_values_[0] >= 0.8  # pooled over the five held-out folds
    assert recall_score(y_test, clf.predict(X_test)) >= 0.75  # and close to it on new data
    assert precision_score(y_test, clf.predict(X_test)) > y_test.mean()  # better than chance
    # the refit carries the chosen multiplier
    assert clf.search_result_.final.multipliers == clf.search_result_.best.multipliers
    steps = clf.trace_
    assert {s.multipliers for s in steps[:-1]} >= {(0.0,)}
    assert len({s.multipliers for s in steps}) == len(SearchConfig().multipliers)
    # every step names the grid multiplier it was fitted at (the refit the chosen one's) and
    # the constraint's value where its metric is measured: one fold's held-out rows
    assert [s.mu for s in steps[:-1]] == [
        mu for mu in SearchConfig().multipliers for _ in range(5 * 7)
    ]
    assert steps[-1].mu == clf.search_result_.best.mu is not None
    assert steps[-1].multipliers == clf.search_result_.best.multipliers
    first = clf.search_result_.trace[0]
    recall_0 = first.constraint_values[0]
    assert 0.0 <= recall_0 <= 1.0 and len(first.constraint_values) == 1
    assert first.to_dict()["constraint_values"] == [recall_0]


def test_a_constraint_without_confidence_is_judged_at_the_default_margin():
    """On five folds' held-out rows the search judges a floor without a confidence at
    DEFAULT_CONFIDENCE for a new sample of one fold's size: the same threshold as asking for it,
    a higher recall than ``confidence: 0.5`` (the estimate itself) and a lower one than 0.9."""
    from sklearn.metrics import recall_score

    from metro.search.base import Candidate
    from metro.search.constrained import (
        DEFAULT_CONFIDENCE,
        judge_constrained,
        judged_constraints,
    )

    rng = np.random.default_rng(5)
    folds = []
    for k in range(5):
        y = rng.integers(0, 2, 400)
        folds.append(Candidate(lam=0.0, shift="minimal", train_cells=np.full(4, 0.25), fold=k,
                               validation_scores=2 * y + rng.normal(size=400),
                               validation_labels=y))  # fmt: skip
    scores = np.concatenate([c.validation_scores for c in folds])
    labels = np.concatenate([c.validation_labels for c in folds])

    def recall_at(confidence):
        spec = {"metric": "recall", "at_least": 0.8}
        if confidence is not None:
            spec["confidence"] = confidence
        cons = judged_constraints(get_constraints([spec]))
        choice = judge_constrained(precision(), cons, folds, tune=True)
        assert choice.feasible
        return recall_score(labels, (scores >= choice.threshold).astype(int))

    assert (
        judged_constraints(get_constraints([{"metric": "recall", "at_least": 0.8}]))[0].confidence
        == DEFAULT_CONFIDENCE
    )
    assert recall_at(None) == recall_at(DEFAULT_CONFIDENCE)
    assert recall_at(0.5) < recall_at(None) < recall_at(0.9)
    assert 0.8 <= recall_at(0.5) < 0.805  # the estimate alone sits at the floor


class _TwoShapes:
    """A stand-in solver whose fits alternate between two held-out score shapes over the same
    2,000 labels: "many" ranks 500 rows first, 345 of them positive (precision 0.69, just under
    a 0.7 floor); "few" ranks 10 rows first, 8 of them positive (0.8, far above it, on little
    evidence)."""

    def __init__(self):
        self.spec = f1()
        self.y = np.r_[np.ones(345), np.zeros(155), np.ones(255), np.zeros(1245)].astype(int)
        many = np.r_[np.full(500, 2.0), np.full(1500, 1.0)]
        few_y = np.r_[np.ones(8), np.zeros(2), np.ones(592), np.zeros(1398)].astype(int)
        self.shapes = [(many, self.y), (np.r_[np.full(10, 2.0), np.full(1990, 1.0)], few_y)]

    def solve(self, lambdas, *, shift, warm_start=None, multipliers=None):
        from metro.search.base import Candidate, cells_from_predictions

        out = []
        for i, lam in enumerate(lambdas):
            scores, labels = self.shapes[i % 2]
            cells = np.array([0.3, 0.2, 0.1, 0.4])
            held_out = cells_from_predictions(labels, (scores >= 0)[:, None])[0]
            out.append(Candidate(lam=float(lam), shift=shift, train_cells=cells,
                                 validation_cells=held_out, validation_scores=scores,
                                 validation_labels=labels))  # fmt: skip
        return out


def test_an_uncertifiable_floor_with_a_confidence_falls_back_to_the_fit_likeliest_to_hold():
    """Precision at least 0.7 at 90% on a new sample: neither shape can be certified. The bound
    of "many" misses by fewer points (0.047 against 0.14), but "few" is the likelier to hold on
    new data (0.70 against 0.37), and a confidence asks for that: the search delivers "few"."""
    from metro.search.constrained import constrained_grid_search

    cons = get_constraints([{"metric": "precision", "at_least": 0.7, "confidence": 0.9}])
    config = SearchConfig(n_lambdas=2, multipliers=(0.0,))
    result = constrained_grid_search([_TwoShapes()], config=config, constraints=cons)
    assert result.constraints_satisfied is False
    lambdas = [step.lam for step in result.trace]
    assert result.best.lam == lambdas[1]  # the grid's second fit: "few"
    assert 1.0 < result.threshold < 2.0  # its top 10 rows
    (warning,) = [w for w in result.warnings if w.code == "constraints_not_met"]
    # The other convention for a precision floor is named, since this one could not be met.
    assert "flagging no row should count as meeting precision >= 0.7" in warning.message
    assert "zero_division 1" in warning.message
    # ranked by shortfall in points (the order without a confidence), "many" would come first
    from metro.search.constrained import judge_constrained

    fits = _TwoShapes().solve(np.array([-0.6, -0.3]), shift="minimal")
    for by_certainty, first in [(False, 0), (True, 1)]:
        judged = [
            judge_constrained(f1(), cons, [fit], tune=True, by_certainty=by_certainty)
            for fit in fits
        ]
        assert min((0, 1), key=lambda i: judged[i].rank) == first


def test_an_unmet_floor_says_how_far_to_loosen_it():
    """Where no fit meets the floor, the result carries the tightest floor some fit flagging rows
    met at the same confidence (the largest new-sample bound over every fit and threshold,
    checked by brute force), and the warning names it; asking for that floor is then met."""
    from metro.search.constrained import constrained_grid_search
    from metro.thresholds import cells_at_all_thresholds

    floor = {"metric": "precision", "at_least": 0.7, "confidence": 0.9}
    config = SearchConfig(n_lambdas=2, multipliers=(0.0,))
    result = constrained_grid_search(
        [_TwoShapes()], config=config, constraints=get_constraints([floor])
    )
    assert result.constraints_satisfied is False
    (sure,) = get_constraints([floor])
    best = -np.inf
    for scores, labels in _TwoShapes().shapes:
        _, cells = cells_at_all_thresholds(scores, labels)
        flags = cells[:, 0] + cells[:, 1] > 0
        bounds = sure.prediction_bounds(cells[flags], labels.size, 1.0)
        best = max(best, float(bounds.max()))
    (reached,) = result.constraint_reach
    assert reached == pytest.approx(best) and 0.5 < reached < 0.7
    (warning,) = [w for w in result.warnings if w.code == "constraints_not_met"]
    assert f"Precision >= {reached:.3g} at confidence 0.9" in warning.message
    loosened = {**floor, "at_least": reached - 1e-9}
    met = constrained_grid_search(
        [_TwoShapes()], config=config, constraints=get_constraints([loosened])
    )
    assert met.constraints_satisfied is True
    assert not [w for w in met.warnings if w.code == "constraints_not_met"]


@pytest.mark.parametrize(("confidence", "bound"), [(0.9, 0.7), (None, 0.85)])
def test_an_uncertifiable_floor_that_flagging_nothing_meets_flags_nothing(confidence, bound):
    """The same floor where 0/0 counts as meeting it (precision's zero_division 1, the
    false-discovery-rate convention): flagging no row meets it, on the held-out rows and on a
    new sample (which flags none of them either), so where neither shape can be certified the
    search delivers a threshold above every held-out score as meeting the floor, with or without
    a confidence (judged at the default's then), and says what it delivered."""
    from metro.search.constrained import constrained_grid_search

    floor: dict[str, object] = {"metric": "precision", "at_least": bound}
    if confidence is not None:
        floor["confidence"] = confidence
    config = SearchConfig(n_lambdas=2, multipliers=(0.0,))
    flagged = get_constraints([{**floor, "params": {"zero_division": 1.0}}])
    result = constrained_grid_search([_TwoShapes()], config=config, constraints=flagged)
    assert result.constraints_satisfied is True
    # Above every held-out score of either shape: no row is flagged.
    assert result.threshold > max(s.max() for s, _ in _TwoShapes().shapes)
    assert result.selection_counts is not None and sum(result.selection_counts[:2]) == 0
    assert "constraints_not_met" not in [w.code for w in result.warnings]
    (warning,) = [w for w in result.warnings if w.code == "predicts_one_class"]
    assert f"meets precision(zero_division=1) >= {bound:g} only because flagging nothing" in (
        warning.message
    )
    (reached,) = result.constraint_reach  # "few", 8 of 10 right, is the best a flagging fit did
    assert 0.5 < reached < bound
    at = "0.9" if confidence else "0.55 (the default)"
    assert f"Precision (zero_division 1) >= {reached:.3g} at confidence {at}" in warning.message
    # Under the other convention flagging nothing misses the floor: the fallback is a fit that
    # flags rows, delivered as missing it.
    missed = constrained_grid_search(
        [_TwoShapes()], config=config, constraints=get_constraints([floor])
    )
    assert missed.constraints_satisfied is False
    assert missed.threshold < max(s.max() for s, _ in _TwoShapes().shapes)
    assert "predicts_one_class" not in [w.code for w in missed.warnings]
    # A certifiable floor is unaffected: at 0.6 "many" (0.69 on 500 rows) is certified
    # either way and delivered the same.
    loose = [{**floor, "at_least": 0.6}, {**floor, "at_least": 0.6, "params": {"zero_division": 1}}]
    chosen = [
        constrained_grid_search([_TwoShapes()], config=config, constraints=get_constraints([c]))
        for c in loose
    ]
    assert all(r.constraints_satisfied for r in chosen)
    assert chosen[0].threshold == chosen[1].threshold < 2.0
    assert chosen[0].best.lam == chosen[1].best.lam


def _separable(n: int, positives: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    y = np.zeros(n, dtype=np.int64)
    y[:positives] = 1
    rng.shuffle(y)
    X = rng.normal(size=(n, 3)).astype(np.float32)
    X[:, 0] = 2.0 * y - 1.0 + 0.01 * X[:, 1]  # one feature separates the classes
    return X, y


def test_a_bound_at_a_proportions_best_value_is_judged_on_the_estimate():
    """recall >= 1: every margin for the sample's noise keeps a proportion's bound below 1 (the
    Jeffreys centre of 24 / 24 is 0.98), so at the default confidence no fit could meet it,
    and a perfectly separable task was told to loosen it to 0.991. It is judged on the held-out
    estimate instead; asking a confidence above 0.5 for it is refused."""
    X, y = _separable(400, 24)
    floor = {"metric": "recall", "at_least": 1.0}
    clf = MetroClassifier(metric="precision", constraints=[floor], n_lambdas=5, random_state=0)
    clf.fit(X, y)
    assert clf.constraints_satisfied_ is True and clf.constraint_values_ == [1.0]
    assert "constraints_not_met" not in {w.code.value for w in clf.warnings_}
    assert recall_score(y, clf.predict(X)) == 1.0
    with pytest.raises(ValueError, match=r"recall >= 1 cannot be certified at confidence 0.9"):
        get_constraints([{**floor, "confidence": 0.9}])
    with pytest.raises(ValueError, match=r"false_positive_rate <= 0 cannot be certified"):
        get_constraints([{"metric": "false_positive_rate", "at_most": 0, "confidence": 0.6}])
    assert get_constraints([{**floor, "confidence": 0.5}])[0].at_range_end


def test_a_floor_no_fit_can_certify_is_not_loosened_below_the_metrics_range():
    """40 rows, 3 positives, precision at least 0.7 at 90%: no fit that flags rows certifies
    any precision at all. The tightest bound met was reported as "precision >= -0.0637"."""
    rng = np.random.default_rng(0)
    y = np.zeros(40, dtype=np.int64)
    y[:3] = 1
    rng.shuffle(y)
    X = rng.normal(size=(40, 5)).astype(np.float32)
    X[:, 0] += y
    floor = {"metric": "precision", "at_least": 0.7, "confidence": 0.9}
    clf = MetroClassifier(metric="f1", constraints=[floor], n_lambdas=5, random_state=0)
    clf.fit(X, y)
    result = clf.search_result_
    assert result.constraints_satisfied is False
    assert result.constraint_reach == (0.0,)  # clipped to the range: was negative
    (message,) = [w.message for w in clf.warnings_ if w.code.value == "constraints_not_met"]
    assert "no fit that flags rows certifies any bound on Precision at confidence 0.9" in message
    assert ">= -" not in message and "tightest bounds" not in message
    assert "most likely to meet them on new data" in message
    assert "missed them by the least" not in message  # that is the rule without a confidence


def test_the_reach_hint_names_a_weighted_accuracy_by_its_display_name_with_its_costs():
    """A floor on weighted accuracy with a false negative costing 5 that no fit meets: the hint
    said "weighted_accuracy >= ...", leaving out which costs the bound is on."""
    rng = np.random.default_rng(0)
    y = (rng.random(300) < 0.3).astype(np.int64)
    X = rng.normal(size=(300, 4)).astype(np.float32)
    X[:, 0] += 0.8 * y
    floor = {"metric": "weighted_accuracy", "params": {"w_fn": 5.0}, "at_least": 0.99}
    clf = MetroClassifier(metric="f1", constraints=[floor], n_lambdas=5, random_state=0)
    clf.fit(X, y)
    (message,) = [w.message for w in clf.warnings_ if w.code.value == "constraints_not_met"]
    (reached,) = clf.search_result_.constraint_reach
    assert f"met: Weighted accuracy (w_fn 5) >= {reached:.3g} at confidence" in message
    assert "weighted_accuracy >=" not in message
