"""Tests of metro.metrics: presets against scikit-learn, the paper's (alpha, beta) form, the
ERRATA's cell basis and vectors, validation, sign normalization and lambda_range."""

from __future__ import annotations

import itertools
import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sklearn import metrics as skm

from metro.metrics import (
    CELL_BASIS,
    CELLS,
    MetricSpec,
    PriorDependentMetric,
    UnknownMetricParameterError,
    accuracy,
    balanced_accuracy,
    confusion_fractions,
    f1,
    f_beta,
    get_metric,
    jaccard,
    precision,
    preset_parameters,
    recall,
    weighted_accuracy,
)
from metro.thresholds import losses_at_all_thresholds

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
APPROX = {"abs": 1e-9}

ENCODINGS = ("01", "pm1", "bool", "float01")


def encode(y01: np.ndarray, encoding: str) -> np.ndarray:
    """A {0,1} label vector in one of the encodings the metrics accept."""
    y01 = np.asarray(y01, dtype=np.int64)
    if encoding == "01":
        return y01
    if encoding == "pm1":
        return 2 * y01 - 1
    if encoding == "bool":
        return y01.astype(bool)
    if encoding == "float01":
        return y01.astype(np.float64)
    raise AssertionError(encoding)


def _bits(value: int, n: int) -> np.ndarray:
    return np.array([(value >> i) & 1 for i in range(n)], dtype=np.int64)


@st.composite
def samples(draw, min_size: int = 1, max_size: int = 200):
    """(y_true, y_pred) in {0,1} as int arrays, plus an encoding for each."""
    n = draw(st.integers(min_size, max_size))
    y = _bits(draw(st.integers(0, 2**n - 1)), n)
    p = _bits(draw(st.integers(0, 2**n - 1)), n)
    enc_true = draw(st.sampled_from(ENCODINGS))
    enc_pred = draw(st.sampled_from(ENCODINGS))
    return y, p, enc_true, enc_pred


