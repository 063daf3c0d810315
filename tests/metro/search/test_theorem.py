"""Theorem 5.1 on a finite hypothesis set (every threshold of a 1-D feature), where the minimum of
the empirical l^lambda is computed exactly."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metro.metrics import f_beta, jaccard, precision, weighted_accuracy
from metro.search import (
    FiniteHypothesisSolver,
    SearchConfig,
    bisection_search,
    dinkelbach_search,
    grid_search,
    max_bisection_steps,
    threshold_predictions,
)

SPECS = [
    f_beta(1.0),
    f_beta(0.5),
    f_beta(2.0),
    jaccard(),
    precision(),
    weighted_accuracy(1, 2, 3, 1),
]


def _problem(seed: int, n: int = 60) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(int)
    y[:2] = [0, 1]  # both classes present
    x = rng.normal(size=n) + 1.2 * y
    return x, y


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), u=st.floats(0.0, 1.0))
def test_sign_of_min_l_lambda_is_sign_of_lambda_star_minus_lambda(spec, seed, u):
    x, y = _problem(seed)
    solver = FiniteHypothesisSolver(spec, y, threshold_predictions(x))
    lo, hi = spec.lambda_range
    lam_star = solver.lambda_star
    for lam in (lo + u * (hi - lo), lam_star, lam_star + 1e-9, lam_star - 1e-9):
        value = solver.min_l_lambda(lam)
        # A drawn lambda within round-off of lambda* (lo + u (hi - lo) = -0.4999999999999999
        # against lambda* = -0.5) is lambda* in float64: l_lambda is 0 there, not of a sign.
        if abs(lam - lam_star) <= 1e-12:
            assert value == pytest.approx(0.0, abs=1e-12)
        else:
            assert np.sign(value) == np.sign(lam_star - lam)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
@pytest.mark.parametrize("epsilon", [1e-2, 1e-4])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bisection_with_the_exact_oracle_finds_lambda_star(spec, epsilon, seed):
    x, y = _problem(seed)
    solver = FiniteHypothesisSolver(spec, y, threshold_predictions(x))
    config = SearchConfig(strategy="bisection", epsilon=epsilon, max_steps=100, shift="minimal")
    result = bisection_search(solver, config=config)
    lo, hi = spec.lambda_range
    a, b = result.bracket
    assert a - 1e-12 <= solver.lambda_star <= b + 1e-12
    assert b - a <= epsilon or result.trace[-1].l_lambda == pytest.approx(0.0, abs=1e-12)
    assert abs(result.lambda_star - solver.lambda_star) <= epsilon + 1e-12
    # the hypothesis returned is optimal for the ratio itself
    assert result.best.train_loss(spec) == pytest.approx(solver.lambda_star, abs=1e-12)
    assert len(result.trace) <= max_bisection_steps(lo, hi, epsilon)
    assert max_bisection_steps(lo, hi, epsilon) == math.ceil(math.log2((hi - lo) / epsilon))
    # Each step halves its bracket: its lambda is the midpoint (a third's cut took 13 steps
    # where 20 were due, and none of the tests above noticed).
    for step in result.trace:
        assert step.bracket is not None and step.lam == pytest.approx(sum(step.bracket) / 2)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_dinkelbach_converges_to_lambda_star_in_few_steps(spec):
    x, y = _problem(3, n=200)
    solver = FiniteHypothesisSolver(spec, y, threshold_predictions(x))
    result = dinkelbach_search(
        solver, config=SearchConfig(strategy="dinkelbach", epsilon=1e-9, shift="minimal")
    )
    assert result.best.train_loss(spec) == pytest.approx(solver.lambda_star, abs=1e-12)
    # superlinear: far fewer steps than bisection needs for the same precision
    lo, hi = spec.lambda_range
    assert len(result.trace) < max_bisection_steps(lo, hi, 1e-9)


def test_bisection_sign_decisions_follow_the_oracle():
    spec = f_beta(1.0)
    x, y = _problem(7)
    solver = FiniteHypothesisSolver(spec, y, threshold_predictions(x))
    result = bisection_search(
        solver, config=SearchConfig(strategy="bisection", epsilon=1e-6, shift="minimal")
    )
    for step in result.trace:
        a, b = step.bracket
        assert a - 1e-12 <= solver.lambda_star <= b + 1e-12
        expected = np.sign(solver.lambda_star - step.lam)
        assert np.sign(step.l_lambda) == expected or step.l_lambda == 0


def test_grid_picks_the_best_validation_point():
    spec = f_beta(1.0)
    x, y = _problem(11, n=120)
    xv, yv = _problem(12, n=120)
    # the same hypotheses judged on another sample: the thresholds of the training feature
    cuts = np.concatenate([np.unique(x), [np.inf]])
    preds_v = np.concatenate([xv[:, None] >= cuts[None, :], xv[:, None] < cuts[None, :]], axis=1)
    solver = FiniteHypothesisSolver(
        spec, y, threshold_predictions(x), y_validation=yv, predictions_validation=preds_v
    )
    steps = []
    config = SearchConfig(n_lambdas=11, shift="minimal")
    result = grid_search([solver], config=config, on_step=steps.append)
    assert len(steps) == 11
    best_val = max(s.validation_metric for s in steps)
    assert result.best.validation_loss(spec) == pytest.approx(-best_val)
    assert [s.step for s in steps] == list(range(11))


def test_dinkelbach_steps_stay_in_the_bracket_and_stop_within_epsilon():
    """An exact oracle never proposes a lambda outside the bracket, so the safeguards for an
    inexact fit were untested: a proposal outside (a, b] falls back to the midpoint (at a, above
    b), one inside is taken (b itself included), and one within epsilon of lambda stops."""
    from metro.search.dinkelbach import next_lambda

    a, b, eps = -0.75, -0.375, 2.0**-10  # exact in binary: a step of eps is eps
    assert next_lambda(-0.625, -0.5, a, b, eps) == -0.625
    assert next_lambda(b, -0.5, a, b, eps) == b
    for outside in (a, a - 0.1, b + 0.1):
        assert next_lambda(outside, -0.5, a, b, eps) == pytest.approx((a + b) / 2)
    assert next_lambda(-0.5 + eps, -0.5, a, b, eps) is None
    assert next_lambda(-0.5 + 2 * eps, -0.5, a, b, eps) == pytest.approx(-0.5 + 2 * eps)
