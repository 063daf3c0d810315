"""The refinement step of a linear model (metro.trainer.refine): the smoothed loss against the
metric's own loss, the step against its start, and the checks at the boundary."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.metrics import f1_score, fbeta_score, jaccard_score

from metro.costs import cost_tables
from metro.datasets import load_dataset
from metro.examples import figure1_data
from metro.metrics import get_metric
from metro.models import build_model, get_model_spec
from metro.search.base import cells_from_predictions
from metro.surrogates import get_surrogate
from metro.trainer import TrainingConfig, fit_cost_sensitive, predict_scores
from metro.trainer.refine import refine_linear, smoothed_ratio_loss


def _fitted(X: np.ndarray, y: np.ndarray, metric: str = "f1", lam: float = -0.5):
    spec = get_metric(metric).resolve(y)
    costs = cost_tables(spec, np.array([lam]))
    fit = fit_cost_sensitive(
        X, y, costs, model=get_model_spec("linear"), surrogate=get_surrogate("logistic"),
        config=TrainingConfig(device="cpu"),
    )  # fmt: skip
    return spec, fit.model


@pytest.mark.parametrize(
    ("metric", "oracle"),
    [
        ("f1", f1_score),
        ("jaccard", jaccard_score),
        ("f_beta", lambda y, p: fbeta_score(y, p, beta=2.0)),
    ],
)
def test_smoothed_loss_tends_to_the_metric_of_the_signs(metric, oracle) -> None:
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 400)
    scores = rng.normal(size=400) + 0.8 * y
    params = {"beta": 2.0} if metric == "f_beta" else {}
    spec = get_metric(metric, **params).resolve(y)
    smooth = smoothed_ratio_loss(spec, torch.as_tensor(scores), torch.as_tensor(y), 1e-6)
    assert float(smooth) == pytest.approx(-oracle(y, scores >= 0), abs=1e-9)
    # A warm temperature counts every row half positive: another, smoother number.
    warm = smoothed_ratio_loss(spec, torch.as_tensor(scores), torch.as_tensor(y), 100.0)
    assert abs(float(warm) - float(smooth)) > 1e-3


def test_refinement_beats_a_tuned_threshold_on_a_misspecified_problem() -> None:
    data = load_dataset(
        "builtin://synthetic?n_samples=2000&n_features=20&positive_fraction=0.05&seed=0"
    )
    X, y = data.X.astype(np.float32), data.y.astype(np.int64)
    spec, model = _fitted(X, y)
    before = predict_scores(model, X)[:, 0]
    # The start: the fit with its best threshold, so the step has to beat a tuned threshold.
    cuts = np.unique(before)
    best_cut = max(cuts, key=lambda t: f1_score(y, before >= t))
    start_f1 = f1_score(y, before >= best_cut)
    refined = refine_linear(model, X, y, spec, offset=-float(best_cut), temperature=0.05)
    after = predict_scores(refined, X)[:, 0]
    assert f1_score(y, after >= 0) > start_f1 + 0.03
    # Scaled back: the margins keep the start's magnitude.
    assert np.linalg.norm(after - after.mean()) == pytest.approx(
        np.linalg.norm(before - before.mean()), rel=0.5
    )
    # The start is left as it was.
    assert np.array_equal(predict_scores(model, X)[:, 0], before)
    assert refined.n_models == 1 and refined.spec.kind == "linear"


@pytest.mark.parametrize("seed", [0, 2])
def test_without_sharpening_the_step_minimizes_the_metric_at_the_temperature_named(seed) -> None:
    data = load_dataset(
        f"builtin://synthetic?n_samples=600&n_features=20&positive_fraction=0.08&seed={seed}"
    )
    X, y = data.X.astype(np.float32), data.y.astype(np.int64)
    spec, model = _fitted(X, y)
    before = predict_scores(model, X)[:, 0]
    cut = max(np.unique(before), key=lambda t: f1_score(y, before >= t))
    start = before - cut
    spread = float(start.std())

    def at_named(scores: np.ndarray, temperature: float) -> float:
        """The smoothed loss with the scores brought to the start's spread: the objective a
        temperature names when the weights may not grow."""
        scaled = torch.as_tensor(scores * (spread / scores.std()))
        return float(smoothed_ratio_loss(spec, scaled, torch.as_tensor(y), temperature * spread))

    for temperature in (0.5, 0.2):
        held, free = (
            predict_scores(
                refine_linear(
                    model, X, y, spec, offset=-float(cut), temperature=temperature,
                    sharpen=sharpen,
                ),
                X,
            )[:, 0]
            for sharpen in (False, True)
        )  # fmt: skip
        assert at_named(held, temperature) < at_named(start, temperature) - 0.01
        # Growing the weights optimizes a sharper objective, so it does worse on the named one.
        assert at_named(held, temperature) < at_named(free, temperature)
        # Both decide by their own sign, at the start's margins.
        assert np.linalg.norm(held - held.mean()) == pytest.approx(
            np.linalg.norm(start - start.mean()), rel=0.5
        )


def test_refinement_is_deterministic_and_samples_large_data() -> None:
    X, y = figure1_data(3000, seed=1)
    spec, model = _fitted(X, y)
    a = refine_linear(model, X, y, spec, temperature=0.2, max_rows=500, seed=3)
    b = refine_linear(model, X, y, spec, temperature=0.2, max_rows=500, seed=3)
    c = refine_linear(model, X, y, spec, temperature=0.2, max_rows=500, seed=4)
    sa, sb, sc = (predict_scores(m, X)[:, 0] for m in (a, b, c))
    assert np.array_equal(sa, sb)
    assert not np.array_equal(sa, sc)  # another sample of 500 rows, another step
    assert np.all(np.isfinite(sa))


def test_one_class_data_returns_the_start_with_its_offset() -> None:
    X, y = figure1_data(200, seed=2)
    spec, model = _fitted(X, y)
    ones = np.ones_like(y)
    out = refine_linear(model, X, ones, spec, offset=0.5, temperature=0.2)
    assert np.allclose(predict_scores(out, X)[:, 0], predict_scores(model, X)[:, 0] + 0.5)


def test_refinement_checks_its_arguments() -> None:
    X, y = figure1_data(200, seed=3)
    spec, model = _fitted(X, y)
    with pytest.raises(ValueError, match="temperature must be a positive number"):
        refine_linear(model, X, y, spec, temperature=0.0)
    with pytest.raises(ValueError, match="offset must be finite"):
        refine_linear(model, X, y, spec, offset=float("nan"), temperature=0.1)
    with pytest.raises(ValueError, match="0/1 labels"):
        refine_linear(model, X, y * 2, spec, temperature=0.1)
    with pytest.raises(ValueError, match="one per row"):
        refine_linear(model, X, y[:-1], spec, temperature=0.1)
    mlp = build_model(get_model_spec("mlp", hidden=(4,)), input_shape=(2,), n_models=1)
    with pytest.raises(ValueError, match="only linear models"):
        refine_linear(mlp, X, y, spec, temperature=0.1)
    two = build_model(get_model_spec("linear"), input_shape=(2,), n_models=2)
    with pytest.raises(ValueError, match="a stack of one"):
        refine_linear(two, X, y, spec, temperature=0.1)


def test_cells_of_a_refined_model_are_its_signs() -> None:
    X, y = figure1_data(500, seed=4)
    spec, model = _fitted(X, y)
    refined = refine_linear(model, X, y, spec, temperature=0.2)
    s = predict_scores(refined, X)
    cells = cells_from_predictions(y, s >= 0)[0]
    assert -spec.loss_from_fractions(cells) == pytest.approx(f1_score(y, s[:, 0] >= 0))


def _torch_lbfgs(objective, w0: torch.Tensor, b0: torch.Tensor, max_iter: int) -> torch.Tensor:
    """The reference: torch.optim.LBFGS with the settings refine_linear uses."""
    w = w0.clone().requires_grad_(True)
    b = b0.clone().requires_grad_(True)
    opt = torch.optim.LBFGS(
        [w, b], lr=1.0, max_iter=max_iter, line_search_fn="strong_wolfe",
        tolerance_grad=1e-9, tolerance_change=1e-12,
    )  # fmt: skip

    def closure():
        opt.zero_grad()
        loss = objective(torch.cat([w, b.reshape(1)]))
        loss.backward()
        return loss

    opt.step(closure)
    return torch.cat([w.detach(), b.detach().reshape(1)])


@pytest.mark.parametrize(
    ("seed", "temperature", "max_iter"), [(0, 0.05, 100), (1, 0.2, 100), (2, 0.2, 7)]
)
def test_the_minimizer_is_torch_lbfgs_step_for_step(seed, temperature, max_iter) -> None:
    from metro.trainer.refine import _lbfgs

    rng = np.random.default_rng(seed)
    z = torch.as_tensor(rng.normal(size=(600, 5)))
    y = torch.as_tensor((rng.normal(size=600) + z[:, 0].numpy() > 0.8).astype(np.int64))
    spec = get_metric("f1").resolve(y.numpy())
    d = z.shape[1]

    def objective(x: torch.Tensor) -> torch.Tensor:
        return smoothed_ratio_loss(spec, z @ x[:d] + x[d], y, temperature)

    x0 = torch.as_tensor(rng.normal(size=d + 1))
    ours = _lbfgs(objective, x0, max_iter=max_iter)
    reference = _torch_lbfgs(objective, x0[:d], x0[d], max_iter)
    assert torch.equal(ours, reference)
    assert float(objective(ours)) < float(objective(x0))


def test_the_constraint_penalty_is_the_soft_shortfall() -> None:
    from metro.constraints import get_constraints
    from metro.trainer.refine import PENALTY, constraint_penalty, smoothed_cells

    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, 500)
    scores = torch.as_tensor(rng.normal(size=500) + 1.5 * y)
    labels = torch.as_tensor(y)
    cells = smoothed_cells(scores, labels, 0.1).numpy()
    recall = cells[0] / (cells[0] + cells[2])
    met = get_constraints([{"metric": "recall", "at_least": recall - 0.05}], y)
    missed = get_constraints([{"metric": "recall", "at_least": recall + 0.05}], y)
    assert float(constraint_penalty(met, scores, labels, 0.1)) == 0.0
    # g . C for recall >= b is (1 - b) tp - b fn, divided by its largest weight
    b = recall + 0.05
    g = np.array([1 - b, 0.0, -b, 0.0])
    expected = PENALTY * max(0.0, -(cells @ (g / np.abs(g).max())))
    assert float(constraint_penalty(missed, scores, labels, 0.1)) == pytest.approx(expected)
    assert expected > 0


def test_a_constrained_refinement_keeps_its_floor_on_the_training_rows() -> None:
    from metro.constraints import get_constraints

    data = load_dataset(
        "builtin://synthetic?n_samples=2000&n_features=20&positive_fraction=0.05&seed=0"
    )
    X, y = data.X.astype(np.float32), data.y.astype(np.int64)
    spec = get_metric("precision").resolve(y)
    model = _fitted(X, y)[1]
    floor = get_constraints([{"metric": "recall", "at_least": 0.6}], y)
    scores = predict_scores(model, X)[:, 0]
    start = np.quantile(scores[y == 1], 0.3)  # recall 0.7 at the start: inside the floor
    free = refine_linear(model, X, y, spec, offset=-start, temperature=0.05)
    bound = refine_linear(model, X, y, spec, offset=-start, temperature=0.05, constraints=floor)
    recall = {
        name: float(np.mean(predict_scores(m, X)[y == 1, 0] >= 0))
        for name, m in (("free", free), ("bound", bound))
    }
    # Precision alone trades recall away; the penalty holds it at the floor (up to the softness).
    assert recall["free"] < 0.55
    assert recall["bound"] >= 0.58