def sk(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(fn(*args, **kwargs))


def cells_of(y01: np.ndarray, p01: np.ndarray) -> np.ndarray:
    """(tp, fp, fn, tn) fractions computed independently of the module."""
    y = np.asarray(y01, dtype=bool)
    p = np.asarray(p01, dtype=bool)
    n = y.size
    return (
        np.array([np.sum(y & p), np.sum(~y & p), np.sum(y & ~p), np.sum(~y & ~p)], dtype=np.float64)
        / n
    )


def phi_basis(h_pm: np.ndarray, y_pm: np.ndarray) -> np.ndarray:
    """The paper's basis (h*y, y, h, 1) per example, [n, 4]."""
    h = np.asarray(h_pm, dtype=np.float64)
    y = np.asarray(y_pm, dtype=np.float64)
    return np.stack([h * y, y, h, np.ones_like(h)], axis=1)


# -- presets against scikit-learn ------------------------------------------------------------

SKLEARN_PRESETS = {
    "f1": (f1, lambda y, p: skm.f1_score(y, p, zero_division=0)),
    "jaccard": (jaccard, lambda y, p: skm.jaccard_score(y, p, zero_division=0)),
    "precision": (precision, lambda y, p: skm.precision_score(y, p, zero_division=0)),
    "recall": (recall, lambda y, p: skm.recall_score(y, p, zero_division=0)),
    "accuracy": (accuracy, skm.accuracy_score),
}


@pytest.mark.parametrize("name", sorted(SKLEARN_PRESETS))
@SETTINGS
@given(data=samples())
def test_preset_matches_sklearn(name, data):
    y, p, et, ep = data
    factory, reference = SKLEARN_PRESETS[name]
    spec = factory()
    expected = sk(reference, y, p)
    yt, yp = encode(y, et), encode(p, ep)
    assert spec.score(yt, yp) == pytest.approx(expected, **APPROX)
    assert spec.loss(yt, yp) == pytest.approx(-expected, **APPROX)
    assert spec.loss(yt, yp) == -spec.score(yt, yp)
    # the same preset through the registry
    via_registry = get_metric(name)
    assert via_registry.score(yt, yp) == pytest.approx(expected, **APPROX)


@SETTINGS
@given(data=samples(), b=st.floats(0.1, 5.0))
def test_f_beta_matches_sklearn(data, b):
    y, p, et, ep = data
    spec = f_beta(b)
    expected = sk(skm.fbeta_score, y, p, beta=b, zero_division=0)
    yt, yp = encode(y, et), encode(p, ep)
    assert spec.score(yt, yp) == pytest.approx(expected, **APPROX)
    assert spec.loss(yt, yp) == -spec.score(yt, yp)
    assert get_metric("f_beta", beta=b).score(yt, yp) == pytest.approx(expected, **APPROX)
    assert get_metric("fbeta", beta=b).score(yt, yp) == pytest.approx(expected, **APPROX)


def test_f_beta_of_one_is_f1():
    assert f_beta(1.0) == f1()
    assert f1().name == "f1"


@SETTINGS
@given(data=samples())
def test_balanced_accuracy_matches_sklearn_or_raises(data):
    y, p, et, ep = data
    metric = balanced_accuracy()
    assert isinstance(metric, PriorDependentMetric)
    yt, yp = encode(y, et), encode(p, ep)
    if 0 < y.sum() < y.size:
        expected = sk(skm.balanced_accuracy_score, y, p)
        assert metric.score(yt, yp) == pytest.approx(expected, **APPROX)
        assert metric.loss(yt, yp) == pytest.approx(-expected, **APPROX)
        resolved = metric.resolve(yt)
        assert resolved.score(yt, yp) == pytest.approx(expected, **APPROX)
        assert resolved.params["prior"] == pytest.approx(y.mean(), **APPROX)
    else:
        with pytest.raises(ValueError, match="both classes"):
            metric.score(yt, yp)
        with pytest.raises(ValueError, match="both classes"):
            metric.loss(yt, yp)
        with pytest.raises(ValueError, match="both classes"):
            metric.resolve(yt)


def test_balanced_accuracy_resolved_on_some_rows_scores_any_rows_as_sklearn_does():
    """Resolved on the training rows' prior, it scored a holdout's counts with that prior: 1.5
    on a holdout with other class sizes. Each row of cells is scored with its own prior."""
    rng = np.random.default_rng(0)
    train = (rng.random(2000) < 0.001).astype(int)
    train[:2] = 1
    spec = balanced_accuracy().resolve(train)
    for n_pos in (1, 7, 30):
        y = np.r_[np.ones(n_pos, int), np.zeros(500 - n_pos, int)]
        p = np.where(rng.random(500) < 0.8, y, 1 - y)
        expected = skm.balanced_accuracy_score(y, p)
        assert spec.score(y, p) == pytest.approx(expected, abs=1e-12)
        cells = confusion_fractions(y, p)
        assert spec.scores_of_cells(np.stack([cells, cells * 500]))[1] == pytest.approx(expected)


def test_balanced_accuracy_of_rows_of_one_class_is_sklearns_and_a_resolved_spec_pickles():
    """Rows of one class took the resolving rows' prior (3.33 for 2 of 3 positives right); a
    resolved spec held a local function, so a fitted estimator no longer pickled."""
    import pickle

    spec = balanced_accuracy().resolve(np.r_[np.ones(10, int), np.zeros(90, int)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # sklearn: a class absent from y_true
        for t, p in (([1, 1, 1], [1, 0, 1]), ([0, 0, 0], [0, 1, 0])):
            expected = skm.balanced_accuracy_score(t, p)
            assert spec.scores_of_cells(confusion_fractions(t, p)) == pytest.approx(expected)
    again = pickle.loads(pickle.dumps(spec))
    y = np.r_[np.ones(7, int), np.zeros(93, int)]
    assert again.score(y, y) == spec.score(y, y) == pytest.approx(1.0)


def test_a_constraint_of_balanced_accuracy_reports_the_value_of_its_own_rows():
    from metro.constraints import get_constraints

    [floor] = get_constraints(
        [{"metric": "balanced_accuracy", "at_least": 0.9}], np.r_[1, 1, np.zeros(1998, int)]
    )
    y = np.r_[np.ones(10, int), np.zeros(90, int)]
    p = y.copy()
    p[0] = 0
    assert floor.value(confusion_fractions(y, p)) == pytest.approx(0.95)


@pytest.mark.parametrize("scale", [1e-9, 1.0, 1e3])
def test_a_ratio_is_zero_over_zero_only_where_its_denominator_is(scale):
    """Zero was judged against the coefficients' size: a denominator weighing tn by 1e12 made
    tp + fp = 0.1 a 0/0 (precision 0 instead of 1), and precision scaled by 1e-9 lost its
    thresholds' values, though scaling numerator and denominator together changes nothing."""
    heavy = MetricSpec.from_confusion(
        numerator={"tp": 1}, denominator={"tp": 1, "fp": 1, "tn": 1e12}
    )
    y = np.r_[np.ones(10, int), np.zeros(90, int)]
    assert heavy.score(np.ones(100, int), y) == pytest.approx(1.0)
    scaled = MetricSpec.from_confusion(
        numerator={"tp": scale}, denominator={"tp": scale, "fp": scale}
    )
    rng = np.random.default_rng(0)
    labels = (rng.random(3000) < 0.1).astype(int)
    scores = 2.0 * labels + rng.normal(size=3000)
    np.testing.assert_allclose(
        losses_at_all_thresholds(scaled, scores, labels)[1],
        losses_at_all_thresholds(precision(), scores, labels)[1],
    )
    assert scaled.zero_denominators(np.array([[0.0, 0.0, 0.1, 0.9]])).tolist() == [True]


def test_balanced_accuracy_needs_labels():
    with pytest.raises(ValueError, match="class prior"):
        balanced_accuracy().resolve(None)
    with pytest.raises(ValueError, match="empty"):
        balanced_accuracy().resolve(np.array([], dtype=np.int64))


weights = st.one_of(st.just(0.0), st.floats(0.01, 10.0))


@SETTINGS
@given(data=samples(), w=st.tuples(weights, weights, weights, weights))
def test_weighted_accuracy_matches_confusion_matrix(data, w):
    y, p, et, ep = data
    w_tp, w_tn, w_fp, w_fn = w
    if (w_tp == 0 and w_tn == 0) or (w_fp == 0 and w_fn == 0):
        with pytest.raises(ValueError, match="both be zero"):
            weighted_accuracy(w_tp, w_tn, w_fp, w_fn)
        return
    spec = weighted_accuracy(w_tp, w_tn, w_fp, w_fn)
    tn, fp, fn, tp = skm.confusion_matrix(y, p, labels=[0, 1]).ravel()
    num = w_tp * tp + w_tn * tn
    den = num + w_fp * fp + w_fn * fn
    expected = num / den if den > 0 else 0.0
    yt, yp = encode(y, et), encode(p, ep)
    assert spec.score(yt, yp) == pytest.approx(expected, **APPROX)
    assert spec.loss(yt, yp) == -spec.score(yt, yp)
    via_registry = get_metric("weighted_accuracy", w_tp=w_tp, w_tn=w_tn, w_fp=w_fp, w_fn=w_fn)
    assert via_registry.score(yt, yp) == pytest.approx(expected, **APPROX)


def test_weighted_accuracy_with_unit_weights_is_accuracy():
    assert weighted_accuracy() == accuracy()
    # (w_tp, w_tn, w_fp, w_fn) = (1, 0, 1, 0) is precision, (1, 0, 0, 1) is recall
    assert weighted_accuracy(1, 0, 1, 0) == precision()
    assert weighted_accuracy(1, 0, 0, 1) == recall()


@pytest.mark.parametrize("factory", [f1, jaccard, precision, recall, accuracy, weighted_accuracy])
def test_presets_are_scores_to_maximize(factory):
    spec = factory()
    assert spec.greater_is_better
    assert spec.zero_division == 0.0
    y = np.array([1, 1, 0, 0, 1])
    p = np.array([1, 0, 0, 1, 1])
    assert spec.loss(y, p) == -spec.score(y, p)
    assert spec.score_from_loss(spec.loss(y, p)) == spec.score(y, p)


def test_perfect_and_all_wrong_predictions():
    y = np.array([1, 0, 1, 1, 0])
    for spec in (f1(), jaccard(), precision(), recall(), accuracy(), f_beta(2.0)):
        assert spec.score(y, y) == pytest.approx(1.0, **APPROX)
        assert spec.score(y, 1 - y) == pytest.approx(0.0, **APPROX)
    # A score of 0 is "0.0" in a result, never "-0.0" (the negated loss of 0).
    assert str(f1().score(y, 1 - y)) == "0.0" and str(f1().score_from_loss(0.0)) == "0.0"
    assert balanced_accuracy().score(y, y) == pytest.approx(1.0, **APPROX)
    assert balanced_accuracy().score(y, 1 - y) == pytest.approx(0.0, **APPROX)


def test_zero_division_is_reported_as_the_score():
    spec = MetricSpec.from_confusion(
        numerator={"tp": 1}, denominator={"tp": 1, "fp": 1}, zero_division=1.0
    )
    y = np.array([1, 0, 1])
    nothing = np.zeros(3, dtype=np.int64)
    assert spec.score(y, nothing) == 1.0
    assert spec.loss(y, nothing) == -1.0
    # sklearn agrees
    assert spec.score(y, nothing) == sk(skm.precision_score, y, nothing, zero_division=1.0)


ZERO_DIVISION_PRESETS = {
    "f1": skm.f1_score,
    "jaccard": skm.jaccard_score,
    "precision": skm.precision_score,
    "recall": skm.recall_score,
}


@pytest.mark.parametrize("name", sorted(ZERO_DIVISION_PRESETS))
def test_preset_zero_division_matches_sklearn(name):
    reference = ZERO_DIVISION_PRESETS[name]
    specs = {z: get_metric(name, zero_division=z) for z in (0.0, 0.5, 1.0)}
    assert [spec.zero_division for spec in specs.values()] == [0.0, 0.5, 1.0]
    # Every labelling of 3 rows against every prediction: the 0/0 ones (nothing predicted, no
    # positive row, or both) among them. scikit-learn takes 0 or 1: a value between scores the
    # 0/0 cases (where its two answers differ) as itself.
    for y_bits, p_bits in itertools.product(itertools.product((0, 1), repeat=3), repeat=2):
        y, p = np.array(y_bits), np.array(p_bits)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            low, high = (reference(y, p, zero_division=z) for z in (0.0, 1.0))
        for z, spec in specs.items():
            expected = low + z * (high - low)
            assert spec.score(y, p) == pytest.approx(expected, **APPROX), (z, y_bits, p_bits)


@pytest.mark.parametrize("zero_division", [0.0, 1.0])
def test_f_beta_zero_division_matches_sklearn(zero_division):
    spec = get_metric("f_beta", beta=2.0, zero_division=zero_division)
    for y_bits, p_bits in itertools.product(itertools.product((0, 1), repeat=3), repeat=2):
        y, p = np.array(y_bits), np.array(p_bits)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = skm.fbeta_score(y, p, beta=2.0, zero_division=zero_division)
        assert spec.score(y, p) == pytest.approx(expected, **APPROX), (y_bits, p_bits)


@pytest.mark.parametrize("value", [-0.1, 1.5, float("nan"), True, "1", None])
@pytest.mark.parametrize("name", ["precision", "recall", "f1", "jaccard"])
def test_preset_zero_division_outside_zero_one_is_refused(name, value):
    with pytest.raises(ValueError, match=r"zero_division must be a number between 0 and 1"):
        get_metric(name, zero_division=value)


def test_presets_default_to_sklearns_zero_division():
    for name in ZERO_DIVISION_PRESETS:
        assert get_metric(name).zero_division == 0.0
        assert preset_parameters(name)[-1] == "zero_division"
    assert preset_parameters("f_beta") == ("beta", "zero_division")
    assert get_metric("f1", zero_division=1.0) == f_beta(1.0, zero_division=1.0)
    assert get_metric("f1", zero_division=1.0) != f1()


# -- confusion_fractions and label handling ------------------------------------------------------


@SETTINGS
@given(data=samples())
def test_confusion_fractions_match_confusion_matrix(data):
    y, p, et, ep = data
    tn, fp, fn, tp = skm.confusion_matrix(y, p, labels=[0, 1]).ravel()
    got = confusion_fractions(encode(y, et), encode(p, ep))
    np.testing.assert_allclose(got, np.array([tp, fp, fn, tn]) / y.size, atol=1e-15)
    assert got.sum() == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize(
    ("y_true", "y_pred", "match"),
    [
        ([0, 1, 2], [0, 1, 1], "labels in"),
        ([0, 1, 1], [-1, 0, 1], "labels in"),
        ([[0, 1]], [[0, 1]], "one-dimensional"),
        ([0, 1, 1], [0, 1], "labels but y_pred has"),
        ([], [], "empty"),
        (["a", "b"], ["a", "b"], "numeric"),
        ([0.5, 1.0], [0, 1], "labels in"),
    ],
)
def test_bad_labels_raise(y_true, y_pred, match):
    with pytest.raises(ValueError, match=match):
        f1().score(np.asarray(y_true), np.asarray(y_pred))


# -- the paper's (alpha, beta) form and the ERRATA --------------------------------------------

ERRATA_CELLS = {
    "tp": np.array([1, 1, 1, 1]) / 4,
    "fp": np.array([-1, -1, 1, 1]) / 4,
    "fn": np.array([-1, 1, -1, 1]) / 4,
    "tn": np.array([1, -1, -1, 1]) / 4,
}


def test_cell_basis_is_the_errata_table():
    assert CELLS == ("tp", "fp", "fn", "tn")
    for cell, vec in ERRATA_CELLS.items():
        np.testing.assert_array_equal(CELL_BASIS[cell], vec)
    np.testing.assert_array_equal(CELL_BASIS["const"], [0, 0, 0, 1])


@SETTINGS
@given(data=samples())
def test_cell_basis_reproduces_counts(data):
    y, p, _, _ = data
    phi = phi_basis(2 * p - 1, 2 * y - 1)
    expected = cells_of(y, p)
    for i, cell in enumerate(CELLS):
        # per example, the basis combination is exactly the cell's indicator
        indicator = phi @ CELL_BASIS[cell]
        np.testing.assert_allclose(indicator, indicator.round(), atol=1e-15)
        assert indicator.mean() == pytest.approx(expected[i], abs=1e-12)
    assert (phi @ CELL_BASIS["const"]).mean() == 1.0


@pytest.mark.parametrize(
    ("spec", "alpha", "beta"),
    [
        (f_beta(0.5), -(5 / 16) * np.ones(4), [0, 1 / 8, 1 / 2, 5 / 8]),
        (f1(), -(1 / 2) * np.ones(4), [0, 1 / 2, 1 / 2, 1]),
        (f_beta(2.0), -(5 / 4) * np.ones(4), [0, 2, 1 / 2, 5 / 2]),
        (jaccard(), -(1 / 4) * np.ones(4), [-1 / 4, 1 / 4, 1 / 4, 3 / 4]),
    ],
    ids=["f0.5", "f1", "f2", "jaccard"],
)
def test_alpha_beta_match_errata(spec, alpha, beta):
    np.testing.assert_allclose(spec.alpha, alpha, atol=1e-15)
    np.testing.assert_allclose(spec.beta, beta, atol=1e-15)


@SETTINGS
@given(b=st.floats(0.1, 5.0))
def test_f_beta_vectors_match_errata(b):
    b2 = b * b
    spec = f_beta(b)
    np.testing.assert_allclose(spec.alpha, -((1 + b2) / 4) * np.ones(4), atol=1e-12)
    np.testing.assert_allclose(spec.beta, [0, b2 / 2, 1 / 2, (b2 + 1) / 2], atol=1e-12)


def test_jaccard_beta_is_not_the_papers_typo():
    # The paper's (1/4, 1/4, -1/4, 3/4) is 1 - FP.
    typo = np.array([1, 1, -1, 3]) / 4
    one_minus_fp = np.array([0, 0, 0, 1]) - ERRATA_CELLS["fp"]
    np.testing.assert_allclose(typo, one_minus_fp)
    assert not np.allclose(jaccard().beta, typo)


def _all_specs_for(y01: np.ndarray):
    specs = [f1(), f_beta(0.5), f_beta(3.0), jaccard(), precision(), recall(), accuracy()]
    specs.append(weighted_accuracy(2.0, 0.5, 1.0, 3.0))
    if 0 < y01.sum() < y01.size:
        specs.append(balanced_accuracy().resolve(y01))
    return specs


@SETTINGS
@given(data=samples())
def test_paper_ratio_form_equals_loss(data):
    y, p, _, _ = data
    h_pm, y_pm = 2 * p - 1, 2 * y - 1
    phi = phi_basis(h_pm, y_pm)
    for spec in _all_specs_for(y):
        num = float(np.mean(phi @ spec.alpha))
        den = float(np.mean(phi @ spec.beta))
        if abs(den) > 1e-12:
            assert den > 0  # sign-normalized
            assert spec.loss(y_pm, h_pm) == pytest.approx(num / den, **APPROX)
        else:
            assert spec.loss(y_pm, h_pm) == pytest.approx(-spec.zero_division, **APPROX)
        # numerator_cells / denominator_cells are the same linear forms on the cell fractions
        cells = cells_of(y, p)
        assert spec.numerator_cells @ cells == pytest.approx(num, abs=1e-12)
        assert spec.denominator_cells @ cells == pytest.approx(den, abs=1e-12)


# -- from_confusion round trip and validation ----------------------------------------------------

cell_weights = st.dictionaries(
    st.sampled_from(("tp", "fp", "fn", "tn", "const")), st.integers(-3, 3), max_size=5
)


def _cell_vector(mapping) -> np.ndarray:
    vec = np.zeros(4)
    for key, w in mapping.items():
        if key == "const":
            vec += w
        else:
            vec[CELLS.index(key)] += w
    return vec


@SETTINGS
@given(num=cell_weights, den=cell_weights, gib=st.booleans())
def test_from_confusion_round_trip_and_exact_validation(num, den, gib):
    num_vec, den_vec = _cell_vector(num), _cell_vector(den)
    valid = (
        np.any(num_vec != 0)
        and np.any(den_vec != 0)
        and (np.all(den_vec >= 0) or np.all(den_vec <= 0))
        and not np.any((den_vec == 0) & (num_vec != 0))
    )
    if valid:
        # a ratio equal at every vertex with a positive denominator is constant: refused
        ratios = [n / d for n, d in zip(num_vec, den_vec, strict=True) if d != 0]
        valid = np.ptp(ratios) > 1e-9
    if not valid:
        with pytest.raises(ValueError):
            MetricSpec.from_confusion(numerator=num, denominator=den, greater_is_better=gib)
        return
    spec = MetricSpec.from_confusion(numerator=num, denominator=den, greater_is_better=gib)
    flip = -1.0 if np.all(den_vec <= 0) else 1.0
    sign = -1.0 if gib else 1.0
    np.testing.assert_allclose(spec.numerator_cells, flip * sign * num_vec, atol=1e-12)
    np.testing.assert_allclose(spec.denominator_cells, flip * den_vec, atol=1e-12)
    assert np.all(spec.denominator_cells >= -1e-12)
    assert spec.greater_is_better == gib
    # the score is the ratio as written, whatever the sign normalization did
    rng = np.random.default_rng(abs(hash((tuple(num_vec), tuple(den_vec)))) % 2**32)
    for _ in range(5):
        y = rng.integers(0, 2, size=20)
        p = rng.integers(0, 2, size=20)
        c = cells_of(y, p)
        d = den_vec @ c
        if abs(d) > 1e-9:
            ratio = (num_vec @ c) / d
            assert spec.score(y, p) == pytest.approx(ratio, **APPROX)
            assert spec.loss(y, p) == pytest.approx(sign * ratio, **APPROX)


def test_from_confusion_f1_is_the_preset():
    spec = MetricSpec.from_confusion(
        numerator={"tp": 2}, denominator={"tp": 2, "fp": 1, "fn": 1}, name="mine"
    )
    assert spec == f1()
    np.testing.assert_allclose(spec.numerator_cells, [-2, 0, 0, 0], atol=1e-15)
    np.testing.assert_allclose(spec.denominator_cells, [2, 1, 1, 0], atol=1e-15)


def test_const_term_is_every_cell():
    spec = MetricSpec.from_confusion(
        numerator={"tp": 1, "tn": 1}, denominator={"const": 1}, greater_is_better=False
    )
    np.testing.assert_allclose(spec.numerator_cells, [1, 0, 0, 1], atol=1e-15)
    np.testing.assert_allclose(spec.denominator_cells, [1, 1, 1, 1], atol=1e-15)
    np.testing.assert_allclose(spec.beta, [0, 0, 0, 1], atol=1e-15)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"alpha": [1, 2, 3], "beta": [0, 0, 0, 1]}, "exactly 4 coefficients"),
        ({"alpha": [1, 0, 0, 0], "beta": [0, 0, 0, 1, 0]}, "exactly 4 coefficients"),
        ({"alpha": [[1, 0, 0, 0]], "beta": [0, 0, 0, 1]}, "exactly 4 coefficients"),
        ({"alpha": [np.nan, 0, 0, 1], "beta": [0, 0, 0, 1]}, "finite"),
        ({"alpha": [1, 0, 0, 1], "beta": [0, np.inf, 0, 1]}, "finite"),
        ({"alpha": [0, 0, 0, 0], "beta": [0, 0, 0, 1]}, "alpha is all zeros"),
        ({"alpha": [1, 0, 0, 1], "beta": [0, 0, 0, 0]}, "beta is all zeros"),
        ({"alpha": [1, 0, 0, 1], "beta": [0, 0, 0, 1], "zero_division": np.nan}, "zero_division"),
    ],
)
def test_metric_spec_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MetricSpec(**kwargs)


