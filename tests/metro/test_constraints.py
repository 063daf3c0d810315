"""Constraints: their values against sklearn.metrics, the linear form g . C >= 0 against the
ratio, the Lagrangian cost tables against a brute-force minimizer, and the constrained threshold
against enumeration."""

from __future__ import annotations

import re

import numpy as np
import pytest
from sklearn.metrics import confusion_matrix, precision_score, recall_score

from metro.constraints import Constraint, get_constraint, get_constraints
from metro.costs import cost_tables, empirical_l_lambda, penalty_cells
from metro.metrics import confusion_fractions, f1, get_metric, precision
from metro.thresholds import best_constrained_threshold, cells_at_all_thresholds

RNG = np.random.default_rng(0)


def _rates(y, p):
    tn, fp, _fn, _tp = confusion_matrix(y, p, labels=[0, 1]).ravel()
    return {"false_positive_rate": fp / (fp + tn), "true_negative_rate": tn / (tn + fp)}


@pytest.mark.parametrize("seed", range(5))
def test_constraint_values_match_sklearn(seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, 200)
    p = rng.integers(0, 2, 200)
    cells = confusion_fractions(y, p)
    expected = {
        "recall": recall_score(y, p),
        "precision": precision_score(y, p, zero_division=0),
        **_rates(y, p),
    }
    for name, value in expected.items():
        c = get_constraint({"metric": name, "at_least": 0.5})
        assert c.value(cells) == pytest.approx(value)
        assert c.slack(cells) == pytest.approx(value - 0.5)
        assert c.holds(cells) == (value >= 0.5)
        upper = get_constraint({"metric": name, "at_most": 0.5})
        assert upper.slack(cells) == pytest.approx(0.5 - value)
        np.testing.assert_allclose(c.slacks(cells[None, :]), [c.slack(cells)])


def test_specificity_is_the_true_negative_rate():
    assert get_metric("specificity") == get_metric("true_negative_rate")


@pytest.mark.parametrize("sense", ["at_least", "at_most"])
@pytest.mark.parametrize("name", ["recall", "precision", "false_positive_rate", "f1", "jaccard"])
def test_linear_form_agrees_with_the_ratio(name, sense):
    """g . C >= 0 exactly where the ratio meets the bound (cells with a positive denominator)."""
    c = get_constraint({"metric": name, sense: 0.6})
    cells = RNG.dirichlet(np.ones(4), size=2000)
    den = cells @ c.metric.denominator_cells
    cells = cells[den > 1e-9]
    linear = cells @ c.cells >= 0
    ratio = np.array([c.holds(row) for row in cells])
    np.testing.assert_array_equal(linear, ratio)


def test_alpha_beta_constraints_and_parameters():
    c = get_constraint({"metric": "f_beta", "params": {"beta": 2.0}, "at_least": 0.7})
    assert c.metric.params == {"beta": 2.0}
    custom = get_constraint({"metric": {"alpha": [0, 0, 1, 0], "beta": [0, 0, 0, 1]},
                             "at_most": 0.3})  # fmt: skip
    assert custom.value(np.array([0.25, 0.25, 0.25, 0.25])) == pytest.approx(0.0)
    balanced = get_constraint({"metric": "balanced_accuracy", "at_least": 0.8}, np.array([0, 1]))
    assert balanced.metric.name == "balanced_accuracy"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"metric": "recall"}, "exactly one of at_least and at_most"),
        ({"metric": "recall", "at_least": 0.9, "at_most": 0.95}, "exactly one"),
        ({"at_least": 0.9}, "needs a metric"),
        ({"metric": "recall", "at_least": "high"}, "at_least must be a number"),
        ({"metric": "recall", "at_least": float("nan")}, "finite"),
        ({"metric": "recall", "min": 0.9}, "unknown constraint field"),
        ({"metric": "recal", "at_least": 0.9}, "unknown metric 'recal'"),
        ({"metric": {"alpha": [1, 0, 0, 0]}, "at_least": 0.9}, "preset name or"),
        ("recall >= 0.9", "must be a mapping"),
    ],
)
def test_bad_constraints_are_refused_by_name(spec, message):
    with pytest.raises(ValueError, match=message):
        get_constraint(spec)


def test_constraints_must_be_a_list():
    with pytest.raises(ValueError, match="a list"):
        get_constraints({"metric": "recall", "at_least": 0.9})
    assert get_constraints(None) == ()


