"""Fits that diverge: a search never chooses one, and never lets one steer it."""

from __future__ import annotations

import numpy as np
import pytest

from metro.metrics import f_beta
from metro.search import (
    Candidate,
    DivergedError,
    FiniteHypothesisSolver,
    SearchConfig,
    bisection_search,
    dinkelbach_search,
    grid_search,
    threshold_predictions,
)

SPEC = f_beta(1.0)


def _problem(seed: int, n: int = 120) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(int)
    y[:2] = [0, 1]
    return rng.normal(size=n) + 1.2 * y, y


class DivergingSolver:
    """The exact solver, except that the fits at the lambdas ``bad(lam)`` diverge: they come back
    with the validation-best cells (so a search that ignored the flag would pick them) and an
    infinite loss, as metro.trainer reports a blown-up fit."""

    def __init__(self, bad, *, validation: bool = True) -> None:
        x, y = _problem(3)
        xv, yv = _problem(4)
        cuts = np.concatenate([np.unique(x), [np.inf]])
        preds_v = np.concatenate([xv[:, None] >= cuts, xv[:, None] < cuts], axis=1)
        self.inner = FiniteHypothesisSolver(
            SPEC, y, threshold_predictions(x),
            y_validation=yv if validation else None,
            predictions_validation=preds_v if validation else None,
        )  # fmt: skip
        self.spec = SPEC
        self.bad = bad
        self.warm_starts: list[Candidate | None] = []

    def solve(self, lambdas, *, shift, warm_start=None):
        self.warm_starts.append(warm_start)
        out = self.inner.solve(lambdas, shift=shift)
        for cand in out:
            if self.bad(cand.lam):
                cand.diverged = True
                cand.surrogate_loss = float("inf")
                cand.validation_cells = np.array([0.5, 0.0, 0.0, 0.5])  # a perfect F1
        return out


def test_grid_never_chooses_a_diverged_fit_but_keeps_it_in_the_trace():
    steps = []
    config = SearchConfig(n_lambdas=9, shift="minimal")
    solver = DivergingSolver(lambda lam: lam > -0.5)
    result = grid_search([solver], config=config, on_step=steps.append)
    assert len(steps) == 9
    flagged = [s for s in steps if s.to_dict()["surrogate_loss"] is None]
    assert len(flagged) == sum(s.lam > -0.5 for s in steps) > 0
    assert not result.best.diverged and result.best.lam <= -0.5
    # Without the flag the diverged fits' "perfect" validation cells would have won.
    assert result.best.validation_loss(SPEC) > -1.0


def test_grid_with_every_fit_diverged_says_so():
    with pytest.raises(DivergedError, match=r"every fit of the grid diverged at lambda .*lr"):
        grid_search([DivergingSolver(lambda lam: True)], config=SearchConfig(n_lambdas=5))


def test_a_diverged_fit_in_any_fold_rules_its_lambda_out():
    config = SearchConfig(n_lambdas=5, shift="minimal")
    lambdas = np.array([-0.8, -0.6, -0.4, -0.2])
    good = DivergingSolver(lambda lam: False)
    bad_in_one_fold = DivergingSolver(lambda lam: lam == lambdas[2])
    result = grid_search([good, bad_in_one_fold], config=config, lambdas=lambdas)
    assert result.best.lam != lambdas[2]


@pytest.mark.parametrize("search", [bisection_search, dinkelbach_search])
def test_sequential_searches_refuse_to_steer_by_a_diverged_fit(search):
    solver = DivergingSolver(lambda lam: True)
    with pytest.raises(DivergedError, match="the fit that decides the next lambda diverged"):
        search(solver, config=SearchConfig(strategy="bisection", shift="minimal"))


def test_a_diverged_refit_fails_the_search_instead_of_returning_it():
    main = DivergingSolver(lambda lam: False)
    refit = DivergingSolver(lambda lam: True, validation=False)
    config = SearchConfig(n_lambdas=5, shift="minimal")
    with pytest.raises(DivergedError, match="the refit on all the data diverged"):
        grid_search([main], config=config, refit_solver=refit)
    # The refit is offered the chosen fit as a warm start; the solver decides whether to use it.
    assert refit.warm_starts and refit.warm_starts[-1] is not None