@pytest.mark.parametrize(
    ("numerator", "denominator", "match"),
    [
        ({"tp": 1}, {"tp": 1, "fp": -1}, "changes sign"),
        ({"tp": 1}, {"tn": 2, "fn": -1}, "changes sign"),
        ({"tn": 1}, {"tp": 1}, "zero where the numerator is not"),
        ({"tp": 1, "fp": 1}, {"tp": 1, "fn": 1}, "zero where the numerator is not"),
        ({"tp": 1}, {"tpp": 1}, "unknown term"),
        ({"TP": 1}, {"tp": 1}, "unknown term"),
        ({"tp": float("nan")}, {"tp": 1}, "finite"),
        ({"tp": 1}, {"tp": float("inf")}, "finite"),
        ({"tp": 0}, {"tp": 1}, "numerator has no nonzero weight"),
        ({"tp": 1}, {"tp": 1, "fp": -1, "fn": 0, "tn": 0, "const": 0}, "changes sign"),
        ({"tp": 1}, {"tp": 1, "tn": -1}, "changes sign"),
        ({"tp": 1}, {"fp": 2, "const": -1}, "changes sign"),
        ({"tp": 1}, {}, "denominator has no nonzero weight"),
    ],
)
def test_from_confusion_validation(numerator, denominator, match):
    with pytest.raises(ValueError, match=match):
        MetricSpec.from_confusion(numerator=numerator, denominator=denominator)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"w_tp": -1.0}, "w_tp must be a non-negative number"),
        ({"w_tn": -0.1}, "w_tn must be a non-negative number"),
        ({"w_fp": -1e-9}, "w_fp must be a non-negative number"),
        ({"w_fn": -5}, "w_fn must be a non-negative number"),
        ({"w_fn": float("nan")}, "w_fn must be a non-negative number"),
        ({"w_fp": float("inf")}, "w_fp must be a non-negative number"),
        ({"w_tp": 0.0, "w_tn": 0.0}, "both be zero"),
    ],
)
def test_weighted_accuracy_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        weighted_accuracy(**kwargs)


