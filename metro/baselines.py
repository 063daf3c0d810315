"""The methods METRO is compared with, trained by the same trainer on the same data.

* ``erm``: logistic regression (unweighted), threshold 0.
* ``koyejo1``: Koyejo et al. (2014), Alg. 1 — ERM, then the threshold that maximizes the metric on
  the validation part.
* ``koyejo2``: Koyejo et al. (2014), Alg. 2 — theta-weighted logistic losses over a grid of theta
  (cost theta for a false positive, 1 - theta for a false negative), theta chosen on validation.
* ``parambath``: Parambath et al. (2014) — the same theta grid plus a threshold theta' per theta,
  the pair chosen on validation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from metro.constraints import Constraint, asks_confidence
from metro.device import resolve_device
from metro.metrics import MetricSpec, confusion_fractions
from metro.models import ModelSpec, StackedModel
from metro.surrogates import get_surrogate
from metro.thresholds import best_constrained_threshold, best_threshold
from metro.trainer import (
    DIVERGENCE_RULE,
    FitResult,
    TrainingConfig,
    fit_cost_sensitive,
    predict_scores,
)

__all__ = [
    "BASELINES",
    "N_THETAS",
    "BaselineResult",
    "baseline_models",
    "fit_baseline",
    "theta_cost_tables",
]

BASELINES: tuple[str, ...] = ("erm", "koyejo1", "koyejo2", "parambath")
# The theta grid of koyejo2 and parambath (fit_baseline's default).
N_THETAS = 19


def baseline_models(method: str, *, refit: bool, n_thetas: int = N_THETAS) -> int:
    """How many models :func:`fit_baseline` trains for ``method``: one logistic model (erm,
    koyejo1) or one per theta (koyejo2, parambath), plus the refit of the chosen one."""
    if method not in BASELINES:
        raise ValueError(f"unknown baseline {method!r}; expected one of {', '.join(BASELINES)}")
    return (1 if method in ("erm", "koyejo1") else n_thetas) + (1 if refit else 0)


@dataclass
class BaselineResult:
    method: str
    model: StackedModel
    threshold: float = 0.0
    theta: float | None = None
    validation_loss: float | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def predict(self, X: np.ndarray, *, device: str = "cpu") -> np.ndarray:
        """Predictions in {0, 1}: positive when the score reaches the threshold."""
        scores = predict_scores(self.model, X, device=device)[:, 0]
        return (scores >= self.threshold).astype(np.int64)


def theta_cost_tables(thetas: np.ndarray) -> np.ndarray:
    """Cost tables [K, pred, true]: theta for a false positive, 1 - theta for a false negative."""
    thetas = np.asarray(thetas, dtype=np.float64)
    if thetas.ndim != 1 or np.any((thetas <= 0) | (thetas >= 1)):
        raise ValueError("thetas must be a 1-D array of values strictly between 0 and 1")
    costs = np.zeros((thetas.size, 2, 2))
    costs[:, 1, 0] = thetas
    costs[:, 0, 1] = 1.0 - thetas
    return costs


def fit_baseline(
    method: str,
    *,
    spec: MetricSpec,
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_validation: np.ndarray | None,
    y_validation: np.ndarray | None,
    model: ModelSpec,
    config: TrainingConfig,
    n_thetas: int = N_THETAS,
    X_refit: np.ndarray | None = None,
    y_refit: np.ndarray | None = None,
    constraints: Sequence[Constraint] = (),
) -> BaselineResult:
    """Fit one baseline. ``X_refit``/``y_refit`` (typically train + validation) give it the same
    data budget as METRO's refit: the chosen theta is retrained there (warm-started where
    ``config.warm_start`` says so, as METRO's refit is) and the chosen threshold kept.

    With ``constraints`` the validation choices are made under them: koyejo1's threshold and
    parambath's (theta, threshold) are the best metric among those whose constraints hold on
    validation (when none does, the nearest miss, or the likeliest to hold where a constraint
    asks for a confidence), koyejo2's theta likewise at threshold 0;
    ERM has nothing to choose. This is threshold tuning under a constraint, what users do today.
    """
    result = _fit_baseline(
        method,
        spec=spec,
        X_train=X_train,
        y_train=y_train,
        X_validation=X_validation,
        y_validation=y_validation,
        model=model,
        config=config,
        n_thetas=n_thetas,
        constraints=tuple(constraints),
    )
    if X_refit is None or y_refit is None:
        return result
    theta = 0.5 if result.theta is None else result.theta
    refit = fit_cost_sensitive(
        X_refit, y_refit, theta_cost_tables(np.array([theta])),
        model=result.model if config.warm_start else model,
        surrogate=get_surrogate("logistic"), config=config,
    )  # fmt: skip
    _check_fit(refit, f"{method}'s refit")
    result.model = refit.model
    result.details["refit"] = True
    return result


def _fit_baseline(
    method: str,
    *,
    spec: MetricSpec,
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_validation: np.ndarray | None,
    y_validation: np.ndarray | None,
    model: ModelSpec,
    config: TrainingConfig,
    n_thetas: int,
    constraints: tuple[Constraint, ...] = (),
) -> BaselineResult:
    if method not in BASELINES:
        raise ValueError(f"unknown baseline {method!r}; expected one of {', '.join(BASELINES)}")
    needs_validation = method != "erm"
    missing = X_validation is None or y_validation is None or len(y_validation) == 0
    if needs_validation and missing:
        raise ValueError(f"baseline {method!r} needs a validation split to choose its parameters")
    if not isinstance(n_thetas, int) or n_thetas < 1:
        raise ValueError("n_thetas must be a positive integer")
    logistic = get_surrogate("logistic")
    device = str(resolve_device(config.device))

    if method in ("erm", "koyejo1"):
        fit = fit_cost_sensitive(
            X_train,
            y_train,
            theta_cost_tables(np.array([0.5])),
            model=model,
            surrogate=logistic,
            config=config,
        )
        _check_fit(fit, method)
        if method == "erm":
            return BaselineResult(method=method, model=fit.model)
        assert X_validation is not None and y_validation is not None
        scores = predict_scores(fit.model, X_validation, device=device)[:, 0]
        threshold, loss, _ = _choose(spec, constraints, scores, y_validation, tune=True)
        return BaselineResult(
            method=method, model=fit.model, threshold=threshold, validation_loss=loss
        )

    assert X_validation is not None and y_validation is not None
    thetas = np.linspace(0.0, 1.0, n_thetas + 2)[1:-1]
    fit = fit_cost_sensitive(
        X_train,
        y_train,
        theta_cost_tables(thetas),
        model=model,
        surrogate=logistic,
        config=config,
    )
    scores = predict_scores(fit.model, X_validation, device=device)
    per_theta = []
    for k in range(thetas.size):
        if fit.diverged[k]:
            continue
        threshold, loss, rank = _choose(
            spec, constraints, scores[:, k], y_validation, tune=method != "koyejo2"
        )
        per_theta.append((rank, k, threshold, loss))
    if not per_theta:
        _check_fit(fit, method)
    _, k, threshold, loss = min(per_theta)
    return BaselineResult(
        method=method,
        model=fit.model.select([k]),
        threshold=threshold,
        theta=float(thetas[k]),
        validation_loss=float(loss),
        details={"thetas": thetas.tolist(), "validation_losses": [p[3] for p in per_theta]},
    )


def _choose(
    spec: MetricSpec,
    constraints: tuple[Constraint, ...],
    scores: np.ndarray,
    y: np.ndarray,
    *,
    tune: bool,
) -> tuple[float, float, tuple[int, float, float, float]]:
    """(threshold, loss, rank) on validation: the best threshold (``tune``) or 0, under the
    constraints when there are some; ``rank`` orders choices as the constrained search does
    (:attr:`metro.thresholds.ConstrainedThreshold.rank`: feasible ones by loss, then the nearest
    miss, or the likeliest to hold where a constraint asks for a confidence)."""
    if not tune:
        from metro.search.constrained import judge_at_zero

        cells = confusion_fractions(y, (scores >= 0).astype(np.int64))
        choice = judge_at_zero(
            spec, constraints, cells, len(y), by_certainty=asks_confidence(constraints)
        )
        return 0.0, choice.loss, choice.rank
    if constraints:
        choice = best_constrained_threshold(spec, constraints, scores, y)
        return choice.threshold, choice.loss, choice.rank
    threshold, loss = best_threshold(spec, scores, y)
    return threshold, loss, (0, loss, 0.0, 0.0)


def _check_fit(fit: FitResult, what: str) -> None:
    if fit.diverged.any():
        raise ValueError(f"{what} diverged: {DIVERGENCE_RULE}. Lower training.lr")
