"""Selection under thin evidence (metro.search.safeguard): the fallback, the guard against choices
the held-out rows cannot back, the shrinkage towards the fallback and the refinement's
significance test."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score, jaccard_score
from sklearn.model_selection import StratifiedKFold

from metro import MetroClassifier, SearchConfig
from metro.costs import cost_tables
from metro.examples import figure1_data
from metro.metrics import get_metric
from metro.models import get_model_spec
from metro.search import Candidate, WarningCode, cells_from_predictions, grid_lambdas, run_search
from metro.search.base import FEW_TRUE_POSITIVES
from metro.search.safeguard import (
    MIN_PREDICTED_RATIO,
    constant_decisions,
    erm_like_index,
    held_out_decisions,
    supported,
    supported_threshold,
    win_probability,
)
from metro.search.solver import TrainerSolver
from metro.surrogates import get_surrogate
from metro.trainer import TrainingConfig


class _ScoreSolver:
    """Each lambda's 'fit' is a fixed score vector, judged on the rows ``rows`` (a fold)."""

    def __init__(self, spec, scores_by_lambda, labels, rows):
        self.spec, self.scores, self.labels, self.rows = spec, scores_by_lambda, labels, rows

    def solve(self, lambdas, *, shift, warm_start=None):
        out = []
        for lam in lambdas:
            s = self.scores(float(lam))[self.rows]
            y = self.labels[self.rows]
            cells = cells_from_predictions(y, (s >= 0)[:, None])[0]
            out.append(Candidate(
                lam=float(lam), shift=shift, train_cells=cells, validation_cells=cells,
                validation_scores=s, validation_labels=y,
            ))  # fmt: skip
        return out


N_LAMBDAS = 9


def _problem(n_pos: int, n: int = 400, seed: int = 0):
    """F0.5 on ``n`` rows with ``n_pos`` positives: the ERM-like grid point has a real but weak
    score; every other point puts exactly three positives, alone, at the top (a lucky corner that
    wins the pooled F0.5 on three true positives)."""
    rng = np.random.default_rng(seed)
    labels = np.zeros(n, dtype=int)
    labels[rng.choice(n, n_pos, replace=False)] = 1
    spec = get_metric("f_beta", beta=0.5).resolve(labels)
    lambdas = grid_lambdas(*spec.lambda_range, N_LAMBDAS)
    erm = float(lambdas[erm_like_index(spec, lambdas)])
    weak = rng.normal(size=n) + 1.0 * labels
    lucky = np.full(n, -1.0)
    lucky[np.flatnonzero(labels)[:3]] = 1.0

    def scores(lam: float) -> np.ndarray:
        return weak if lam == erm else lucky

    rows = np.array_split(rng.permutation(n), 3)
    return spec, [_ScoreSolver(spec, scores, labels, r) for r in rows], erm


def _search(solvers, **settings):
    config = SearchConfig(n_lambdas=N_LAMBDAS, shift="minimal", **settings)
    return run_search(solvers[0], config=config, fold_solvers=solvers)


# -- the pieces ---------------------------------------------------------------------------------


def test_supported_counts_need_enough_true_positives_and_enough_predicted_positives():
    assert supported(None)
    assert supported((FEW_TRUE_POSITIVES, 0, 10, 100))
    assert not supported((FEW_TRUE_POSITIVES - 1, 0, 10, 100))
    assert not supported((0, 0, 10, 100))
    # 5 TP but predicting 5 of 60 positives: below MIN_PREDICTED_RATIO of them
    assert MIN_PREDICTED_RATIO * 60 > 5
    assert not supported((5, 0, 55, 100))


def test_the_supported_threshold_skips_a_lucky_corner_that_the_plain_best_takes():
    y = np.array([1, 1, 0, 1, 0, 1, 1, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0])
    scores = -np.arange(y.size, dtype=float)  # ranked as listed
    spec = get_metric("precision").resolve(y)
    threshold, loss, ok = supported_threshold(spec, scores, y)
    decided = scores >= threshold
    tp = int(np.sum(decided & (y == 1)))
    assert ok and tp >= FEW_TRUE_POSITIVES
    # the unrestricted best is the top two rows, precision 1.0 on two true positives
    assert -loss < 1.0
    assert -loss == pytest.approx(tp / decided.sum())
    # with fewer positives than the minimum, the best with a true positive is taken, unsupported
    y2 = np.array([1, 0, 1, 0, 0, 0, 0, 0])
    threshold, loss, ok = supported_threshold(spec, -np.arange(8.0), y2)
    assert not ok and -loss == 1.0


