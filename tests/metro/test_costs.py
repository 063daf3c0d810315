"""Tests of metro.costs: gamma, the cost tables under both shifts, and the link between the tables
and the empirical cost-sensitive target l^lambda (Theorem 5.1)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from metro.costs import SHIFTS, cost_tables, empirical_l_lambda, gammas
from metro.metrics import (
    CELLS,
    MetricSpec,
    accuracy,
    balanced_accuracy,
    f1,
    f_beta,
    jaccard,
    precision,
    recall,
    weighted_accuracy,
)

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

PRESETS = {
    "f1": f1,
    "f0.5": lambda: f_beta(0.5),
    "f3": lambda: f_beta(3.0),
    "jaccard": jaccard,
    "precision": precision,
    "recall": recall,
    "accuracy": accuracy,
    "weighted_accuracy": lambda: weighted_accuracy(2.0, 0.5, 1.0, 3.0),
    "balanced_accuracy": lambda: balanced_accuracy().resolve(np.array([1, 0, 0, 0, 1])),
}

SIGNS = (-1, 1)  # table index -> label value


def _bits(value: int, n: int) -> np.ndarray:
    return np.array([(value >> i) & 1 for i in range(n)], dtype=np.int64)


def cells_of(y01: np.ndarray, p01: np.ndarray) -> np.ndarray:
    y = np.asarray(y01, dtype=bool)
    p = np.asarray(p01, dtype=bool)
    return (
        np.array([np.sum(y & p), np.sum(~y & p), np.sum(y & ~p), np.sum(~y & ~p)], dtype=np.float64)
        / y.size
    )


def paper_table(g: np.ndarray) -> np.ndarray:
    """The paper's L_gamma(y', y) (Section 4.1) as [pred, true], index 0 for -1."""
    g1, g2, g3, g4 = g
    out = np.empty((2, 2))
    out[1, 1] = g1 + g2 + g3 + g4
    out[1, 0] = -g1 - g2 + g3 + g4
    out[0, 1] = -g1 + g2 - g3 + g4
    out[0, 0] = g1 - g2 - g3 + g4
    return out


coef = st.floats(-3, 3).map(lambda v: round(v, 2))


@st.composite
def random_specs(draw):
    """A preset, or a random valid spec from from_confusion (a non-negative denominator that is
    not identically zero, a numerator vanishing where the denominator does)."""
    if draw(st.booleans()):
        return PRESETS[draw(st.sampled_from(sorted(PRESETS)))]()
    den = np.array(draw(st.lists(coef.map(abs), min_size=4, max_size=4)))
    if not np.any(den > 0):
        den[draw(st.integers(0, 3))] = 1.0
    num = np.array(draw(st.lists(coef, min_size=4, max_size=4)))
    num[den == 0] = 0.0
    if not np.any(num != 0):
        num[int(np.argmax(den))] = 1.0
    numerator = dict(zip(CELLS, num.tolist(), strict=True))
    if draw(st.booleans()):  # move a common part into the constant term
        c = float(num.min())
        numerator = {k: v - c for k, v in numerator.items()}
        numerator["const"] = c
    denominator = {k: v for k, v in zip(CELLS, den.tolist(), strict=True) if v != 0}
    try:
        return MetricSpec.from_confusion(
            numerator=numerator, denominator=denominator, greater_is_better=draw(st.booleans())
        )
    except ValueError as exc:  # a ratio that is constant on every prediction is refused
        assert "constant" in str(exc)
        assume(False)


@st.composite
def labelled_samples(draw, max_size: int = 60):
    n = draw(st.integers(1, max_size))
    y = _bits(draw(st.integers(0, 2**n - 1)), n)
    p1 = _bits(draw(st.integers(0, 2**n - 1)), n)
    p2 = _bits(draw(st.integers(0, 2**n - 1)), n)
    return y, p1, p2


def mean_cost(table: np.ndarray, y01: np.ndarray, p01: np.ndarray) -> float:
    """Empirical mean of C[pred, true] over the sample (table [2, 2], index 1 = positive)."""
    return float(np.mean(table[p01, y01]))


# -- gammas -----------------------------------------------------------------------------------


@SETTINGS
@given(spec=random_specs(), lams=st.lists(st.floats(-10, 10), min_size=1, max_size=6))
def test_gammas(spec, lams):
    g = gammas(spec, np.array(lams))
    assert g.shape == (len(lams), 4)
    for k, lam in enumerate(lams):
        np.testing.assert_allclose(g[k], spec.alpha - lam * spec.beta, atol=1e-12)


def test_gammas_scalar_and_validation():
    spec = f1()
    g = gammas(spec, -0.5)
    assert g.shape == (1, 4)
    np.testing.assert_allclose(g[0], spec.alpha + 0.5 * spec.beta)
    # F1 at lambda = -F: gamma = -(1/2)(1,1,1,1) + F (0, 1/2, 1/2, 1)
    np.testing.assert_allclose(g[0], [-0.5, -0.25, -0.25, 0.0])
    for bad in (np.nan, np.inf, [0.1, np.nan], [[0.1, 0.2]]):
        with pytest.raises(ValueError, match="lambdas"):
            gammas(spec, bad)
    with pytest.raises(ValueError, match="lambdas"):
        cost_tables(spec, np.nan)


def test_unknown_shift():
    with pytest.raises(ValueError, match="unknown shift"):
        cost_tables(f1(), -0.5, shift="tau")
    assert set(SHIFTS) == {"paper", "minimal"}


# -- cost tables ------------------------------------------------------------------------------


@SETTINGS
@given(spec=random_specs(), lams=st.lists(st.floats(-5, 5), min_size=1, max_size=5))
def test_cost_tables_shapes_signs_and_normalization(spec, lams):
    lams = np.array(lams)
    for shift in SHIFTS:
        raw = cost_tables(spec, lams, shift=shift, normalize=False)
        norm = cost_tables(spec, lams, shift=shift, normalize=True)
        assert raw.shape == norm.shape == (len(lams), 2, 2)
        assert np.all(raw >= 0) and np.all(norm >= 0)
        assert np.all(np.isfinite(norm))
        for k, lam in enumerate(lams):
            unshifted = paper_table(spec.alpha - lam * spec.beta)
            g = gammas(spec, lam)[0]
            if shift == "paper":
                # tau = sum |gamma_i| on every cell, and that alone makes it non-negative
                tau = np.abs(g).sum()
                np.testing.assert_allclose(raw[k], unshifted + tau, atol=1e-12)
                assert np.all(unshifted + tau >= -1e-12)
            else:
                # per true label (column), the smaller cost is subtracted
                np.testing.assert_allclose(
                    raw[k], unshifted - unshifted.min(axis=0, keepdims=True), atol=1e-12
                )
                assert raw[k, :, 0].min() == 0.0 and raw[k, :, 1].min() == 0.0
                assert norm[k, :, 0].min() == 0.0 and norm[k, :, 1].min() == 0.0
            # normalization is a positive scaling to a largest entry of 1
            if raw[k].max() > 0:
                assert norm[k].max() == pytest.approx(1.0, abs=1e-12)
                np.testing.assert_allclose(norm[k] * raw[k].max(), raw[k], atol=1e-9)
            else:
                np.testing.assert_array_equal(norm[k], 0.0)
            # the differences within a column are the target's and are kept by both shifts
            # (up to the positive normalization factor)
            scale = raw[k].max() if raw[k].max() > 0 else 1.0
            for col in (0, 1):
                diff_unshifted = unshifted[1, col] - unshifted[0, col]
                assert raw[k, 1, col] - raw[k, 0, col] == pytest.approx(diff_unshifted, abs=1e-9)
                assert (norm[k, 1, col] - norm[k, 0, col]) * scale == pytest.approx(
                    diff_unshifted, abs=1e-9
                )


@pytest.mark.parametrize("name", sorted(PRESETS))
@pytest.mark.parametrize("shift", SHIFTS)
def test_preset_tables_reach_one(name, shift):
    spec = PRESETS[name]()
    lo, hi = spec.lambda_range
    lams = np.linspace(lo, hi, 7)
    tables = cost_tables(spec, lams, shift=shift)
    np.testing.assert_allclose(tables.max(axis=(1, 2)), 1.0, atol=1e-12)
    # a vector of lambdas gives the same tables as one lambda at a time
    for k, lam in enumerate(lams):
        np.testing.assert_allclose(tables[k], cost_tables(spec, lam, shift=shift)[0], atol=1e-15)


def test_paper_shift_keeps_relative_differences():
    spec = f1()
    lam = -0.6
    raw_paper = cost_tables(spec, lam, shift="paper", normalize=False)[0]
    norm_paper = cost_tables(spec, lam, shift="paper")[0]
    unshifted = paper_table(gammas(spec, lam)[0])
    c = norm_paper.max() / raw_paper.max()
    np.testing.assert_allclose(norm_paper, c * (unshifted + np.abs(gammas(spec, lam)).sum()))
    # every pairwise difference of entries is the target's, scaled by c > 0
    a, b = norm_paper.ravel(), unshifted.ravel()
    np.testing.assert_allclose(a[:, None] - a[None, :], c * (b[:, None] - b[None, :]), atol=1e-12)
    # With the paper's shift no entry vanishes here: both surrogate terms stay active.
    assert np.all(raw_paper > 0)


def test_table_cells_are_the_cell_weights():
    """C_unshifted[pred, true] on a cell is num_cell - lambda * den_cell."""
    for spec in (f1(), jaccard(), precision(), weighted_accuracy(2.0, 0.5, 1.0, 3.0)):
        lam = -0.3
        t = paper_table(gammas(spec, lam)[0])
        w = spec.numerator_cells - lam * spec.denominator_cells
        idx = {"tp": (1, 1), "fp": (1, 0), "fn": (0, 1), "tn": (0, 0)}
        for i, cell in enumerate(CELLS):
            assert t[idx[cell]] == pytest.approx(w[i], abs=1e-12)


# -- the key property: the shift does not move the target's minimizer -----------------------------


@SETTINGS
@given(spec=random_specs(), lam=st.floats(-3, 3), sample=labelled_samples())
def test_mean_cost_is_l_lambda_plus_a_label_only_constant(spec, lam, sample):
    y, p1, p2 = sample
    l1 = float(empirical_l_lambda(spec, lam, cells_of(y, p1))[0])
    l2 = float(empirical_l_lambda(spec, lam, cells_of(y, p2))[0])
    for shift in SHIFTS:
        raw = cost_tables(spec, lam, shift=shift, normalize=False)[0]
        norm = cost_tables(spec, lam, shift=shift, normalize=True)[0]
        c1, c2 = mean_cost(raw, y, p1), mean_cost(raw, y, p2)
        # the same offset for both predictions: it depends on the labels only
        assert c1 - l1 == pytest.approx(c2 - l2, abs=1e-9)
        # and it is the expected one
        unshifted = paper_table(gammas(spec, lam)[0])
        if shift == "paper":
            offset = np.abs(gammas(spec, lam)).sum()
        else:
            col_min = unshifted.min(axis=0)
            offset = -float(np.mean(col_min[y]))
        assert c1 - l1 == pytest.approx(offset, abs=1e-9)
        # the ordering of two predictions by normalized mean cost is their ordering by l^lambda:
        # normalizing divides the table by its largest cost, so their gap is l^lambda's over it
        # (compared at 1e-9 as they were, a gap of exactly 1e-9 in l^lambda failed once scaled)
        n1, n2 = mean_cost(norm, y, p1), mean_cost(norm, y, p2)
        scale = float(raw.max()) if raw.max() > 0 else 1.0
        assert n1 - n2 == pytest.approx((l1 - l2) / scale, abs=1e-9)
        if abs(l1 - l2) > 1e-9:
            assert np.sign(n1 - n2) == np.sign(l1 - l2)


@SETTINGS
@given(spec=random_specs(), lam=st.floats(-3, 3), sample=labelled_samples())
def test_empirical_l_lambda_is_the_mean_unshifted_loss(spec, lam, sample):
    y, p, _ = sample
    g = gammas(spec, lam)[0]
    h, yy = 2 * p - 1, 2 * y - 1
    direct = np.mean(g[0] * h * yy + g[1] * yy + g[2] * h + g[3])
    got = empirical_l_lambda(spec, lam, cells_of(y, p))
    assert got.shape == (1,)
    assert got[0] == pytest.approx(direct, abs=1e-9)


def test_empirical_l_lambda_shapes():
    spec = f1()
    cells = np.array([[0.2, 0.1, 0.3, 0.4], [0.5, 0.0, 0.0, 0.5]])
    out = empirical_l_lambda(spec, np.array([-0.5, -0.25]), cells)
    assert out.shape == (2,)
    # row k uses lambda k: num - lambda * den
    assert out[0] == pytest.approx(-0.4 + 0.5 * (0.4 + 0.1 + 0.3))
    assert out[1] == pytest.approx(-1.0 + 0.25 * 1.0)
    # one cell vector against several lambdas
    out = empirical_l_lambda(spec, np.array([-1.0, 0.0]), cells[0])
    np.testing.assert_allclose(out, [-0.4 + 0.8, -0.4])


# -- Theorem 5.1 on a tiny sample -----------------------------------------------------------------


def _all_predictions(n: int):
    return [np.array(p, dtype=np.int64) for p in itertools.product((0, 1), repeat=n)]


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 10), bits=st.integers(0, 2**10 - 1), which=st.sampled_from(["f1", "jac"]))
def test_theorem_sign_of_min_l_lambda(n, bits, which):
    y = _bits(bits, n)
    if y.sum() == 0:
        y[0] = 1  # with no positive label every prediction scores 0 and the theorem degenerates
    spec = f1() if which == "f1" else jaccard()
    preds = _all_predictions(n)
    cells = np.stack([cells_of(y, p) for p in preds])
    lam_star = min(spec.loss(y, p) for p in preds)

    def min_l(lam: float) -> float:
        return float(np.min(empirical_l_lambda(spec, np.full(len(preds), lam), cells)))

    assert min_l(lam_star) == pytest.approx(0.0, abs=1e-12)
    for delta in (1e-3, 0.1, 0.5):
        assert min_l(lam_star - delta) > 0
        assert min_l(lam_star + delta) < 0
    # the minimizer of l^{lambda*} is a loss minimizer
    values = empirical_l_lambda(spec, np.full(len(preds), lam_star), cells)
    best = preds[int(np.argmin(values))]
    assert spec.loss(y, best) == pytest.approx(lam_star, abs=1e-12)


# -- F-beta cost ratio: the optimal threshold on a calibrated probability is F*/(1 + b^2) ----------


@pytest.mark.parametrize("shift", SHIFTS)
@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("f_star", [0.05, 0.3, 0.5, 0.8, 1.0])
def test_f1_threshold_is_half_f_star(shift, normalize, f_star):
    table = cost_tables(f1(), -f_star, shift=shift, normalize=normalize)[0]
    c_fp = table[1, 0] - table[0, 0]  # extra cost of predicting +1 on a negative
    c_fn = table[0, 1] - table[1, 1]  # extra cost of predicting -1 on a positive
    assert c_fp > 0 and c_fn > 0
    assert c_fp / (c_fp + c_fn) == pytest.approx(f_star / 2, abs=1e-12)
    assert c_fn / c_fp == pytest.approx((2 - f_star) / f_star, rel=1e-12)
    if shift == "minimal":
        # C(+1, +1) = C(-1, -1) = 0, so the raw entries are the threshold weights themselves
        assert table[1, 1] == 0.0 and table[0, 0] == 0.0
        assert table[1, 0] / (table[1, 0] + table[0, 1]) == pytest.approx(f_star / 2, abs=1e-12)


@SETTINGS
@given(b=st.floats(0.1, 5.0), f_star=st.floats(0.01, 1.0))
def test_f_beta_threshold(b, f_star):
    for shift in SHIFTS:
        table = cost_tables(f_beta(b), -f_star, shift=shift)[0]
        c_fp = table[1, 0] - table[0, 0]
        c_fn = table[0, 1] - table[1, 1]
        assert c_fp / (c_fp + c_fn) == pytest.approx(f_star / (1 + b * b), abs=1e-9)


def test_f1_brute_force_threshold():
    """With F* brute-forced over a restricted set of predictions (the first example is always
    predicted negative, so F* < 1), the minimal-shift costs put the threshold at F*/2."""
    y = np.array([1, 0, 1, 1, 0, 0, 0, 1])
    f_star = max(f1().score(y, p) for p in _all_predictions(y.size) if p[0] == 0)
    assert f_star == pytest.approx(6 / 7)  # 3 TP, 1 FN
    table = cost_tables(f1(), -f_star, shift="minimal")[0]
    assert table[1, 0] / (table[1, 0] + table[0, 1]) == pytest.approx(f_star / 2, abs=1e-12)


def test_a_lagrangian_term_adds_its_weights_on_the_cells():
    """The constrained search's target: num - lambda den plus each cell times its penalty; a
    flipped sign on the penalty (it rewarded breaking a constraint) survived every test."""
    from metro.costs import penalty_cells

    spec = f_beta(1.0)
    cells = np.array([0.2, 0.1, 0.3, 0.4])
    recall_floor = np.array([[-1.0, 0.0, 0.8 / 0.2, 0.0]])  # g(cells) >= 0: an illustrative row
    pen = penalty_cells(recall_floor, np.array([[0.5]]))
    np.testing.assert_allclose(pen, [[0.5, 0.0, -2.0, 0.0]])
    plain = empirical_l_lambda(spec, -0.4, cells)
    with_it = empirical_l_lambda(spec, -0.4, cells, pen[0])
    assert with_it == pytest.approx(plain + cells @ pen[0])
    rows = empirical_l_lambda(spec, np.array([-0.4, -0.6]), np.vstack([cells, cells]),
                              np.vstack([pen, 2 * pen]))  # fmt: skip
    assert rows[1] - empirical_l_lambda(spec, -0.6, cells) == pytest.approx(2 * cells @ pen[0])
    # Multipliers are non-negative (a Lagrangian's): a negative one is refused, however small.
    with pytest.raises(ValueError, match="non-negative"):
        penalty_cells(recall_floor, np.array([[-0.5]]))