@pytest.mark.parametrize("shift", ["minimal", "paper"])
def test_lagrangian_tables_have_the_lagrangians_minimizer(shift):
    """Per true label, the cheaper prediction of the (lambda, mu) cost table is the one that
    lowers (a - lambda d - mu g) . C, by brute force over the two predictions."""
    spec = f1()
    g = np.stack([get_constraint({"metric": "recall", "at_least": 0.9}).cells,
                  get_constraint({"metric": "precision", "at_least": 0.7}).cells])  # fmt: skip
    lambdas = np.linspace(-0.95, -0.05, 7)
    mus = RNG.uniform(0, 5, size=(7, 2))
    tables = cost_tables(spec, lambdas, shift=shift, penalties=penalty_cells(g, mus))
    pen = penalty_cells(g, mus)
    # One example of each label; its cells for each prediction.
    cell = {(1, 1): [1, 0, 0, 0], (1, 0): [0, 1, 0, 0], (0, 1): [0, 0, 1, 0], (0, 0): [0, 0, 0, 1]}
    for k in range(7):
        for truth in (0, 1):
            target = {
                pred: float(
                    empirical_l_lambda(spec, lambdas[k], np.array(cell[(pred, truth)]), pen[k])[0]
                )
                for pred in (0, 1)
            }
            cost = {pred: tables[k, pred, truth] for pred in (0, 1)}
            if abs(target[1] - target[0]) > 1e-9:
                assert (cost[1] < cost[0]) == (target[1] < target[0])


def test_penalties_are_checked():
    with pytest.raises(ValueError, match="non-negative"):
        penalty_cells(np.ones((1, 4)), np.array([[-1.0]]))
    with pytest.raises(ValueError, match="multipliers per row"):
        penalty_cells(np.ones((2, 4)), np.array([[1.0]]))


@pytest.mark.parametrize("seed", range(8))
def test_constrained_threshold_is_the_best_feasible_by_enumeration(seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, 120)
    scores = np.round(y + rng.normal(scale=1.0, size=120), 1)  # ties on purpose
    spec = precision()
    cons = [Constraint(metric=get_metric("recall"), sense="at_least", bound=0.8)]
    choice = best_constrained_threshold(spec, cons, scores, y)
    # brute force: every cut, predictions by >=
    cuts = np.r_[np.unique(scores), np.inf]
    best = None
    for t in cuts:
        p = (scores >= t).astype(int)
        r = recall_score(y, p)
        if r >= 0.8:
            pr = precision_score(y, p, zero_division=0)
            best = pr if best is None else max(best, pr)
    assert choice.feasible and best is not None
    assert -choice.loss == pytest.approx(best)
    p = (scores >= choice.threshold).astype(int)
    assert recall_score(y, p) >= 0.8
    assert precision_score(y, p, zero_division=0) == pytest.approx(best)


def test_infeasible_threshold_misses_by_the_least():
    """No threshold meets both floors and neither asks for a confidence: the choice misses them
    by the least summed shortfall; asked to (``by_certainty``), it is the one whose constraints
    come closest to holding in probability (the highest summed log certainty), by enumeration."""
    y = np.array([0, 1, 0, 1, 0, 0])
    scores = np.array([0.9, 0.8, 0.7, 0.1, 0.2, 0.3])
    cons = [Constraint(metric=get_metric("precision"), sense="at_least", bound=0.99),
            Constraint(metric=get_metric("recall"), sense="at_least", bound=0.99)]  # fmt: skip
    choice = best_constrained_threshold(f1(), cons, scores, y)
    assert not choice.feasible and not choice.by_certainty
    _thresholds, cells = cells_at_all_thresholds(scores, y)
    shortfalls = [-sum(min(c.slack(row), 0) for c in cons) for row in cells]
    assert choice.shortfall == pytest.approx(min(shortfalls))
    likely = best_constrained_threshold(f1(), cons, scores, y, by_certainty=True)
    certainty = [sum(float(c.log_certainties(row, 6)[0]) for c in cons) for row in cells]
    assert likely.by_certainty and likely.log_certainty == pytest.approx(max(certainty))