def test_win_probability_is_one_half_for_the_same_decisions_and_tracks_a_real_gain():
    rng = np.random.default_rng(0)
    y = rng.random(500) < 0.2
    spec = get_metric("f1").resolve(y.astype(int))
    noisy = np.where(rng.random(500) < 0.3, ~y, y)
    assert win_probability(spec, y, noisy, noisy) == 0.5
    better = win_probability(spec, y, y, noisy)  # the labels themselves against noise
    assert better == 1.0
    assert win_probability(spec, y, noisy, y) == 0.0
    # two decisions that differ on a single row: no evidence either way
    one_off = noisy.copy()
    one_off[np.flatnonzero(y & ~noisy)[0]] = True
    p = win_probability(spec, y, one_off, noisy)
    assert 0.5 < p < 0.9
    assert win_probability(spec, y, noisy, one_off) == pytest.approx(1 - p)
    with pytest.raises(ValueError, match="one length"):
        win_probability(spec, y, noisy[:10], noisy)


@pytest.mark.parametrize(
    ("metric", "params", "scorer", "positive"),
    [("f1", {}, f1_score, True), ("jaccard", {}, jaccard_score, True),
     ("accuracy", {}, accuracy_score, False), ("weighted_accuracy", {"w_fn": 100.0}, None, True),
     ("balanced_accuracy", {}, balanced_accuracy_score, True)],  # a tie (0.5 each): positive
)  # fmt: skip
def test_the_constant_classifier_is_the_better_of_all_positive_and_all_negative(
    metric, params, scorer, positive
):
    y = (np.random.default_rng(0).random(300) < 0.1).astype(int)
    spec = get_metric(metric, **params).resolve(y)
    chosen = constant_decisions(spec, y)
    assert chosen.shape == y.shape and chosen.all() if positive else not chosen.any()
    ones, zeros = np.ones_like(y), np.zeros_like(y)
    best = max(spec.score(y, ones), spec.score(y, zeros))
    assert spec.score(y, chosen.astype(int)) == pytest.approx(best, abs=1e-12)
    if scorer is not None:  # the scores themselves, checked against scikit-learn
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for decisions in (ones, zeros):
                assert spec.score(y, decisions) == pytest.approx(scorer(y, decisions))


@pytest.mark.parametrize(
    ("metric", "params"), [("f1", {}), ("f_beta", {"beta": 0.5}), ("f_beta", {"beta": 2.0}),
                           ("jaccard", {})],
)  # fmt: skip
def test_the_fallback_lambda_weighs_the_classes_most_nearly_alike(metric, params):
    spec = get_metric(metric, **params).resolve(np.array([0, 1, 0, 0]))
    lambdas = grid_lambdas(*spec.lambda_range, 21)
    tables = cost_tables(spec, lambdas, normalize=False)
    ratio = (tables[:, 0, 1] - tables[:, 1, 1]) / (tables[:, 1, 0] - tables[:, 0, 0])
    i = erm_like_index(spec, lambdas)
    assert abs(np.log(ratio[i])) == pytest.approx(np.min(np.abs(np.log(ratio))))


# -- the rules in the search ----------------------------------------------------------------------


def test_the_guard_replaces_a_choice_resting_on_three_true_positives_by_the_fallback():
    _, solvers, erm = _problem(n_pos=30)
    off = _search(solvers, guard="off")
    assert off.selection_counts[0] == 3 and off.safeguard is None  # the lucky corner wins
    assert WarningCode.FEW_TRUE_POSITIVES in [w.code for w in off.warnings]

    on = _search(solvers, guard="fallback")
    assert on.safeguard is not None and on.safeguard.reason == "unsupported"
    assert on.best.lam == erm and on.trained_lambda == erm
    assert supported(on.selection_counts)
    assert on.threshold == on.safeguard.fallback_threshold
    assert on.selection_counts == on.safeguard.fallback_counts
    assert on.selection_loss > off.selection_loss  # it gave up held-out score for support
    assert [w.code for w in on.warnings if w.code != WarningCode.LAMBDA_AT_GRID_EDGE] == []


