"""Tests of metro.surrogates: the margin functions Phi of the paper's Table 1 and the cost-sensitive
surrogate C(+1, y) Phi(-h) + C(-1, y) Phi(h)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from metro.surrogates import SURROGATES, Surrogate, cost_sensitive_loss, get_surrogate

# (name, params): defaults and a couple of non-default k / rho
CASES = [
    ("exponential", {}),
    ("logistic", {}),
    ("quadratic", {}),
    ("hinge", {}),
    ("sigmoid", {}),
    ("sigmoid", {"k": 0.3}),
    ("sigmoid", {"k": 5.0}),
    ("rho_margin", {}),
    ("rho_margin", {"rho": 0.25}),
    ("rho_margin", {"rho": 4.0}),
]
IDS = [f"{n}-{'-'.join(f'{k}{v}' for k, v in p.items()) or 'default'}" for n, p in CASES]
DTYPES = [torch.float32, torch.float64]


def phi_of(name: str, params: dict, t: torch.Tensor) -> torch.Tensor:
    return get_surrogate(name, **params).phi(t)


def reference_phi(name: str, params: dict, t: np.ndarray) -> np.ndarray:
    """The paper's Table 1, in float64 numpy."""
    if name == "exponential":
        return np.exp(-t)
    if name == "logistic":
        return np.log1p(np.exp(-t)) / np.log(2)
    if name == "quadratic":
        return np.maximum(1 - t, 0) ** 2
    if name == "hinge":
        return np.maximum(1 - t, 0)
    if name == "sigmoid":
        return 1 - np.tanh(params.get("k", 1.0) * t)
    if name == "rho_margin":
        return np.minimum(1, np.maximum(0, 1 - t / params.get("rho", 1.0)))
    raise AssertionError(name)


def test_the_six_surrogates():
    assert set(SURROGATES) == {
        "exponential",
        "logistic",
        "quadratic",
        "hinge",
        "sigmoid",
        "rho_margin",
    }
    convex = {n for n in SURROGATES if Surrogate(n).convex}
    assert convex == {"exponential", "logistic", "quadratic", "hinge"}