@pytest.mark.parametrize("b", [0.0, -1.0, -0.5, float("nan"), float("inf"), float("-inf")])
def test_f_beta_rejects_non_positive_beta(b):
    with pytest.raises(ValueError, match="beta must be a positive number"):
        f_beta(b)
    with pytest.raises(ValueError, match="beta must be a positive number"):
        get_metric("f_beta", beta=b)


@pytest.mark.parametrize(
    ("preset", "params", "unknown", "accepted"),
    [
        ("precision", {"min_recall": 0.5}, ("min_recall",), ("zero_division",)),
        ("f_beta", {"beta": 2.0, "min_recall": 0.5}, ("min_recall",), ("beta", "zero_division")),
        ("accuracy", {"zero_division": 1.0}, ("zero_division",), ()),
        ("weighted_accuracy", {"w_tp": 1, "w_tq": 2, "x": 0}, ("w_tq", "x"),
         ("w_tp", "w_tn", "w_fp", "w_fn")),
        ("balanced_accuracy", {"prior": 0.3}, ("prior",), ()),
    ],
)  # fmt: skip
def test_unknown_preset_parameters_are_named_with_the_accepted_ones(
    preset, params, unknown, accepted
):
    with pytest.raises(UnknownMetricParameterError) as caught:
        get_metric(preset, **params)
    error = caught.value
    assert (error.metric, error.unknown, error.accepted) == (preset, unknown, accepted)
    assert isinstance(error, ValueError)
    message = str(error)
    assert "unexpected keyword" not in message and "()" not in message
    assert all(repr(name) in message for name in (*unknown, *accepted))
    if not accepted:
        assert "takes no parameters" in message
    assert preset_parameters(preset) == accepted