def test_a_guard_confidence_keeps_an_unsupported_choice_the_bootstrap_prefers_to_the_fallback():
    """guard_confidence: the unsupported choice is weighed against the fallback first, by the
    paired bootstrap over the held-out rows, and kept where it wins with at least that
    probability; the probability is the one computed from the two sets of pooled decisions."""
    spec, solvers, erm = _problem(n_pos=30)
    off = _search(solvers, guard="off")
    guarded = _search(solvers, guard="fallback", guard_confidence=None)
    labels, choice = held_out_decisions(off)
    fallback, fallback_decided = held_out_decisions(guarded)
    assert np.array_equal(labels, fallback)
    p = win_probability(spec, labels, choice, fallback_decided)
    assert 0.51 < p < 0.98  # the lucky corner against a weak real score: ahead, not certain
    for level, kept in ((p - 0.01, True), (p + 0.01, False)):
        result = _search(solvers, guard="fallback", guard_confidence=level)
        assert result.safeguard is not None
        assert result.safeguard.win_probability == pytest.approx(p)
        assert (result.safeguard.reason is None) == kept, (level, p)
        assert result.best.lam == (off.best.lam if kept else erm)
        assert result.selection_counts == (off if kept else guarded).selection_counts
    # Without the setting the fallback replaces it, with no bootstrap run.
    never = _search(solvers, guard="fallback", guard_confidence=None)
    assert never.safeguard.reason == "unsupported" and never.safeguard.win_probability is None
    assert guarded.safeguard.reason == "unsupported" and guarded.best.lam == erm  # p < 0.75
    # Never a lower bar than shrink_confidence sets a supported choice.
    strict = _search(solvers, guard="fallback", guard_confidence=0.5, shrink_confidence=p + 0.01)
    assert strict.safeguard.reason == "unsupported" and strict.best.lam == erm
    with pytest.raises(ValueError, match="needs guard 'fallback'"):
        SearchConfig(guard="off", guard_confidence=0.8)


def test_when_no_choice_is_supported_the_fallback_is_delivered_with_a_warning():
    _, solvers, erm = _problem(n_pos=4)  # fewer positives than any supported threshold needs
    # By default the choice (3 of the 4 positives, no false positive) is weighed against the
    # fallback (the same 3, and 51 false): kept, as the bootstrap finds it better, and warned of.
    kept = _search(solvers, guard="fallback")
    assert not kept.safeguard.used and kept.safeguard.win_probability >= 0.75
    assert kept.selection_counts[:2] == (3, 0) and kept.safeguard.fallback_counts[:2] == (3, 51)
    assert WarningCode.FEW_TRUE_POSITIVES in [w.code for w in kept.warnings]
    result = _search(solvers, guard="fallback", guard_confidence=None)
    assert result.safeguard.used and not result.safeguard.fallback_supported
    assert result.best.lam == erm
    tp, fp, _, _ = result.selection_counts
    assert tp >= 1 and tp + fp >= 1
    codes = [w.code for w in result.warnings]
    assert WarningCode.NO_SUPPORTED_CHOICE in codes
    message = next(w.message for w in result.warnings if w.code is WarningCode.NO_SUPPORTED_CHOICE)
    assert "cannot support any choice" in message and f"TP {tp}" in message


def test_shrinking_delivers_the_fallback_exactly_when_the_choice_is_not_clearly_better():
    rng = np.random.default_rng(1)
    n = 600
    labels = (rng.random(n) < 0.3).astype(int)
    spec = get_metric("f1").resolve(labels)
    lambdas = grid_lambdas(*spec.lambda_range, N_LAMBDAS)
    erm = float(lambdas[erm_like_index(spec, lambdas)])
    signal = rng.normal(size=n)

    def solvers(gain: float):
        def scores(lam: float) -> np.ndarray:
            strength = 1.0 if lam == erm else 1.0 + gain * (lam - lambdas[0])
            return strength * labels + signal

        rows = np.array_split(np.random.default_rng(0).permutation(n), 3)
        return [_ScoreSolver(spec, scores, labels, r) for r in rows]

    near = _search(solvers(0.05), guard="off", shrink_confidence=0.9)
    far = _search(solvers(4.0), guard="off", shrink_confidence=0.9)
    for result in (near, far):
        g = result.safeguard
        assert g is not None and g.win_probability is not None
        assert g.used == (g.win_probability < 0.9)
        if g.used:
            assert g.reason == "within_noise" and result.best.lam == erm
    assert near.safeguard.used and not far.safeguard.used
    assert far.best.lam != erm
    # without shrink (and guard off) there is nothing to do
    assert _search(solvers(0.05), guard="off").safeguard is None