def test_an_infeasible_choice_misses_by_the_least_even_where_another_scores_better():
    """Precision at least 0.95 that no threshold meets: the choice is the threshold missing it
    by the least (0.55: precision 0.75), not the one with the better F1 that misses it by more
    (0.35: precision 0.67); the summed shortfall ranks before the loss."""
    y = np.array([0, 1, 1, 1, 0, 1, 0, 0])
    scores = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2])
    floor = get_constraint({"metric": "precision", "at_least": 0.95})
    choice = best_constrained_threshold(f1(), [floor], scores, y)
    assert not choice.feasible
    assert choice.threshold == pytest.approx(0.55)
    assert choice.slacks[0] == pytest.approx(0.75 - 0.95)
    _thresholds, cells = cells_at_all_thresholds(scores, y)
    best_f1 = float(np.max(f1().scores_of_cells(cells)))
    assert -choice.loss < best_f1  # a better F1 was there, at a larger shortfall


def test_an_uncertifiable_floor_falls_back_to_the_choice_most_likely_to_meet_it():
    """Precision at least 0.7 at 90% for a new sample a fifth as large, where no threshold can
    certify it: the top 10 rows hold 9 positives, the top 500 hold 330 (0.66). The latter's
    bound is the higher (0.59 against 0.56) and it misses by fewer points, but it would meet the
    floor on new data about one time in five; the former about two times in three. The
    fallback takes the former."""
    top = np.r_[np.ones(9, int), 0]
    rest = np.r_[np.ones(321, int), np.zeros(169, int)]
    tail = np.r_[np.ones(100, int), np.zeros(1400, int)]
    y = np.r_[top, rest, tail]
    scores = np.r_[np.full(10, 3.0), np.full(490, 2.0), np.full(1500, 1.0)]
    sure = get_constraint({"metric": "precision", "at_least": 0.7, "confidence": 0.9})
    choice = best_constrained_threshold(f1(), [sure], scores, y, new_fraction=0.2)
    assert not choice.feasible and choice.by_certainty  # a confidence was asked for
    assert 2.0 < choice.threshold <= 3.0  # the top 10 rows only
    _thresholds, cells = cells_at_all_thresholds(scores, y)
    slacks = sure.slacks(cells, y.size, new_fraction=0.2)
    assert slacks[2] > slacks[1]  # the bound alone would have taken the top 500
    assert np.exp(choice.log_certainty) > 0.6


@pytest.mark.parametrize(
    ("name", "sense", "bound", "new_fraction", "scale"),
    [("precision", "at_least", 0.7, None, 1), ("recall", "at_least", 0.8, None, 1),
     ("false_positive_rate", "at_most", 0.1, None, 1), ("f1", "at_least", 0.6, None, 1),
     ("f1", "at_least", 0.6, 0.2, 1),
     # a new sample with many expected trials: the normal approximation, as the bound
     ("precision", "at_least", 0.7, 0.2, 40), ("false_positive_rate", "at_most", 0.1, 0.2, 40)],
)  # fmt: skip
def test_a_constraint_is_certified_at_a_confidence_exactly_where_its_certainty_reaches_it(
    name, sense, bound, new_fraction, scale
):
    """For every row of random confusion counts and several confidences: the bound's slack is
    >= 0 exactly where the log certainty is >= log(confidence) (away from round-off), for the
    exact bound, the delta method's and the new-sample bound where it has many trials."""
    rng = np.random.default_rng(7)
    counts = rng.integers(7, 60, size=(400, 4)).astype(float)
    counts[:5] = [[0, 0, 10, 10], [10, 0, 0, 10], [0, 10, 10, 0], [20, 20, 0, 0], [5, 1, 1, 5]]
    counts *= scale
    n = 300 * scale
    cells = counts / n  # rows of fractions of n rows (their counts need not add up to n)
    for confidence in (0.55, 0.8, 0.9, 0.97):
        sure = get_constraint({"metric": name, sense: bound, "confidence": confidence})
        slack = sure.slacks(cells, n, new_fraction=new_fraction)
        certainty = sure.log_certainties(cells, n, new_fraction=new_fraction)
        clear = np.abs(certainty - np.log(confidence)) > 1e-6
        assert clear.sum() > 300
        certified = certainty >= np.log(confidence)
        np.testing.assert_array_equal((slack >= -1e-12)[clear], certified[clear])


@pytest.mark.parametrize("zero_division", [0.0, 1.0])
@pytest.mark.parametrize(("name", "sense", "bound"), [("precision", "at_least", 0.7),
                                                     ("precision", "at_most", 0.3)])  # fmt: skip