def test_get_metric_errors_and_passthrough():
    with pytest.raises(ValueError, match="unknown metric"):
        get_metric("f2")
    with pytest.raises(ValueError, match="unknown metric"):
        get_metric("roc_auc")
    with pytest.raises(ValueError, match="metric 'f1' has no parameter 'beta'"):
        get_metric("f1", beta=2.0)
    with pytest.raises(ValueError, match="metric 'jaccard' has no parameter 'foo'"):
        get_metric("jaccard", foo=1)
    with pytest.raises(ValueError, match="bad parameters for metric 'f_beta'"):
        get_metric("f_beta", beta=None)
    with pytest.raises(ValueError, match="preset name or a MetricSpec"):
        get_metric(3)
    spec = jaccard()
    assert get_metric(spec) is spec
    ba = balanced_accuracy()
    assert get_metric(ba) is ba
    with pytest.raises(ValueError, match="only be given with a preset name"):
        get_metric(spec, beta=2.0)
    # names are case-insensitive
    assert get_metric("F1") == f1()
    assert get_metric("Jaccard") == jaccard()


arrays4 = st.lists(
    st.floats(-5, 5, allow_nan=False).map(lambda v: round(v, 3)), min_size=4, max_size=4
)


@SETTINGS
@given(a=arrays4, b=arrays4, data=samples(max_size=50))
def test_sign_normalization(a, b, data):
    a, b = np.array(a), np.array(b)
    try:
        spec = MetricSpec(alpha=a, beta=b)
    except ValueError:
        with pytest.raises(ValueError):
            MetricSpec(alpha=-a, beta=-b)
        return
    flipped = MetricSpec(alpha=-a, beta=-b)
    assert flipped == spec
    np.testing.assert_allclose(flipped.alpha, spec.alpha)
    np.testing.assert_allclose(flipped.beta, spec.beta)
    assert np.all(spec.denominator_cells >= -1e-12)
    y, p, et, ep = data
    yt, yp = encode(y, et), encode(p, ep)
    assert flipped.loss(yt, yp) == spec.loss(yt, yp)
    # the sign normalization never changes the value of the ratio where it is defined
    phi = phi_basis(2 * p - 1, 2 * y - 1)
    den = float(np.mean(phi @ b))
    if abs(den) > 1e-9:
        assert spec.loss(yt, yp) == pytest.approx(float(np.mean(phi @ a)) / den, **APPROX)


