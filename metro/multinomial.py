"""The multinomial model of a multi-class fit (``multiclass="multinomial"``; see
:mod:`metro.multiclass`): one multinomial logistic regression whose C logits are the class
scores, as one linear :class:`~metro.models.StackedModel` saved and served like any other."""

from __future__ import annotations

import numpy as np
import torch

from metro.models import ModelSpec, StackedModel, build_model

__all__ = ["ABSENT_LOGIT", "multinomial_model"]


def multinomial_model(X: np.ndarray, y_idx: np.ndarray, n_classes: int) -> StackedModel:
    """A linear :class:`~metro.models.StackedModel` of ``n_classes`` outputs whose scores are
    the logits of a multinomial logistic regression fitted on ``(X, y_idx)`` (class indices):
    scikit-learn's ``LogisticRegression(max_iter=1000)`` (C=1, lbfgs) on X standardized by the
    model's own statistics (:func:`~metro.models.build_model`'s ``X_stats``: population std, a
    constant feature 1, as ``StandardScaler``), so that the model scores raw rows exactly as the
    regression does. A class absent from ``y_idx`` (a fold's training part) gets weights 0 and a
    logit ``ABSENT_LOGIT`` below the others' bias. Two classes: logits ``(0, z)``, the binary
    regression's log-odds z (the log-softmax is the log-probabilities either way)."""
    from sklearn.linear_model import LogisticRegression

    flat = np.asarray(X).reshape(X.shape[0], -1)
    model = build_model(
        ModelSpec("linear"), input_shape=tuple(X.shape[1:]), n_models=n_classes, X_stats=X
    )
    mean = model.mean.double().numpy()
    std = model.std.double().numpy()
    z = (flat.astype(np.float64) - mean) / std
    present = np.unique(y_idx)
    weight = np.zeros((flat.shape[1], n_classes))
    bias = np.zeros(n_classes)
    if present.size >= 2:
        regression = LogisticRegression(max_iter=1000).fit(z, y_idx)
        coef, intercept = regression.coef_, regression.intercept_
        if present.size == 2:  # one row of log-odds for the second class
            coef = np.vstack([np.zeros_like(coef[0]), coef[0]])
            intercept = np.array([0.0, intercept[0]])
        weight[:, present] = coef.T
        bias[present] = intercept
    absent = np.setdiff1d(np.arange(n_classes), present)
    if absent.size:
        bias[absent] = (bias[present].min() if present.size else 0.0) + ABSENT_LOGIT
    with torch.no_grad():
        for name, value in (("weight", weight), ("bias", bias)):
            param = model.get_parameter(name)
            param.copy_(torch.as_tensor(value, dtype=param.dtype))
    return model.eval()


# A class a fold's training part lacks: far below every class the regression saw (its
# log-probability about e^-30, the floor TunedArgmaxLogistic gives it).
ABSENT_LOGIT = -30.0