def test_a_choice_flagging_no_row_is_certified_on_a_new_sample_as_its_convention_says(
    zero_division, name, sense, bound
):
    """No predicted positive among the held-out rows: a new sample drawn like them flags none
    either, and scores zero_division. The new-sample bound certifies such a row exactly where
    that convention meets the bound (a floor under 1, a ceiling under 0) and its certainty says
    the same (sure, or impossible), at every confidence; before, the bound took "no trials" for
    "nothing known" and never certified it, while the certainty called it sure."""
    n = 400
    empty = np.array([[0.0, 0.0, 40.0, 360.0]]) / n  # tp, fp, fn, tn: nothing flagged
    meets = zero_division >= bound if sense == "at_least" else zero_division <= bound
    for confidence in (0.55, 0.9, 0.99):
        sure = get_constraint({"metric": name, "params": {"zero_division": zero_division},
                               sense: bound, "confidence": confidence})  # fmt: skip
        slack = float(sure.slacks(empty, n, new_fraction=0.2)[0])
        certainty = float(sure.log_certainties(empty, n, new_fraction=0.2)[0])
        assert (slack >= 0) == meets
        assert certainty == (0.0 if meets else -np.inf)
        # On the population (no new sample) no trial still bounds nothing: the exact bound.
        assert float(sure.slacks(empty, n)[0]) < 0


@pytest.mark.parametrize(("k", "m"), [(0, 1), (2, 2), (9, 10), (30, 40), (12, 30)])
@pytest.mark.parametrize(("name", "sense", "bound"), [("precision", "at_least", 0.7),
                                                     ("recall", "at_most", 0.5)])  # fmt: skip
def test_the_chance_of_holding_on_a_new_sample_matches_a_simulation(k, m, name, sense, bound):
    """Few trials: k of m in 1,000 rows, a new sample of 200 rows. Simulated: the rate drawn
    from the Jeffreys posterior, the new sample's trials binomial, its successes binomial; no
    trial scores zero_division (0: fails a floor, meets a ceiling)."""
    rng = np.random.default_rng(11)
    n, new = 1000, 200
    sure = get_constraint({"metric": name, sense: bound, "confidence": 0.9})
    cells = np.zeros(4)
    if name == "precision":  # k true positives of m predicted positive
        cells[:] = [k, m - k, 100, n - 100 - m]
    else:  # recall: k true positives of m positives
        cells[:] = [k, 0, m - k, n - m]
    exact = float(np.exp(sure.log_certainties(cells[None] / n, n, new_fraction=new / n)[0]))
    draws = 200_000
    rate = rng.beta(k + 0.5, m - k + 0.5, size=draws)
    trials = rng.binomial(new, m / n, size=draws)
    hits = rng.binomial(trials, rate)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = np.where(trials > 0, hits / np.maximum(trials, 1), 0.0)
    held = value >= bound - 1e-12 if sense == "at_least" else value <= bound + 1e-12
    assert exact == pytest.approx(held.mean(), abs=0.005)


def test_a_choice_resting_on_one_or_two_rows_is_no_near_miss():
    """Precision at least 0.7 for a new sample a fifth as large: 2 of 2 predicted positives
    right is less likely to hold there than 18 of 20 (a new sample most likely predicts none of
    the former's rows), and 0 of 1 least of all. (The normal approximation put 0 of 1 at 0.25,
    above 60 of 100's 0.20.)"""
    sure = get_constraint({"metric": "precision", "at_least": 0.7, "confidence": 0.9})
    n = 1000

    def certainty(k, m):
        cells = np.array([[k, m - k, 300 - k, n - 300 - (m - k)]]) / n
        return float(np.exp(sure.log_certainties(cells, n, new_fraction=0.2)[0]))

    assert certainty(0, 1) < certainty(2, 2) < certainty(18, 20)
    assert certainty(0, 1) < 0.1 and certainty(2, 2) < 0.4


def test_without_a_row_count_the_certainty_is_whether_the_estimate_holds():
    sure = get_constraint({"metric": "recall", "at_least": 0.8, "confidence": 0.9})
    cells = np.array([[0.85, 0.0, 0.15, 0.0], [0.7, 0.0, 0.3, 0.0]])
    assert sure.log_certainties(cells).tolist() == [0.0, -np.inf]