def test_settings_are_validated_with_clear_errors():
    with pytest.raises(ValueError, match="unknown guard 'always'"):
        SearchConfig(guard="always")
    for name in ("refine_confidence", "shrink_confidence"):
        for bad in (0.3, 1.0, float("nan"), "0.9", True, -1):
            with pytest.raises(ValueError, match=f"{name} must be null or a number in"):
                SearchConfig(**{name: bad})
        assert getattr(SearchConfig(**{name: 0.5}), name) == 0.5
    X, y = figure1_data(100, seed=0)
    with pytest.raises(ValueError, match="unknown guard"):
        MetroClassifier(guard="yes").fit(X, y)
    with pytest.raises(ValueError, match="shrink_confidence"):
        MetroClassifier(shrink_confidence=2.0).fit(X, y)
    with pytest.raises(ValueError, match="refine_confidence"):
        MetroClassifier(refine_confidence=0.1).fit(X, y)


def test_a_significance_level_drops_a_refinement_kept_on_a_tiny_gain():
    X, y = figure1_data(1000, seed=0)
    spec = get_metric("f1").resolve(y)
    folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))

    def solver(tr, va):
        return TrainerSolver(
            spec, X[tr], y[tr], surrogate=get_surrogate("logistic"),
            model=get_model_spec("linear"), config=TrainingConfig(device="cpu"),
            X_validation=None if va is None else X[va], y_validation=None if va is None else y[va],
        )  # fmt: skip

    fold_solvers = [solver(tr, va) for tr, va in folds]
    refit = solver(np.arange(y.size), None)
    any_gain = run_search(fold_solvers[0], config=SearchConfig(n_lambdas=7),
                          fold_solvers=fold_solvers, refit_solver=refit)  # fmt: skip
    assert any_gain.refinement.kept  # kept on this sample by 0.0004 of F1 (tests/.../test_refine)
    assert any_gain.refinement.win_probability is None
    strict = run_search(fold_solvers[0], config=SearchConfig(n_lambdas=7, refine_confidence=0.9),
                        fold_solvers=fold_solvers, refit_solver=refit)  # fmt: skip
    step = strict.refinement
    assert not step.kept and step.win_probability is not None and step.win_probability < 0.9
    assert strict.refined_model is None and strict.threshold != 0.0
    assert step.to_dict()["win_probability"] == step.win_probability


# -- the estimator ---------------------------------------------------------------------------------


def _rare(seed: int, n: int = 400):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5)).astype(np.float32)
    y = (0.7 * X[:, 0] + rng.normal(size=n) > 2.3).astype(int)
    return X, y


def test_the_default_never_delivers_an_empty_held_out_choice_without_trying_the_fallback():
    unguarded_empty = 0
    for seed in (1, 2, 3):
        X, y = _rare(seed)
        assert 5 <= y.sum() <= 20  # a tiny rare-positive task
        for params in ({"beta": 0.5}, {"beta": 1.0}):
            kwargs = {"metric": "f_beta", "metric_params": params, "random_state": 0}
            off = MetroClassifier(guard="off", **kwargs).fit(X, y)
            if not supported(off.search_result_.selection_counts):
                unguarded_empty += 1
            clf = MetroClassifier(**kwargs).fit(X, y)
            tp, fp, _, _ = clf.search_result_.selection_counts
            tried = clf.safeguard_ is not None and clf.safeguard_.used
            assert (tp > 0 and tp + fp > 0) or tried
            if not supported(clf.search_result_.selection_counts):
                # delivered unsupported only as the fallback, or kept over it where the
                # bootstrap finds it better (guard_confidence), and a warning says which
                codes = {w.code for w in clf.warnings_}
                if tried:
                    assert WarningCode.NO_SUPPORTED_CHOICE in codes
                else:
                    assert clf.safeguard_.win_probability >= 0.75
                    assert WarningCode.FEW_TRUE_POSITIVES in codes
            if tried:
                # The step refined the choice the fallback replaced: not kept, and it says why.
                step = clf.refinement_
                assert step is None or (not step.kept and step.replaced_by_fallback)
                assert clf.best_lambda_ == clf.safeguard_.fallback_lambda
                assert clf.threshold_ == clf.safeguard_.fallback_threshold
                assert clf.predict(X).sum() > 0
    assert unguarded_empty >= 1  # the guard had something to do on these tasks