def test_sign_normalization_of_a_preset():
    spec = jaccard()
    neg = MetricSpec(alpha=-spec.alpha, beta=-spec.beta, greater_is_better=True)
    assert neg == spec
    np.testing.assert_allclose(neg.beta, spec.beta)
    y = np.array([1, 0, 1, 1, 0, 0])
    p = np.array([1, 1, 0, 1, 0, 0])
    assert neg.loss(y, p) == spec.loss(y, p)


@pytest.mark.parametrize("scale", [1e-13, 1e-10, 1e-6, 1.0, 1e6, 1e10])
def test_scaling_numerator_and_denominator_changes_nothing(scale):
    """A ratio metric is invariant to scaling all its weights: weighted accuracy with weights
    (c, 0, c, 0) is precision for every c > 0, and must score like it on every sample."""
    y = np.zeros(200, dtype=np.int64)
    p = np.zeros(200, dtype=np.int64)
    y[:3] = 1
    p[0] = 1  # 1 TP out of 200 examples: precision 1, recall 1/3
    spec = weighted_accuracy(scale, 0.0, scale, 0.0)
    assert spec.score(y, p) == pytest.approx(precision().score(y, p), **APPROX)
    assert spec.lambda_range == pytest.approx(precision().lambda_range, abs=1e-12)
    scaled_recall = MetricSpec.from_confusion(
        numerator={"tp": scale}, denominator={"tp": scale, "fn": scale}
    )
    assert scaled_recall.score(y, p) == pytest.approx(1 / 3, **APPROX)