def test_a_proportions_confidence_bound_is_the_exact_clopper_pearson_one():
    """Recall 68 / 80: the one-sided lower bound at 0.9 is the lower end of the two-sided 0.8
    exact interval (scipy's binomtest); an FPR ceiling is the upper end. The Wald bound it
    replaces (0.85 - z sqrt(0.85 0.15 / 80) = 0.799) is looser at the bottom."""
    from scipy.stats import binomtest

    y = np.r_[np.ones(80, int), np.zeros(120, int)]
    p = np.r_[np.ones(68, int), np.zeros(12, int), np.zeros(120, int)]  # recall 0.85
    cells = confusion_fractions(y, p)
    plain = get_constraint({"metric": "recall", "at_least": 0.8})
    sure = get_constraint({"metric": "recall", "at_least": 0.8, "confidence": 0.9})
    exact = binomtest(68, 80).proportion_ci(confidence_level=0.8, method="exact").low
    assert plain.slacks(cells[None], 200)[0] == pytest.approx(0.05)
    assert sure.slacks(cells[None], 200)[0] == pytest.approx(exact - 0.8)
    assert sure.slacks(cells[None])[0] == pytest.approx(0.05)  # no row count, no bound
    assert sure.to_dict()["confidence"] == 0.9
    upper = get_constraint({"metric": "false_positive_rate", "at_most": 0.2, "confidence": 0.95})
    fpr_cells = confusion_fractions(np.zeros(100, int), np.r_[np.ones(10, int), np.zeros(90, int)])
    high = binomtest(10, 100).proportion_ci(confidence_level=0.9, method="exact").high
    assert upper.slacks(fpr_cells[None], 100)[0] == pytest.approx(0.2 - high)


@pytest.mark.parametrize(("m", "confidence"), [(5, 0.9), (12, 0.9), (40, 0.95), (12, 0.5)])
def test_the_exact_bound_covers_at_least_its_confidence_for_every_true_rate(m, confidence):
    """Brute force over every outcome k of m trials: for any true rate q, the probability that
    the lower bound stays at or below q is at least the confidence (the normal approximation's
    coverage falls well below it at such counts)."""
    from scipy.stats import binom

    sure = get_constraint({"metric": "recall", "at_least": 0.5, "confidence": confidence})
    k = np.arange(m + 1)
    cells = np.stack([k, np.zeros_like(k), m - k, np.zeros_like(k)], axis=1) / m  # tp, fp, fn, tn
    lower = sure.slacks(cells, m) + 0.5
    assert lower[0] == 0.0 and np.all(np.diff(lower) > 0)
    for q in np.linspace(0.0, 1.0, 201):
        assert binom.pmf(k, m, q)[lower <= q + 1e-12].sum() >= confidence - 1e-9


def test_which_metrics_get_the_exact_bound():
    proportions = ["recall", "precision", "false_positive_rate", "true_negative_rate", "accuracy"]
    for name in proportions:
        assert get_constraint({"metric": name, "at_least": 0.1}).is_proportion, name
    for name in ["f1", "balanced_accuracy"]:
        assert not get_constraint({"metric": name, "at_least": 0.1}, y=[0, 0, 0, 1]).is_proportion


def test_a_ratio_that_is_no_proportion_keeps_the_delta_method_bound():
    """F1 = 2 TP / (2 TP + FP + FN): estimate minus z times the delta method's standard error."""
    from statistics import NormalDist

    y = np.r_[np.ones(80, int), np.zeros(120, int)]
    p = np.r_[np.ones(60, int), np.zeros(20, int), np.ones(10, int), np.zeros(110, int)]
    cells = confusion_fractions(y, p)
    sure = get_constraint({"metric": "f1", "at_least": 0.5, "confidence": 0.9})
    f1 = 120 / 150
    u, v = np.array([2.0, 0, 0, 0]), np.array([2.0, 1, 1, 0])
    se = np.sqrt((cells * (u - f1 * v) ** 2).sum() / 200) / (v @ cells)
    expected = f1 - NormalDist().inv_cdf(0.9) * se - 0.5
    assert sure.slacks(cells[None], 200)[0] == pytest.approx(expected)


@pytest.mark.parametrize("bad", [0.3, 1.0, "high", True])
def test_bad_confidence_is_refused(bad):
    with pytest.raises(ValueError, match="confidence"):
        get_constraint({"metric": "recall", "at_least": 0.8, "confidence": bad})


