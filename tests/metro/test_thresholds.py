from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metro.metrics import f1, f_beta, jaccard, precision
from metro.thresholds import best_threshold, losses_at_all_thresholds


@settings(max_examples=150, deadline=None)
@given(
    data=st.lists(st.tuples(st.integers(-5, 5), st.booleans()), min_size=1, max_size=40),
    which=st.sampled_from([f1(), f_beta(0.5), jaccard(), precision()]),
)
def test_vectorized_losses_equal_brute_force(data, which):
    scores = np.array([s for s, _ in data], dtype=float)
    y = np.array([int(b) for _, b in data])
    thresholds, losses = losses_at_all_thresholds(which, scores, y)
    for t, loss in zip(thresholds, losses, strict=True):
        assert loss == pytest.approx(which.loss(y, (scores >= t).astype(int)), abs=1e-12)
    # every distinct prediction vector a threshold can make is covered
    assert len(thresholds) == len(np.unique(scores)) + 1


@settings(max_examples=100, deadline=None)
@given(
    data=st.lists(st.tuples(st.floats(-3, 3), st.booleans()), min_size=2, max_size=40),
)
def test_best_threshold_reproduces_its_loss_and_is_optimal(data):
    spec = f1()
    scores = np.array([s for s, _ in data])
    y = np.array([int(b) for _, b in data])
    threshold, loss = best_threshold(spec, scores, y)
    assert spec.loss(y, (scores >= threshold).astype(int)) == pytest.approx(loss, abs=1e-12)
    _, losses = losses_at_all_thresholds(spec, scores, y)
    assert loss == pytest.approx(losses.min())


def test_threshold_errors():
    with pytest.raises(ValueError, match="empty"):
        best_threshold(f1(), np.array([]), np.array([]))
    with pytest.raises(ValueError, match="scores has 2 values but y has 1"):
        best_threshold(f1(), np.array([0.1, 0.2]), np.array([1]))


def test_constrained_choices_rank_feasible_by_loss_then_infeasible_by_shortfall_or_certainty():
    """The order the constrained search ranks its (lambda, mu) choices by: every feasible one
    before any infeasible one, feasible ones by loss; infeasible ones by shortfall, then loss;
    or where a confidence was asked for (``by_certainty``) by how likely they are to hold (log
    certainty), then by shortfall, then by loss."""
    from metro.thresholds import ConstrainedThreshold

    rows = [  # (loss, slack, certainty, feasible)
        (-0.9, -0.01, 0.2, False),  # nearest in points, unlikely to hold
        (-0.2, -0.05, 0.7, False),  # likelier to hold
        (-0.3, 0.02, 0.95, True),
        (-0.5, 0.01, 0.91, True),
        (-0.1, -0.05, 0.7, False),  # as likely, higher loss
        (-0.4, -0.02, 0.7, False),  # as likely, nearer in points
    ]
    for by_certainty, expected in [
        (True, [-0.5, -0.3, -0.4, -0.2, -0.1, -0.9]),
        (False, [-0.5, -0.3, -0.9, -0.4, -0.2, -0.1]),
    ]:
        choices = [
            ConstrainedThreshold(0.0, loss, (slack,), ok, float(np.log(p)), by_certainty)
            for loss, slack, p, ok in rows
        ]
        assert [c.loss for c in sorted(choices, key=lambda c: c.rank)] == expected


def test_reach_holds_the_other_constraints_to_their_bounds():
    """Two constraints met apart but never together: judged each on its own, both were
    "reached" past what was asked (nothing to loosen); with the others held, each says how far
    it must move. One constraint alone: its largest slack over the rows that flag."""
    from metro.thresholds import reach

    cells = np.array([[5, 1, 0, 0], [3, 0, 0, 1], [1, 0, 1, 2], [0, 0, 1, 3]], dtype=float)
    slacks = np.array([[0.3, -0.4], [-0.1, -0.05], [-0.5, 0.2], [0.9, 0.9]])  # last flags none
    assert reach(slacks, cells) == (-0.5, -0.4)  # each where the other holds
    assert reach(slacks[:, :1], cells) == (0.3,)
    assert reach(np.array([[0.3, -0.4], [-0.1, -0.05]]), cells[:2]) == (-np.inf, -0.4)


def test_the_threshold_lies_halfway_to_the_next_score():
    """Any cut between two held-out scores decides those rows alike; the midpoint is the one
    that decides new rows between them least arbitrarily (a cut at the chosen score itself
    would put a new row just below it on the other side)."""
    threshold, loss = best_threshold(f1(), np.array([0.9, 0.1]), np.array([1, 0]))
    assert threshold == pytest.approx(0.5) and loss == pytest.approx(-1.0)


def test_among_thresholds_of_equal_loss_the_one_flagging_fewest_rows_is_chosen():
    """F1 is 2/3 flagging the top row and flagging all four: the threshold a user deploys is
    the one that flags fewest (the highest), which nothing asserted."""
    threshold, loss = best_threshold(f1(), np.array([0.9, 0.8, 0.7, 0.6]), np.array([1, 0, 0, 1]))
    assert threshold == pytest.approx(0.85) and loss == pytest.approx(-2 / 3)