@pytest.mark.parametrize(("name", "params"), CASES, ids=IDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_phi_is_non_increasing(name, params, dtype):
    t = torch.linspace(-50, 50, 20001, dtype=dtype)
    v = phi_of(name, params, t)
    assert v.shape == t.shape and v.dtype == dtype
    assert torch.all(torch.isfinite(v))
    assert torch.all(v[1:] <= v[:-1]), "Phi must be non-increasing"


@pytest.mark.parametrize(("name", "params"), CASES, ids=IDS)
def test_phi_upper_bounds_the_zero_one_loss(name, params):
    t = torch.cat(
        [torch.linspace(-50, 50, 20001, dtype=torch.float64), torch.tensor([0.0, -1e-9, 1e-9])]
    )
    v = phi_of(name, params, t)
    indicator = (t <= 0).to(torch.float64)
    if name == "logistic":
        # base 2, so that Phi(0) = 1 exactly and the bound is tight at the origin
        assert phi_of(name, params, torch.tensor(0.0, dtype=torch.float64)).item() == (
            pytest.approx(1.0, abs=1e-15)
        )
    assert torch.all(v >= indicator)
    assert torch.all(v >= 0)


@pytest.mark.parametrize(("name", "params"), CASES, ids=IDS)
def test_phi_matches_table_1(name, params):
    t = np.linspace(-30, 30, 6001)
    got = phi_of(name, params, torch.tensor(t, dtype=torch.float64)).numpy()
    expected = reference_phi(name, params, t)
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


def test_logistic_is_log1p_exp_where_finite():
    t = np.concatenate([np.linspace(-700, 700, 14001), [-36.0, -20.0, 0.0, 20.0, 36.0]])
    with np.errstate(over="ignore"):
        expected = np.log1p(np.exp(-t))
    finite = np.isfinite(expected)
    assert finite.sum() > 10000
    got64 = phi_of("logistic", {}, torch.tensor(t, dtype=torch.float64)).numpy()
    np.testing.assert_allclose(got64[finite], expected[finite] / np.log(2), rtol=1e-9, atol=1e-300)
    # float32 over the float32-representable part
    t32 = np.linspace(-80, 80, 1601)
    got32 = phi_of("logistic", {}, torch.tensor(t32, dtype=torch.float32)).numpy()
    np.testing.assert_allclose(got32, np.log1p(np.exp(-t32)) / np.log(2), rtol=1e-5, atol=1e-30)


def test_exponential_is_exp_for_t_at_least_minus_20():
    t = np.linspace(-20, 50, 7001)
    got = phi_of("exponential", {}, torch.tensor(t, dtype=torch.float64)).numpy()
    np.testing.assert_allclose(got, np.exp(-t), rtol=1e-12)
    t32 = torch.tensor(t, dtype=torch.float32)
    got32 = phi_of("exponential", {}, t32).numpy()
    np.testing.assert_allclose(got32, np.exp(-t32.numpy().astype(np.float64)), rtol=1e-5)


def test_exponential_tail_is_the_tangent():
    """Below t = -30 the exponential continues along its tangent at -30: continuous, with a
    continuous slope, convex and finite."""
    cap = 30.0
    t = torch.tensor([-1e4, -1000.0, -100.0, -31.0, -30.0], dtype=torch.float64)
    v = phi_of("exponential", {}, t)
    tangent = math.exp(cap) * (1 - (t + cap))
    torch.testing.assert_close(v, tangent, rtol=1e-12, atol=0.0)
    eps = 1e-6
    around = torch.tensor([-cap - eps, -cap + eps], dtype=torch.float64)
    left, right = phi_of("exponential", {}, around).tolist()
    assert left == pytest.approx(right, rel=1e-5)
    t = torch.linspace(-60, -10, 50001, dtype=torch.float64)
    v = phi_of("exponential", {}, t)
    second = v[2:] - 2 * v[1:-1] + v[:-2]
    assert torch.all(second >= -1e-9 * v[1:-1])


@pytest.mark.parametrize("name", ["exponential", "logistic", "quadratic", "hinge"])
def test_convex_surrogates_are_convex(name):
    t = torch.linspace(-20, 20, 4001, dtype=torch.float64)
    v = phi_of(name, {}, t)
    second = v[2:] - 2 * v[1:-1] + v[:-2]
    assert torch.all(second >= -1e-9 * (1 + v[1:-1].abs()))


EXTREMES = [-1e4, -100.0, 0.0, 100.0, 1e4]


@pytest.mark.parametrize(("name", "params"), CASES, ids=IDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_finite_value_and_gradient_at_extremes(name, params, dtype):
    t = torch.tensor(EXTREMES, dtype=dtype, requires_grad=True)
    v = phi_of(name, params, t)
    assert torch.all(torch.isfinite(v)), v
    (grad,) = torch.autograd.grad(v.sum(), t)
    assert torch.all(torch.isfinite(grad)), grad
    # a non-increasing function has non-positive derivatives
    assert torch.all(grad <= 0), grad
    # the surrogate itself, with both signs of the score and non-zero costs
    s = torch.tensor(EXTREMES, dtype=dtype, requires_grad=True)
    loss = cost_sensitive_loss(
        get_surrogate(name, **params),
        s,
        torch.full_like(s, 0.7).detach(),
        torch.full_like(s, 0.3).detach(),
    )
    assert torch.all(torch.isfinite(loss))
    (g,) = torch.autograd.grad(loss.sum(), s)
    assert torch.all(torch.isfinite(g))


@pytest.mark.parametrize("dtype", DTYPES)
def test_convex_surrogates_keep_a_gradient_far_out(dtype):
    """The logistic and exponential keep pushing a badly wrong score (no vanishing gradient)."""
    t = torch.tensor([-1e4, -100.0], dtype=dtype, requires_grad=True)
    for name in ("logistic", "exponential", "hinge", "quadratic"):
        (grad,) = torch.autograd.grad(phi_of(name, {}, t).sum(), t)
        assert torch.all(grad < 0), (name, grad)


# -- cost_sensitive_loss ------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(
    n=st.integers(1, 20),
    k=st.integers(1, 5),
    seed=st.integers(0, 2**32 - 1),
    case=st.sampled_from(CASES),
    per_model=st.booleans(),
)
def test_cost_sensitive_loss_value_and_broadcasting(n, k, seed, case, per_model):
    name, params = case
    sur = get_surrogate(name, **params)
    rng = np.random.default_rng(seed)
    scores = rng.normal(scale=3.0, size=(n, k))
    width = k if per_model else 1
    c_pos = rng.uniform(0, 1, size=(n, width))
    c_neg = rng.uniform(0, 1, size=(n, width))
    out = cost_sensitive_loss(
        sur, torch.tensor(scores), torch.tensor(c_pos), torch.tensor(c_neg)
    ).numpy()
    assert out.shape == (n, k)
    expected = c_pos * reference_phi(name, params, -scores) + c_neg * reference_phi(
        name, params, scores
    )
    np.testing.assert_allclose(out, expected, rtol=1e-9, atol=1e-12)


def test_cost_sensitive_loss_terms():
    """C(+1, y) multiplies Phi(-h) (the cost of predicting +1 is paid when h is large) and
    C(-1, y) multiplies Phi(h)."""
    sur = get_surrogate("hinge")
    h = torch.tensor([[5.0], [-5.0]])
    only_pos_cost = cost_sensitive_loss(sur, h, torch.ones(2, 1), torch.zeros(2, 1))
    # predicting +1 firmly (h = 5) pays C(+1) Phi(-5) = 6; h = -5 pays Phi(5) = 0
    assert only_pos_cost.squeeze(1).tolist() == [6.0, 0.0]
    only_neg_cost = cost_sensitive_loss(sur, h, torch.zeros(2, 1), torch.ones(2, 1))
    assert only_neg_cost.squeeze(1).tolist() == [0.0, 6.0]
    # broadcasting [n, 1] costs over K = 3 models
    scores = torch.tensor([[0.0, 1.0, -2.0], [3.0, -1.0, 0.5]])
    c_pos = torch.tensor([[0.25], [1.0]])
    c_neg = torch.tensor([[0.5], [0.0]])
    out = cost_sensitive_loss(sur, scores, c_pos, c_neg)
    assert out.shape == (2, 3)
    expected = c_pos * torch.clamp(1 + scores, min=0) + c_neg * torch.clamp(1 - scores, min=0)
    torch.testing.assert_close(out, expected)


def test_cost_sensitive_loss_minimizer_follows_costs():
    """With the logistic, the pointwise minimizer of the expected surrogate under costs
    (c_pos, c_neg) is h = log(c_neg / c_pos): the sign of h says which prediction is cheaper."""
    sur = get_surrogate("logistic")
    h = torch.linspace(-10, 10, 200001, dtype=torch.float64)
    for c_pos, c_neg in [(0.2, 0.8), (0.9, 0.1), (0.5, 0.5)]:
        vals = cost_sensitive_loss(
            sur,
            h,
            torch.tensor(c_pos, dtype=torch.float64),
            torch.tensor(c_neg, dtype=torch.float64),
        )
        h_min = float(h[int(torch.argmin(vals))])
        assert h_min == pytest.approx(math.log(c_neg / c_pos), abs=1e-3)


# -- validation ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        (("softmax",), {}, "unknown surrogate"),
        (("",), {}, "unknown surrogate"),
        (("hinge",), {"k": 2.0}, "takes no parameter"),
        (("logistic",), {"rho": 1.0}, "takes no parameter"),
        (("sigmoid",), {"rho": 1.0}, "takes no parameter"),
        (("rho_margin",), {"k": 1.0}, "takes no parameter"),
        (("sigmoid",), {"k": 0.0}, "positive"),
        (("sigmoid",), {"k": -1.0}, "positive"),
        (("sigmoid",), {"k": float("nan")}, "positive"),
        (("sigmoid",), {"k": float("inf")}, "positive"),
        (("rho_margin",), {"rho": 0.0}, "positive"),
        (("rho-margin",), {"rho": -0.5}, "positive"),
        ((3,), {}, "surrogate must be a name"),
    ],
)
def test_get_surrogate_validation(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        get_surrogate(*args, **kwargs)


def test_surrogate_constructor_validation():
    with pytest.raises(ValueError, match="unknown surrogate"):
        Surrogate("tanh")
    with pytest.raises(ValueError, match="takes no parameter"):
        Surrogate("hinge", {"k": 2.0})
    with pytest.raises(ValueError, match="positive"):
        Surrogate("sigmoid", {"k": 0.0})


def test_get_surrogate_names_and_passthrough():
    sur = get_surrogate("rho-margin", rho=0.5)
    assert sur.name == "rho_margin" and sur.params == {"rho": 0.5}
    v = sur.phi(torch.tensor([0.0, 0.25, 0.5, 1.0, -1.0], dtype=torch.float64))
    torch.testing.assert_close(v, torch.tensor([1.0, 0.5, 0.0, 0.0, 1.0], dtype=torch.float64))
    assert get_surrogate("Logistic").name == "logistic"
    assert get_surrogate("RHO_MARGIN").name == "rho_margin"
    assert get_surrogate("sigmoid", k=2).to_dict() == {"name": "sigmoid", "k": 2.0}
    assert get_surrogate(sur) is sur
    with pytest.raises(ValueError, match="only be given with a surrogate name"):
        get_surrogate(sur, rho=1.0)
    # sigmoid's k scales the margin
    k2 = get_surrogate("sigmoid", k=2.0).phi(torch.tensor([0.3], dtype=torch.float64))
    k1 = get_surrogate("sigmoid").phi(torch.tensor([0.6], dtype=torch.float64))
    torch.testing.assert_close(k2, k1)
