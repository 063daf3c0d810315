from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification

from metro.baselines import BASELINES, fit_baseline, theta_cost_tables
from metro.metrics import f1, f_beta
from metro.models import ModelSpec
from metro.trainer import TrainingConfig, predict_scores

CONFIG = TrainingConfig(max_iter=80)


def _split(seed=0):
    X, y = make_classification(
        n_samples=900, n_features=6, n_informative=3, weights=[0.85, 0.15], random_state=seed
    )
    X = X.astype(np.float32)
    return X[:450], y[:450], X[450:], y[450:]


def _fit(method, split, *, spec=None, validation=True, **extra):
    """``fit_baseline`` on a ``_split`` (without its validation part when ``validation`` is
    False), with the tests' model and trainer settings."""
    Xtr, ytr, Xva, yva = split
    return fit_baseline(
        method, spec=f1() if spec is None else spec, X_train=Xtr, y_train=ytr,
        X_validation=Xva if validation else None, y_validation=yva if validation else None,
        model=ModelSpec(), config=CONFIG, **extra,
    )  # fmt: skip


def test_theta_cost_tables():
    costs = theta_cost_tables(np.array([0.2, 0.5]))
    assert costs.shape == (2, 2, 2)
    # [k, pred, true]: false positive costs theta, false negative costs 1 - theta
    assert costs[0, 1, 0] == pytest.approx(0.2) and costs[0, 0, 1] == pytest.approx(0.8)
    assert costs[:, 0, 0].sum() == 0 and costs[:, 1, 1].sum() == 0
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        theta_cost_tables(np.array([0.0]))


@pytest.mark.parametrize("method", BASELINES)
def test_each_baseline_fits_and_predicts(method):
    split = _split()
    _, _, Xva, yva = split
    result = _fit(method, split)
    pred = result.predict(Xva)
    assert pred.shape == yva.shape and set(np.unique(pred)) <= {0, 1}
    if method != "erm":
        # the validation loss it reports is the loss of its own predictions there
        assert result.validation_loss == pytest.approx(f1().loss(yva, pred))
    if method in ("koyejo2", "parambath"):
        assert 0 < result.theta < 1


def test_koyejo1_threshold_is_validation_optimal_for_erm_scores():
    split = _split(1)
    _, _, Xva, yva = split
    spec = f_beta(0.5)
    k1 = _fit("koyejo1", split, spec=spec)
    erm = _fit("erm", split, spec=spec, validation=False)
    scores = predict_scores(erm.model, Xva)[:, 0]
    best = min(spec.loss(yva, (scores >= t).astype(int)) for t in np.r_[np.unique(scores), np.inf])
    assert k1.validation_loss == pytest.approx(best)
    assert spec.loss(yva, k1.predict(Xva)) <= spec.loss(yva, erm.predict(Xva)) + 1e-12


def test_parambath_is_at_least_as_good_as_koyejo2_on_validation():
    split = _split(2)
    k2 = _fit("koyejo2", split)
    pb = _fit("parambath", split)
    assert pb.validation_loss <= k2.validation_loss + 1e-12


def test_refit_keeps_theta_and_threshold():
    split = _split(3)
    Xtr, ytr, Xva, yva = split
    X_all, y_all = np.concatenate([Xtr, Xva]), np.concatenate([ytr, yva])
    plain = _fit("parambath", split)
    refit = _fit("parambath", split, X_refit=X_all, y_refit=y_all)
    assert refit.theta == plain.theta and refit.threshold == plain.threshold
    assert refit.details["refit"] is True
    assert not np.allclose(predict_scores(refit.model, Xva), predict_scores(plain.model, Xva))


def test_baseline_errors():
    split = _split()
    with pytest.raises(ValueError, match="unknown baseline 'svm'"):
        _fit("svm", split, validation=False)
    with pytest.raises(ValueError, match="needs a validation split"):
        _fit("koyejo1", split, validation=False)


@pytest.mark.parametrize("method", ["erm", "koyejo2"])
def test_a_blown_up_baseline_fit_is_an_error_not_a_model(method):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=300) > 0.5).astype(np.int64)
    with pytest.raises(ValueError, match=f"{method} diverged.*Lower training.lr"):
        fit_baseline(
            method, spec=f1(), X_train=X[:200], y_train=y[:200], X_validation=X[200:],
            y_validation=y[200:], model=ModelSpec("mlp", hidden=(8,)),
            config=TrainingConfig(device="cpu", epochs=3, batch_size=16, lr=1e4),
        )  # fmt: skip