def test_equality_and_hash():
    assert f1() == f1()
    assert hash(f1()) == hash(f1())
    assert f1() != jaccard()
    assert f1() != f_beta(2.0)
    gib = MetricSpec.from_confusion(numerator={"tp": 1}, denominator={"tp": 1, "fp": 1})
    not_gib = MetricSpec(alpha=gib.alpha, beta=gib.beta, greater_is_better=False)
    assert gib != not_gib
    d = f1().to_dict()
    assert d["alpha"] == f1().alpha.tolist() and d["greater_is_better"] is True


# -- lambda_range and denominator_depends_on_predictions -----------------------------------------


@SETTINGS
@given(data=samples(), b=st.floats(0.1, 5.0))
def test_lambda_range_contains_every_loss(data, b):
    y, p, et, ep = data
    yt, yp = encode(y, et), encode(p, ep)
    for spec in [*_all_specs_for(y), f_beta(b)]:
        lo, hi = spec.lambda_range
        assert lo <= hi
        loss = spec.loss(yt, yp)
        assert lo - 1e-12 <= loss <= hi + 1e-12, (spec, loss, (lo, hi))


@SETTINGS
@given(data=samples(), w=st.tuples(weights, weights, weights, weights))
@example(data=(np.array([1, 0]), np.array([0, 1]), "01", "01"), w=(1.0, 1.0, 0.0, 0.0))
def test_lambda_range_contains_every_weighted_accuracy_loss(data, w):
    """Every weighted-accuracy spec that can be built must keep its losses, including the
    zero_division value where the denominator vanishes, inside lambda_range (the bisection over
    lambda searches there)."""
    y, p, et, ep = data
    try:
        spec = weighted_accuracy(*w)
    except ValueError:
        return
    lo, hi = spec.lambda_range
    loss = spec.loss(encode(y, et), encode(p, ep))
    assert lo - 1e-12 <= loss <= hi + 1e-12, (w, loss, (lo, hi))


@pytest.mark.parametrize("factory", [f1, jaccard, lambda: f_beta(0.5), lambda: f_beta(3.0)])
def test_lambda_range_is_tight_for_f_and_jaccard(factory):
    spec = factory()
    assert spec.lambda_range == pytest.approx((-1.0, 0.0), abs=1e-12)
    y = np.array([1, 0, 1, 0])
    assert spec.loss(y, y) == pytest.approx(-1.0, abs=1e-12)
    assert spec.loss(y, 1 - y) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("factory", [precision, recall, accuracy])
def test_lambda_range_of_other_presets(factory):
    assert factory().lambda_range == pytest.approx((-1.0, 0.0), abs=1e-12)


@SETTINGS
@given(n=st.integers(1, 8), y_bits=st.integers(0, 255))
def test_lambda_range_brute_force_f1_jaccard(n, y_bits):
    """Over all predictions on a tiny sample, the losses stay in the range."""
    y = np.array([(y_bits >> i) & 1 for i in range(n)])
    for spec in (f1(), jaccard()):
        lo, hi = spec.lambda_range
        losses = [spec.loss(y, np.array(p)) for p in itertools.product((0, 1), repeat=n)]
        assert lo - 1e-12 <= min(losses) and max(losses) <= hi + 1e-12


def test_balanced_accuracy_lambda_range_holds_its_losses():
    y = np.array([1, 0, 0, 0, 0])
    spec = balanced_accuracy().resolve(y)
    lo, hi = spec.lambda_range
    for p in itertools.product((0, 1), repeat=5):
        assert lo - 1e-12 <= spec.loss(y, np.array(p)) <= hi + 1e-12


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (accuracy(), False),
        (recall(), False),
        (balanced_accuracy().resolve(np.array([1, 0, 0])), False),
        (weighted_accuracy(1, 1, 1, 1), False),
        (weighted_accuracy(1, 0, 0, 1), False),  # recall
        (f1(), True),
        (f_beta(0.5), True),
        (jaccard(), True),
        (precision(), True),
        (weighted_accuracy(1, 0, 1, 0), True),  # precision
        (weighted_accuracy(2, 1, 1, 3), True),
    ],
    ids=[
        "accuracy",
        "recall",
        "balanced_accuracy",
        "wa_equal",
        "wa_recall",
        "f1",
        "f0.5",
        "jaccard",
        "precision",
        "wa_precision",
        "wa_unequal",
    ],
)
def test_denominator_depends_on_predictions(spec, expected):
    assert spec.denominator_depends_on_predictions is expected
    # cross-check: the denominator is fixed by the labels iff it weighs tp = fn and fp = tn
    d = spec.denominator_cells
    fixed_by_labels = np.isclose(d[0], d[2]) and np.isclose(d[1], d[3])
    assert bool(fixed_by_labels) == (not expected)