def test_a_confident_threshold_keeps_a_margin():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 400)
    scores = y + rng.normal(size=400)
    spec = precision()
    plain = best_constrained_threshold(
        spec, [get_constraint({"metric": "recall", "at_least": 0.8})], scores, y
    )
    sure = best_constrained_threshold(
        spec,
        [get_constraint({"metric": "recall", "at_least": 0.8, "confidence": 0.95})],
        scores,
        y,
    )
    recall = lambda t: recall_score(y, (scores >= t).astype(int))  # noqa: E731
    assert sure.feasible and recall(sure.threshold) > recall(plain.threshold) >= 0.8


def test_the_new_sample_bound_adds_the_new_samples_noise_to_the_estimates():
    """Recall 68 / 80, a new sample a fifth as large: the estimate minus z standard errors of the
    Jeffreys centre q = 68.5 / 81, times sqrt(1 + 5) for the new sample's own noise."""
    from scipy.stats import norm

    y = np.r_[np.ones(80, int), np.zeros(120, int)]
    p = np.r_[np.ones(68, int), np.zeros(12, int), np.zeros(120, int)]
    cells = confusion_fractions(y, p)[None]
    sure = get_constraint({"metric": "recall", "at_least": 0.8, "confidence": 0.9})
    q = 68.5 / 81
    expected = 0.85 - norm.ppf(0.9) * np.sqrt(q * (1 - q) / 80) * np.sqrt(6.0) - 0.8
    assert sure.slacks(cells, 200, new_fraction=0.2)[0] == pytest.approx(expected)
    # wider than the population's exact bound, which ignores the new sample's noise
    assert sure.slacks(cells, 200, new_fraction=0.2)[0] < sure.slacks(cells, 200)[0]
    # at_most: the upper side; an FPR of 10 / 100 against 0.2
    upper = get_constraint({"metric": "false_positive_rate", "at_most": 0.2, "confidence": 0.9})
    fpr = confusion_fractions(np.zeros(100, int), np.r_[np.ones(10, int), np.zeros(90, int)])
    q = 10.5 / 101
    high = 0.1 + norm.ppf(0.9) * np.sqrt(q * (1 - q) / 100) * np.sqrt(2.0)
    assert upper.slacks(fpr[None], 100, new_fraction=1.0)[0] == pytest.approx(0.2 - high)
    # all correct still leaves a margin (the normal approximation at k = m would not)
    perfect = confusion_fractions(np.ones(10, int), np.ones(10, int))[None]
    assert sure.slacks(perfect, 10, new_fraction=0.2)[0] < 0.0
    # confidence 0.5 is the estimate itself; without a confidence, no bound at all
    half = get_constraint({"metric": "recall", "at_least": 0.8, "confidence": 0.5})
    plain = get_constraint({"metric": "recall", "at_least": 0.8})
    assert half.slacks(cells, 200, new_fraction=0.2)[0] == pytest.approx(0.05)
    assert plain.slacks(cells, 200, new_fraction=0.2)[0] == pytest.approx(0.05)


@pytest.mark.parametrize(("m", "confidence"), [(30, 0.9), (60, 0.9), (150, 0.9), (150, 0.55)])
def test_a_floor_certified_for_a_new_sample_fails_there_at_most_as_often_as_allowed(m, confidence):
    """Brute force over every outcome of m trials judged and m / 5 new ones: for any true
    recall q, the probability that the floor is certified on the first and missed on the new
    sample is at most 1 - confidence."""
    from scipy.stats import binom

    bound, new = 0.8, m // 5
    sure = get_constraint({"metric": "recall", "at_least": bound, "confidence": confidence})
    k = np.arange(m + 1)
    cells = np.stack([k, np.zeros_like(k), m - k, np.zeros_like(k)], axis=1) / m
    certified = sure.slacks(cells, m, new_fraction=new / m) >= 0
    assert certified.any() and not certified.all()
    for q in np.linspace(0.5, 1.0, 251):
        missed = binom.cdf(np.ceil(bound * new - 1e-9) - 1, new, q)  # new recall below 0.8
        assert binom.pmf(k, m, q)[certified].sum() * missed <= 1 - confidence + 1e-9


@pytest.mark.parametrize("bad", [0.0, -0.2, float("inf"), "a fifth", True])
def test_bad_new_fraction_is_refused(bad):
    sure = get_constraint({"metric": "recall", "at_least": 0.8, "confidence": 0.9})
    with pytest.raises(ValueError, match="new_fraction"):
        sure.slacks(np.array([[0.4, 0.1, 0.1, 0.4]]), 100, new_fraction=bad)


