"""How a search judges a (lambda, shift): pooled held-out counts, and the tuned threshold."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import f1_score, fbeta_score, jaccard_score

from metro import MetroClassifier, SearchConfig, f1, f_beta, jaccard
from metro.search import cells_from_predictions, grid_lambdas, grid_search
from metro.search.base import Candidate, judge
from metro.search.config import AUTO_CV_FOLDS, AUTO_CV_MAX_ROWS, MAX_TIE_ROWS
from metro.search.safeguard import erm_like_index, tie_band


def _candidate(spec, scores, labels, *, keep_scores=True):
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels)
    cells = cells_from_predictions(labels, (scores >= 0)[:, None])[0]
    return Candidate(
        lam=-0.5, shift="minimal", train_cells=cells, validation_cells=cells,
        validation_scores=scores if keep_scores else None,
        validation_labels=labels if keep_scores else None,
    )  # fmt: skip


def _folds(seed, sizes=(7, 30, 13)):
    rng = np.random.default_rng(seed)
    out = []
    for n in sizes:
        labels = rng.integers(0, 2, n)
        labels[:2] = [0, 1]
        scores = rng.normal(size=n) + 1.5 * (labels - 0.5)
        out.append((scores, labels))
    return out


@pytest.mark.parametrize("seed", range(5))
def test_pooled_loss_is_the_metric_of_all_held_out_predictions_together(seed):
    spec = f1().resolve(np.array([0, 1]))
    folds = _folds(seed)
    cands = [_candidate(spec, s, y) for s, y in folds]
    loss, threshold = judge(spec, cands, tune=False)
    scores = np.concatenate([s for s, _ in folds])
    labels = np.concatenate([y for _, y in folds])
    assert threshold == 0.0
    assert -loss == pytest.approx(f1_score(labels, scores >= 0))
    # ... which is not the mean of the per-fold F1 (what the grid used to rank by)
    mean = np.mean([f1_score(y, s >= 0) for s, y in folds])
    assert -loss != pytest.approx(mean)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0])
def test_tuned_threshold_is_the_brute_force_best_on_the_pooled_scores(seed, beta):
    spec = f_beta(beta).resolve(np.array([0, 1]))
    folds = _folds(seed)
    cands = [_candidate(spec, s, y) for s, y in folds]
    loss, threshold = judge(spec, cands, tune=True)
    scores = np.concatenate([s for s, _ in folds])
    labels = np.concatenate([y for _, y in folds])
    brute = max(
        fbeta_score(labels, scores >= t, beta=beta, zero_division=0.0)
        for t in np.r_[scores, np.inf]
    )
    assert -loss == pytest.approx(brute)
    # the threshold reproduces the loss it reports
    assert fbeta_score(labels, scores >= threshold, beta=beta) == pytest.approx(brute)
    assert -loss >= -judge(spec, cands, tune=False)[0]


def test_without_scores_tuning_falls_back_to_the_pooled_counts():
    spec = f1().resolve(np.array([0, 1]))
    cands = [_candidate(spec, s, y, keep_scores=False) for s, y in _folds(0, sizes=(20, 20))]
    assert judge(spec, cands, tune=True) == judge(spec, cands, tune=False)


class _ScoreSolver:
    """Each lambda's 'fit' is a fixed score vector; the grid judges it on held-out rows."""

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


def test_the_grid_chooses_the_lambda_and_threshold_with_the_best_pooled_metric():
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, 300)
    base = rng.normal(size=300) + labels
    # lambda shifts the score: with threshold 0 the shift decides the F1, a tuned threshold
    # undoes any shift (every lambda reaches the same best F1).
    spec = f1().resolve(labels)
    rows = np.array_split(rng.permutation(300), 3)
    solvers = [_ScoreSolver(spec, lambda lam: base + 4 * (lam + 0.5), labels, r) for r in rows]
    zero = grid_search(solvers, config=SearchConfig(n_lambdas=9, shift="minimal", threshold="zero"))
    tuned = grid_search(solvers, config=SearchConfig(n_lambdas=9, shift="minimal"))
    pooled = np.concatenate(rows)
    for result in (zero, tuned):
        s = base[pooled] + 4 * (result.best_lambda + 0.5) - result.threshold
        assert -result.selection_loss == pytest.approx(f1_score(labels[pooled], s >= 0))
    assert zero.threshold == 0.0
    assert -tuned.selection_loss >= -zero.selection_loss
    grid = np.linspace(-1, 0, 11)[1:-1]
    brute = max(f1_score(labels[pooled], base[pooled] >= t) for t in base[pooled])
    assert -tuned.selection_loss == pytest.approx(brute)

    def zero_f1(lam):
        return f1_score(labels[pooled], base[pooled] + 4 * (lam + 0.5) >= 0)

    best_zero = max(grid, key=zero_f1)
    assert zero.best_lambda == pytest.approx(best_zero)