def test_constant_metrics_are_refused():
    with pytest.raises(ValueError, match="constant"):
        MetricSpec.from_confusion(numerator={"tp": 1, "fn": 1}, denominator={"tp": 1, "fn": 1})
    with pytest.raises(ValueError, match="constant"):
        weighted_accuracy(1, 1, 0, 0)


@pytest.mark.parametrize(
    ("metric", "params", "shown"),
    [("f_beta", {"beta": 2}, "F2"), ("f_beta", {"beta": 0.5}, "F0.5"), ("f1", {}, "F1"),
     ("jaccard", {}, "Jaccard"), ("balanced_accuracy", {}, "Balanced accuracy"),
     ("false_positive_rate", {}, "False positive rate"),
     ("true_negative_rate", {}, "True negative rate")],
)  # fmt: skip
def test_metrics_have_the_names_people_write(metric, params, shown):
    from metro.metrics import display_name, get_metric

    assert display_name(get_metric(metric, **params).name) == shown
    assert display_name("my_cost") == "my_cost"  # a custom metric keeps its own name


def test_a_names_notes_say_the_average_and_a_zero_division_other_than_zero():
    # The same counts score differently under another zero_division: a name that hid it would
    # mean two things.
    from metro.constraints import Constraint
    from metro.metrics import display_name, get_metric

    assert display_name("precision", zero_division=1) == "Precision (zero_division 1)"
    assert display_name("precision", zero_division=0.0) == "Precision"
    assert display_name("f1", average="macro") == "F1 (macro)"
    assert display_name("f_beta(2)", average="micro", zero_division=0.5) == (
        "F2 (micro, zero_division 0.5)"
    )
    # A weighted accuracy's weights: jobs with different costs read alike ("Weighted accuracy").
    from metro.metrics import spec_display_name

    costly = get_metric("weighted_accuracy", w_fn=20)
    assert spec_display_name(costly) == "Weighted accuracy (w_fn 20)"
    assert spec_display_name(get_metric("weighted_accuracy")) == "Weighted accuracy"
    assert spec_display_name(get_metric("weighted_accuracy", w_fp=0.5, w_fn=3)) == (
        "Weighted accuracy (w_fp 0.5, w_fn 3)"
    )
    assert spec_display_name(get_metric("f_beta", beta=2)) == "F2"
    floor = Constraint(get_metric("precision", zero_division=1), "at_least", 0.7)
    assert floor.name == "precision(zero_division=1) >= 0.7"
    assert Constraint(get_metric("precision"), "at_least", 0.7).name == "precision >= 0.7"


def test_f_beta_without_its_beta_is_refused_as_the_api_refuses_it():
    """`MetroClassifier(metric="f_beta")` trained F1 without a word (f_beta()'s beta defaults
    to 1), where a job with the same metric is a 422 asking for the beta."""
    from metro import MetroClassifier
    from metro.metrics import F_BETA_NEEDS_BETA

    for name in ("f_beta", "FBeta"):
        with pytest.raises(ValueError, match=re.escape(F_BETA_NEEDS_BETA)):
            get_metric(name)
    assert get_metric("f_beta", beta=2.0).name == "f_beta(2)"
    assert get_metric("f_beta", beta=1.0).name == "f1"  # asked for: F1 it is
    X, y = np.random.default_rng(0).normal(size=(60, 2)), np.arange(60) % 2
    with pytest.raises(ValueError, match="f_beta needs a beta"):
        MetroClassifier(metric="f_beta").fit(X, y)


def _reachable_losses(spec, n: int = 6) -> tuple[float, float]:
    """The least and the largest loss of every confusion of n rows (brute force)."""
    cells = [c for c in itertools.product(range(n + 1), repeat=4) if sum(c) == n]
    losses = spec.losses_of_cells(np.asarray(cells, dtype=np.float64) / n)
    return float(losses.min()), float(losses.max())


@pytest.mark.parametrize(
    "spec",
    [
        *(get_metric(name, zero_division=zd) for name in ("f1", "jaccard", "precision", "recall")
          for zd in (0, 1)),
        get_metric("f_beta", beta=2),
        # 0/0 scored outside [0, 1]: reachable wherever a denominator cell can be empty.
        MetricSpec.from_confusion(numerator={"fp": 1}, denominator={"tp": 1, "fp": 1},
                                  greater_is_better=False, zero_division=5, name="fdr"),
    ],
    ids=lambda s: f"{s.name}-zd{s.zero_division:g}",
)  # fmt: skip
def test_lambda_range_is_the_least_and_largest_reachable_loss(spec):
    """The search's lambdas lie in lambda_range: a sign slip on zero_division put precision's
    (zero_division 1) at (-1, 1), and a 0/0 loss of 5 was left out where only some of the
    denominator's cells can be empty."""
    assert spec.lambda_range == pytest.approx(_reachable_losses(spec))