# -- the no_signal warning ---------------------------------------------------------------------


def test_a_choice_the_rows_cannot_tell_from_a_constant_says_so():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(500, 6)).astype(np.float32)
    y = (rng.random(500) < 0.08).astype(int)  # labels unrelated to the features
    clf = MetroClassifier(metric="f_beta", metric_params={"beta": 2.0}, random_state=0).fit(X, y)
    [warning] = [w for w in clf.warnings_ if w.code == WarningCode.NO_SIGNAL]
    labels, decided = held_out_decisions(clf.search_result_)
    assert 0 < decided.sum() < decided.size  # not itself a constant
    by_hand = win_probability(clf.metric_, labels, decided, np.ones_like(decided))
    assert by_hand < 0.9  # checked on this sample: 0.84, predicting 80% of the rows positive
    assert f"probability {by_hand:.3f}, below 0.95" in warning.message
    assert "predicting every row positive" in warning.message


def test_the_warning_has_its_own_level_above_the_refinements(monkeypatch):
    """At the refinement's 0.9 the warning caught 9 of 25 fits below the constant on test (0 of
    3 on wide data); at 0.95, 14 of 25: a choice the bootstrap finds better with probability
    0.93 is warned of, while a refinement at 0.93 is still kept."""
    from dataclasses import replace

    from metro.search import safeguard
    from metro.search.config import NO_SIGNAL_LEVEL, SIGNAL_LEVEL

    assert SIGNAL_LEVEL == SearchConfig().refine_signal < NO_SIGNAL_LEVEL
    X, y = figure1_data(600, seed=1)
    clf = MetroClassifier(metric="f1", random_state=0).fit(X, y)
    bare = replace(clf.search_result_, warnings=[])
    for probability, warned in [(0.93, True), (0.96, False)]:
        monkeypatch.setattr(safeguard, "win_probability", lambda *a, p=probability: p)
        found = safeguard.warn_without_signal(replace(bare), clf.metric_).warnings
        assert (WarningCode.NO_SIGNAL in {w.code for w in found}) is warned, probability


def test_a_precision_objective_under_zero_division_1_is_told_why_nothing_beats_flagging_nothing():
    # Flagging nothing scores precision 1 under zero_division 1: the warning names the
    # convention, not the features.
    X, y = figure1_data(1000, seed=0)
    clf = MetroClassifier(
        metric="precision", metric_params={"zero_division": 1}, random_state=0
    ).fit(X, y)
    [warning] = [w for w in clf.warnings_ if w.code == WarningCode.NO_SIGNAL]
    assert "zero_division 1 scores 1" in warning.message
    assert "zero_division 0 (scikit-learn's default)" in warning.message
    assert "features" not in warning.message
    # Under scikit-learn's default the same data carries no such warning.
    plain = MetroClassifier(metric="precision", random_state=0).fit(X, y)
    assert WarningCode.NO_SIGNAL not in {w.code for w in plain.warnings_}


def test_a_clear_boundary_and_a_constrained_search_carry_no_such_warning():
    X, y = figure1_data(1000, seed=0)
    clear = MetroClassifier(metric="f1", random_state=0).fit(X, y)
    assert WarningCode.NO_SIGNAL not in {w.code for w in clear.warnings_}
    rng = np.random.default_rng(2)
    noise = rng.normal(size=(500, 6)).astype(np.float32)
    labels = (rng.random(500) < 0.08).astype(int)
    constrained = MetroClassifier(
        metric="f_beta", metric_params={"beta": 2.0}, random_state=0,
        constraints=[{"metric": "recall", "at_least": 0.5}],
    ).fit(noise, labels)  # fmt: skip
    assert WarningCode.NO_SIGNAL not in {w.code for w in constrained.warnings_}


