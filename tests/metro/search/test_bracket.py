"""The bracketing loop bisection and Dinkelbach share (metro.search.bracket): what it offers its
solver as a warm start."""

from __future__ import annotations

import numpy as np
import pytest

from metro.metrics import f_beta
from metro.search import (
    FiniteHypothesisSolver,
    SearchConfig,
    bisection_search,
    dinkelbach_search,
    threshold_predictions,
)


class _Recording(FiniteHypothesisSolver):
    """An exact finite solver that records, per call, the warm start it was offered and the
    candidates it returned."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.offered: list[tuple[object, str, list]] = []

    def solve(self, lambdas, *, shift, warm_start=None, multipliers=None):
        out = super().solve(lambdas, shift=shift, warm_start=warm_start)
        self.offered.append((warm_start, shift, out))
        return out


@pytest.mark.parametrize("search", [bisection_search, dinkelbach_search])
def test_each_step_is_offered_the_step_before_it_of_its_own_shift(search):
    """TrainingConfig.warm_start's contract: a bracketing search offers each next step the fit
    of the step before (the solver may decline: TrainerSolver with warm_start=False). The first
    step of each cost shift starts fresh: the other shift's fit minimizes another surrogate."""
    rng = np.random.default_rng(0)
    y = (rng.random(80) < 0.3).astype(int)
    y[:2] = [0, 1]
    x = rng.normal(size=80) + 1.2 * y
    solver = _Recording(f_beta(1.0), y, threshold_predictions(x))
    config = SearchConfig(strategy=search.__name__.split("_")[0], shift="auto", max_steps=6,
                          epsilon=1e-9, epsilon_m=0.0)  # fmt: skip
    search(solver, config=config)
    shifts = [shift for _, shift, _ in solver.offered]
    assert shifts[0] == "minimal" and "paper" in shifts
    steps_per_shift = {s: shifts.count(s) for s in ("minimal", "paper")}
    assert min(steps_per_shift.values()) >= 2  # a next step to offer a warm start to
    for i, (warm, shift, _) in enumerate(solver.offered):
        if i == 0 or shift != solver.offered[i - 1][1]:
            assert warm is None, i  # the first step of a shift
        else:
            [previous] = solver.offered[i - 1][2]
            assert warm is previous, i