def test_auto_folds_follow_the_size_and_the_strategy():
    auto = SearchConfig()
    assert auto.cv == "auto" and auto.threshold == "tuned"
    assert auto.folds_for(1000) == AUTO_CV_FOLDS
    assert auto.folds_for(AUTO_CV_MAX_ROWS) == AUTO_CV_FOLDS
    assert auto.folds_for(AUTO_CV_MAX_ROWS + 1) is None
    assert SearchConfig(strategy="bisection").folds_for(1000) is None
    assert SearchConfig(cv=3).folds_for(10**7) == 3
    assert SearchConfig(cv=None).folds_for(1000) is None


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"cv": "always"}, "cv must be 'auto', an integer or null"),
        ({"cv": 1}, "cv must be an integer between 2 and 20"),
        ({"cv": True}, "cv must be an integer"),
        ({"strategy": "dinkelbach", "cv": 5}, "only available with the grid strategy"),
        ({"threshold": "median"}, "unknown threshold 'median'; expected one of zero, tuned"),
        ({"tie_rows": -1}, f"tie_rows must be an integer between 0 and {MAX_TIE_ROWS}, got -1"),
        ({"tie_rows": MAX_TIE_ROWS + 1}, "tie_rows must be an integer between 0 and"),
        ({"tie_rows": 1.5}, "tie_rows must be an integer"),
        ({"tie_rows": True}, "tie_rows must be an integer"),
    ],
)
def test_bad_selection_settings_are_named(settings, message):
    with pytest.raises(ValueError, match=message):
        SearchConfig(**settings)


# -- ties within a few held-out rows (SearchConfig.tie_rows) -------------------------------------


def _labelled(counts):
    """(y_true, y_pred) holding exactly the counts (tp, fp, fn, tn)."""
    tp, fp, fn, tn = counts
    y_true = np.r_[np.ones(tp + fn), np.zeros(fp + tn)].astype(int)
    y_pred = np.r_[np.ones(tp), np.zeros(fn), np.ones(fp), np.zeros(tn)].astype(int)
    return y_true, y_pred


@pytest.mark.parametrize(
    ("spec", "score"),
    [
        (f1(), f1_score),
        (f_beta(0.5), lambda t, p: fbeta_score(t, p, beta=0.5)),
        (f_beta(2.0), lambda t, p: fbeta_score(t, p, beta=2.0)),
        (jaccard(), jaccard_score),
    ],
)
@pytest.mark.parametrize("counts", [(12, 5, 9, 274), (3, 0, 27, 270), (30, 270, 0, 0)])
@pytest.mark.parametrize("rows", [1, 2, 3])
def test_the_tie_band_is_the_largest_change_of_the_metric_when_rows_change_side(
    spec, score, counts, rows
):
    base = score(*_labelled(counts))
    tp, fp, fn, tn = counts
    moved = [(tp - rows, fp, fn + rows, tn), (tp + rows, fp, fn - rows, tn)]
    moved += [(tp, fp - rows, fn, tn + rows), (tp, fp + rows, fn, tn - rows)]
    brute = max(abs(score(*_labelled(c)) - base) for c in moved if min(c) >= 0 and c[0] + c[2] > 0)
    assert tie_band(spec.resolve(np.array([0, 1])), counts, rows) == pytest.approx(brute)
    assert tie_band(spec.resolve(np.array([0, 1])), counts, 0) == 0.0


def _tie_problem(gains):
    """F1 on 300 rows, 3 folds, threshold 0. The ERM-like grid point decides as ``weak`` does;
    grid point i decides the same but turns ``gains[i]`` more of its false negatives into true
    positives (a point better by that many held-out rows)."""
    rng = np.random.default_rng(0)
    labels = (rng.random(300) < 0.2).astype(int)
    spec = f1().resolve(labels)
    lambdas = grid_lambdas(*spec.lambda_range, len(gains))
    weak = np.where(rng.random(300) < 0.5, labels, 1 - labels).astype(float) - 0.5
    missed = np.flatnonzero((labels == 1) & (weak < 0))

    def scores(lam):
        i = int(np.argmin(np.abs(lambdas - lam)))
        s = weak.copy()
        s[missed[: gains[i]]] = 0.5
        return s

    rows = np.array_split(rng.permutation(300), 3)
    return spec, lambdas, [_ScoreSolver(spec, scores, labels, r) for r in rows]


@pytest.mark.parametrize("tie_rows", [0, 1, 2, 3])
def test_grid_points_within_the_tie_rows_of_the_best_give_way_to_the_plainest(tie_rows):
    n = 9
    spec, lambdas, _ = _tie_problem([0] * n)
    plain = erm_like_index(spec, lambdas)
    far = n - 1 if plain < n // 2 else 0
    near = plain + (1 if far > plain else -1)
    gains = [0] * n
    gains[far], gains[near] = 3, 1  # the far edge wins by 3 rows, the neighbour by 1
    spec, lambdas, solvers = _tie_problem(gains)
    config = SearchConfig(n_lambdas=n, shift="minimal", threshold="zero", tie_rows=tie_rows)
    result = grid_search(solvers, config=config)
    expected = {0: far, 1: far, 2: near, 3: plain}[tie_rows]
    assert result.best_lambda == pytest.approx(lambdas[expected])
    # the loss reported is the chosen point's own, on the same pooled rows
    curve = {round(p.lam, 12): p.loss for p in result.selection_curve}
    assert result.selection_loss == pytest.approx(curve[round(float(lambdas[expected]), 12)])


def test_the_estimator_passes_tie_rows_and_refuses_a_bad_one():
    assert MetroClassifier(tie_rows=2)._search_config().tie_rows == 2
    X = np.random.default_rng(0).normal(size=(40, 2))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(ValueError, match="tie_rows must be an integer"):
        MetroClassifier(tie_rows=-1).fit(X, y)