def test_support_is_judged_on_both_sides_of_its_two_bounds():
    """A choice is supported with FEW_TRUE_POSITIVES true positives and at least a tenth of the
    held-out positives predicted positive: each bound, just met and just missed."""
    few, positives = FEW_TRUE_POSITIVES, 100
    need = MIN_PREDICTED_RATIO * positives  # predicted positives, of 100 true ones
    assert supported((few, int(need) - few, positives - few, 0))
    assert not supported((few, int(need) - few - 1, positives - few, 0))
    assert not supported((few - 1, 50, positives - few + 1, 0))
    assert not supported((10, 0, 95, 0))  # 10 predicted of 105: below a tenth


def test_the_supported_threshold_counts_every_row_it_flags():
    """At the best threshold 5 true and 10 false positives of 105 positives: 15 flagged, past a
    tenth (10.5), so supported; counting only its true positives said it was not."""
    y = np.r_[np.ones(105), np.zeros(2010)].astype(int)
    scores = np.r_[np.full(5, 3.0), np.zeros(100), np.full(10, 3.0), np.zeros(2000)]
    threshold, _, ok = supported_threshold(get_metric("precision", zero_division=1), scores, y)
    assert ok and np.sum((scores >= threshold) & (y == 1)) == 5


def test_without_a_supported_threshold_the_fallback_still_flags_a_true_positive():
    """Three positives in 50 rows: no threshold is supported, and among the rest the one with a
    true positive is kept; precision's zero_division 1 made flagging nothing the best."""
    rng = np.random.default_rng(1)
    y = np.zeros(50, dtype=int)
    y[:3] = 1
    scores = rng.normal(size=50) + y
    threshold, _, ok = supported_threshold(get_metric("precision", zero_division=1), scores, y)
    assert not ok and np.sum((scores >= threshold) & (y == 1)) >= 1


def test_no_signal_is_not_said_of_the_constant_itself():
    """predicts_one_class says that already: a second, contradictory warning was one removed
    line away."""
    from metro.search.safeguard import no_signal_warning

    y = np.r_[np.ones(20), np.zeros(80)].astype(int)
    for spec in (get_metric("f1"), get_metric("precision")):
        assert no_signal_warning(spec, y, constant_decisions(spec, y)) is None


def test_no_signal_blames_zero_division_only_where_flagging_nothing_is_0_over_0():
    """Precision with zero_division 1 scores flagging nothing 1 (its denominator is tp + fp, 0
    then): its warning says the convention rewards it. A false-positive rate with zero_division 1
    is also best flagging nothing, but its denominator holds tn, so flagging nothing is no 0/0
    there: its warning must not blame the convention."""
    from metro.metrics import MetricSpec
    from metro.search.safeguard import no_signal_warning

    rng = np.random.default_rng(0)
    y = (rng.random(200) < 0.3).astype(int)
    noise = rng.random(200) < 0.05  # flags a few rows at random: no signal
    fpr = MetricSpec.from_confusion(
        numerator={"fp": 1}, denominator={"fp": 1, "tn": 1}, greater_is_better=False,
        zero_division=1, name="fpr",
    )  # fmt: skip
    said = {}
    for name, spec in (("precision", get_metric("precision", zero_division=1)), ("fpr", fpr)):
        assert not constant_decisions(spec, y)[0], name  # flagging nothing is its constant
        found = no_signal_warning(spec, y, noise)
        assert found is not None, name
        said[name] = found.message
    assert "divides 0 by 0" in said["precision"]
    assert "divides 0 by 0" not in said["fpr"]
    # A weighted accuracy is named with its costs, as its job and its constraint name it
    costly = get_metric("weighted_accuracy", w_fn=20.0)
    found = no_signal_warning(costly, y, noise)
    assert found is not None and "Weighted accuracy (w_fn 20)" in found.message


# -- the fallback under shift="auto", and shrinkage when the choice is the fallback ------------


