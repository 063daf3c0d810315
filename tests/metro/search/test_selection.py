"""How a search judges a (lambda, shift): pooled held-out counts, and the tuned threshold."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import f1_score, fbeta_score

from metro import SearchConfig, f1, f_beta
from metro.search import cells_from_predictions, grid_search
from metro.search.base import Candidate, judge
from metro.search.config import AUTO_CV_FOLDS, AUTO_CV_MAX_ROWS


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
    ],
)
def test_bad_selection_settings_are_named(settings, message):
    with pytest.raises(ValueError, match=message):
        SearchConfig(**settings)


def _cells_of_f1(f: float) -> np.ndarray:
    """Confusion fractions (tp, fp, fn, tn) whose F1 is ``f`` (tp = f, fp = fn = 1 - f)."""
    cells = np.array([f, 1.0 - f, 1.0 - f, 0.0])
    return cells / cells.sum()


class _TiedSolver:
    """Every lambda scores the same on the held-out rows; the training F1 of fold ``fold`` at
    grid point i is ``train[i][fold]`` (0 where not given)."""

    def __init__(self, spec, fold: int, train: dict[int, tuple[float, float]], grid) -> None:
        self.spec, self.fold, self.train, self.grid = spec, fold, train, list(grid)

    def solve(self, lambdas, *, shift, warm_start=None):
        out = []
        for lam in lambdas:
            i = min(range(len(self.grid)), key=lambda k: abs(self.grid[k] - lam))
            f = self.train.get(i, (0.0, 0.0))[self.fold]
            out.append(Candidate(
                lam=float(lam), shift=shift, train_cells=_cells_of_f1(f),
                validation_cells=np.array([0.3, 0.1, 0.1, 0.5]),
            ))  # fmt: skip
        return out


def test_a_tie_on_the_held_out_rows_goes_to_the_lower_mean_training_loss():
    """Grid points 2 and 6 tie with every other on the held-out rows; 2 has the lower mean
    training loss (F1 0.9 and 0.3 on the folds' training rows), 6 the lower worst one (0.5 and
    0.5). Nothing asserted the tie-break: by the grid's order alone (point 0) or by the worst
    fold (point 6), the same tests passed."""
    from metro.search.grid import grid_lambdas

    spec = f1()
    config = SearchConfig(n_lambdas=9, shift="minimal", threshold="zero")
    lo, hi = spec.lambda_range
    grid = grid_lambdas(lo, hi, 9)
    train = {2: (0.9, 0.3), 6: (0.5, 0.5)}
    solvers = [_TiedSolver(spec, fold, train, grid) for fold in (0, 1)]
    result = grid_search(solvers, config=config)
    assert result.best_lambda == pytest.approx(grid[2])