def test_a_threshold_certified_for_a_new_sample_keeps_a_wider_margin():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 400)
    scores = y + rng.normal(size=400)
    cons = [get_constraint({"metric": "recall", "at_least": 0.8, "confidence": 0.9})]
    population = best_constrained_threshold(precision(), cons, scores, y)
    new_data = best_constrained_threshold(precision(), cons, scores, y, new_fraction=0.2)
    recall = lambda t: recall_score(y, (scores >= t).astype(int))  # noqa: E731
    assert new_data.feasible and recall(new_data.threshold) > recall(population.threshold)


def test_the_chances_kept_between_calls_are_the_ones_computed_afresh():
    """The exact chances are kept per (k, m) for the next call (a constrained search asks for the
    same top rows of every fit): asked in another order, after the store is emptied, they are
    the same."""
    import metro.constraints as module

    sure = get_constraint({"metric": "precision", "at_least": 0.7, "confidence": 0.9})
    n, m = 2000, np.arange(1, 300)
    k = (m * 0.75).astype(int)
    cells = np.stack([k, m - k, 600 - k, n - 600 - (m - k)], axis=1) / n
    first = sure.log_certainties(cells, n, new_fraction=0.2)
    again = sure.log_certainties(cells[::-1], n, new_fraction=0.2)[::-1]
    module._PREDICTED.clear()
    fresh = sure.log_certainties(cells[::-1], n, new_fraction=0.2)[::-1]
    np.testing.assert_array_equal(first, again)
    np.testing.assert_allclose(first, fresh, rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    ("spec", "missed"),
    [
        ({"metric": "precision", "at_least": 0.7}, True),
        ({"metric": "precision", "params": {"zero_division": 1}, "at_least": 0.7}, False),
        ({"metric": "precision", "params": {"zero_division": 0.5}, "at_least": 0.7}, True),
        ({"metric": "precision", "at_most": 0.9}, False),  # 0 <= 0.9: flagging nothing meets it
        ({"metric": "recall", "at_least": 0.8}, False),  # flagging nothing is recall 0, not 0/0
        ({"metric": "false_positive_rate", "at_most": 0.1}, False),
        ({"metric": "f1", "at_least": 0.5}, False),  # its denominator weighs fn
    ],
)
def test_missed_by_flagging_nothing(spec, missed):
    """Only where flagging nothing is 0/0 and 0/0 scores on the wrong side of the bound."""
    (constraint,) = get_constraints([spec])
    assert constraint.missed_by_flagging_nothing is missed
    # What it says, checked on the cells of a classifier that flags no row (3 positives of 10).
    nothing = np.array([0.0, 0.0, 0.3, 0.7])
    if constraint.metric.denominator_cells[2:].any():
        return
    assert constraint.holds(nothing) is (not missed)


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        (
            {"metric": "recall", "at_least": 1.5},
            "at_least 1.5 is outside the range of Recall, [0, 1]: no classifier can meet it",
        ),
        ({"metric": "recall", "at_least": -0.5}, "every classifier meets it"),
        ({"metric": "false_positive_rate", "at_most": -0.1}, "no classifier can meet it"),
    ],
)
def test_a_bound_outside_the_metrics_range_is_refused_in_the_library(spec, said):
    """The service refused it; MetroClassifier ran the whole search and warned
    constraints_not_met (at_least 1.5) or searched under a floor every model meets."""
    with pytest.raises(ValueError, match=re.escape(said)):
        get_constraint(spec)
    # A weighted accuracy is named by its costs: another cost is another metric
    from metro.metrics import weighted_accuracy

    with pytest.raises(ValueError, match=re.escape("range of Weighted accuracy (w_fn 20), [0")):
        Constraint(weighted_accuracy(w_fn=20.0), "at_least", 2.0)


def test_flagging_nothing_meets_a_floor_equal_to_its_convention():
    """Precision with zero_division 1 at least 1.0: flagging no row scores 1, which meets the
    floor (at least, not more than); with zero_division 0 it misses it; a ceiling likewise."""
    met = get_constraint({"metric": "precision", "params": {"zero_division": 1}, "at_least": 1.0})
    assert met.missed_by_flagging_nothing is False
    missed = get_constraint({"metric": "precision", "at_least": 0.5})
    assert missed.missed_by_flagging_nothing is True
    ceiling = get_constraint({"metric": "precision", "at_most": 0.0})  # zero_division 0 is 0
    assert ceiling.missed_by_flagging_nothing is False