class _ShiftScoreSolver(_ScoreSolver):
    """As _ScoreSolver, with each lambda's score vector depending on the cost shift too."""

    def solve(self, lambdas, *, shift, warm_start=None):
        by_shift = self.scores
        inner = _ScoreSolver(self.spec, lambda lam: by_shift(lam, shift), self.labels, self.rows)
        return inner.solve(lambdas, shift=shift)


class _RecordingRefit:
    """A refit solver that records what it was asked to fit."""

    def __init__(self, spec):
        self.spec, self.calls = spec, []

    def solve(self, lambdas, *, shift, warm_start=None, multipliers=None):
        self.calls.append(([float(v) for v in lambdas], shift, warm_start))
        cells = np.full(4, 0.25)
        return [Candidate(lam=float(v), shift=shift, train_cells=cells) for v in lambdas]


def _best_supported_fbeta(scores, y, beta):
    """Brute force: the best F-beta over every threshold h >= t whose counts have at least
    FEW_TRUE_POSITIVES true positives and flag a tenth of the positives, from the four cells
    by hand: (1 + b^2) tp / ((1 + b^2) tp + b^2 fn + fp)."""
    best = -np.inf
    for t in np.unique(scores):
        flagged = scores >= t
        tp = int(np.sum(flagged & (y == 1)))
        fp, fn = int(flagged.sum()) - tp, int(y.sum()) - tp
        if tp >= FEW_TRUE_POSITIVES and tp + fp >= MIN_PREDICTED_RATIO * (tp + fn):
            b2 = beta * beta
            best = max(best, (1 + b2) * tp / ((1 + b2) * tp + b2 * fn + fp))
    return best


def test_under_shift_auto_the_fallback_is_the_minimal_shifts_fit_and_is_refit_at_that_shift():
    """shift="auto" fits both shifts; the fallback is the ERM-like point of the weighted logistic
    loss ("minimal"), whichever shift the choice came from, and the delivered fallback is refit
    at that shift. Here the choice is a lucky corner of the "paper" shift, and the two shifts'
    ERM-like fits have different supported bests, so taking the other shift's shows."""
    rng = np.random.default_rng(0)
    n = 400
    labels = np.zeros(n, dtype=int)
    labels[rng.choice(n, 30, replace=False)] = 1
    spec = get_metric("f_beta", beta=0.5).resolve(labels)
    lambdas = grid_lambdas(*spec.lambda_range, N_LAMBDAS)
    erm = float(lambdas[erm_like_index(spec, lambdas)])
    weak = rng.normal(size=n) + 1.0 * labels
    weaker = rng.normal(size=n) + 0.3 * labels
    lucky = np.full(n, -1.0)
    lucky[np.flatnonzero(labels)[:3]] = 1.0

    def scores(lam: float, shift: str) -> np.ndarray:
        if shift == "minimal":
            return weak
        return weaker if lam == erm else lucky

    rows = np.array_split(rng.permutation(n), 3)
    solvers = [_ShiftScoreSolver(spec, scores, labels, r) for r in rows]
    refit = _RecordingRefit(spec)
    config = SearchConfig(n_lambdas=N_LAMBDAS, shift="auto")
    result = run_search(solvers[0], config=config, fold_solvers=solvers, refit_solver=refit)

    pooled_y = np.concatenate([labels[r] for r in rows])
    minimal = _best_supported_fbeta(np.concatenate([weak[r] for r in rows]), pooled_y, 0.5)
    paper = _best_supported_fbeta(np.concatenate([weaker[r] for r in rows]), pooled_y, 0.5)
    assert abs(minimal - paper) > 0.01  # the two shifts' fallbacks tell apart
    guard = result.safeguard
    assert guard is not None and guard.reason == "unsupported"
    assert refit.calls[0][1] == "paper"  # the choice: the lucky corner, of the paper shift
    assert result.fallback.folds[0].shift == "minimal"
    assert -guard.fallback_loss == pytest.approx(minimal)
    assert -result.selection_loss == pytest.approx(minimal)
    tp, fp, fn, tn = result.selection_counts
    assert (tp, tp + fn, tp + fp + fn + tn) == (guard.fallback_counts[0], 30, n)
    # The delivered model: the fallback's lambda refit at the fallback's shift.
    lams, shift, warm = refit.calls[-1]
    assert (lams, shift) == ([erm], "minimal") and warm is result.fallback.folds[0]
    assert result.best.shift == result.trained_shift == "minimal"


def _one_strong_point(top: int):
    """F0.5 on 300 rows (20 positives) in 3 folds: the ERM-like grid point has a signal, every
    other point none. With ``top``, ``top`` positives sit far above the rest in the ERM-like
    point's scores (so its best threshold may flag them alone, which is not supported)."""
    rng = np.random.default_rng(3)
    n = 300
    labels = np.zeros(n, dtype=int)
    labels[rng.choice(n, 20, replace=False)] = 1
    spec = get_metric("f_beta", beta=0.5).resolve(labels)
    lambdas = grid_lambdas(*spec.lambda_range, N_LAMBDAS)
    erm = float(lambdas[erm_like_index(spec, lambdas)])
    strong = rng.normal(size=n) + (0.8 if top else 3.0) * labels
    strong[np.flatnonzero(labels)[:top]] = 50.0
    noise = rng.normal(size=n)

    def scores(lam: float) -> np.ndarray:
        return strong if lam == erm else noise

    rows = np.array_split(rng.permutation(n), 3)
    return spec, [_ScoreSolver(spec, scores, labels, r) for r in rows], erm


def test_shrinking_does_not_weigh_the_fallback_against_itself():
    """The choice is the ERM-like fit at its supported best threshold: it is the fallback, so
    there is nothing to compare (a bootstrap of a choice against itself finds it better with
    probability 0.5, below any level, and would have 'replaced' it by itself)."""
    spec, solvers, erm = _one_strong_point(top=0)
    refit = _RecordingRefit(spec)
    result = run_search(
        solvers[0], fold_solvers=solvers, refit_solver=refit,
        config=SearchConfig(n_lambdas=N_LAMBDAS, shift="minimal", guard="off",
                            shrink_confidence=0.9),
    )  # fmt: skip
    assert result.best is result.fallback.folds[0] and result.best.lam == erm
    assert result.threshold == pytest.approx(result.fallback.threshold)
    g = result.safeguard
    assert g is not None and not g.used and g.reason is None and g.win_probability is None
    assert len(refit.calls) == 1  # the choice's refit alone: no second refit of the "fallback"


def test_shrinking_weighs_the_fallbacks_own_fit_at_another_threshold():
    """The choice is the ERM-like fit, but at the threshold flagging its 3 top rows alone: the
    same fit as the fallback's, not the same decisions (the fallback's threshold is a
    supported one), so the bootstrap weighs the two."""
    spec, solvers, erm = _one_strong_point(top=3)
    result = run_search(
        solvers[0], fold_solvers=solvers,
        config=SearchConfig(n_lambdas=N_LAMBDAS, shift="minimal", guard="off",
                            shrink_confidence=0.9),
    )  # fmt: skip
    fallback = result.fallback
    g = result.safeguard
    assert g.choice_lambda == fallback.lam == erm
    labels = np.concatenate([c.validation_labels for c in fallback.folds])
    pooled = np.concatenate([c.validation_scores for c in fallback.folds])
    choice = pooled >= 50.0  # the 3 top rows: the choice's decisions
    by_hand = win_probability(spec, labels, choice, pooled >= fallback.threshold)
    assert fallback.threshold < 50.0 and g.win_probability == pytest.approx(by_hand)
    assert g.used == (by_hand < 0.9)


def test_the_supported_threshold_takes_counts_that_meet_both_bounds_exactly():
    """5 true positives and no false positive, of 50 positives: 5 flagged, exactly a tenth, and
    exactly FEW_TRUE_POSITIVES; precision 1 there, below 1 at every lower threshold. Supported
    (both bounds are inclusive), so it is the threshold taken."""
    assert FEW_TRUE_POSITIVES == 5 and MIN_PREDICTED_RATIO * 50 == 5
    y = np.r_[np.ones(5), 0, np.ones(45), np.zeros(200)].astype(int)
    scores = np.r_[np.full(5, 10.0), 9.0, np.linspace(8.0, 0.0, 245)]
    threshold, loss, ok = supported_threshold(get_metric("precision"), scores, y)
    flagged = scores >= threshold
    assert ok and flagged.sum() == 5 and y[flagged].all() and loss == -1.0
