"""Row masks: model k of a stack trains on its own rows and on no other (how the folds of a
cross-validated grid train as one stack)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from metro.models import ModelSpec
from metro.trainer import TrainingConfig, fit_cost_sensitive
from metro.trainer.checkpoints import check_checkpoint

MLP = ModelSpec("mlp", hidden=(8,))
CNN = ModelSpec("cnn3", channels=(3, 4, 4))
CONFIG = TrainingConfig(device="cpu", epochs=4, batch_size=32, seed=3)
COSTS = np.stack([np.array([[0.0, 1.0], [1.0, 0.0]]), np.array([[0.0, 2.0], [0.5, 0.0]])])


def _data(n: int = 120, d: int = 5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(np.int64)
    return X, y


def _fit(X: np.ndarray, y: np.ndarray, mask: np.ndarray | None, **kw: object) -> object:
    return fit_cost_sensitive(
        X, y, COSTS, model=MLP, surrogate="logistic", config=CONFIG, row_mask=mask, **kw
    )


def _mask(n: int) -> np.ndarray:
    mask = np.ones((n, 2), dtype=bool)
    mask[: n // 3, 0] = False  # model 0 never sees the first third
    mask[n // 2 :, 1] = False  # model 1 only sees the first half
    return mask


def test_a_model_is_untouched_by_the_labels_of_rows_outside_its_mask() -> None:
    X, y = _data()
    mask = _mask(len(y))
    base = _fit(X, y, mask)
    flipped = y.copy()
    flipped[: len(y) // 3] = 1 - flipped[: len(y) // 3]  # rows model 0 must not see
    other = _fit(X, flipped, mask)
    for name, t in base.model.tensors().items():  # type: ignore[attr-defined]
        t2 = other.model.tensors()[name]  # type: ignore[attr-defined]
        if name in ("mean", "std"):
            continue
        # model 0 (index 0 of the stack) is the same to the bit; model 1 saw the flipped rows
        assert torch.equal(t[0], t2[0]), name
    assert base.surrogate_loss[0] == other.surrogate_loss[0]  # type: ignore[attr-defined]
    assert base.surrogate_loss[1] != other.surrogate_loss[1]  # type: ignore[attr-defined]


def test_a_mask_of_every_row_trains_like_no_mask() -> None:
    X, y = _data()
    plain = _fit(X, y, None)
    full = _fit(X, y, np.ones((len(y), 2), dtype=bool))
    np.testing.assert_allclose(full.surrogate_loss, plain.surrogate_loss, rtol=1e-5)  # type: ignore[attr-defined]
    for name, t in plain.model.tensors().items():  # type: ignore[attr-defined]
        torch.testing.assert_close(full.model.tensors()[name], t, rtol=1e-5, atol=1e-6)  # type: ignore[attr-defined]


def test_the_reported_loss_is_the_mean_over_a_models_own_rows() -> None:
    X, y = _data()
    mask = _mask(len(y))
    fit = _fit(X, y, mask)
    from metro.surrogates import get_surrogate
    from metro.trainer import predict_scores

    scores = predict_scores(fit.model, X)  # type: ignore[attr-defined]
    logistic = get_surrogate("logistic")
    for k in range(2):
        rows = mask[:, k]
        cost = torch.from_numpy(COSTS[k]).float()  # [pred, true]
        yt = torch.from_numpy(y[rows])
        h = torch.from_numpy(scores[rows, k])
        from metro.surrogates import cost_sensitive_loss

        expected = cost_sensitive_loss(logistic, h, cost[1, yt], cost[0, yt]).mean()
        assert fit.surrogate_loss[k] == pytest.approx(float(expected), rel=1e-4)  # type: ignore[attr-defined]


def test_a_masked_checkpoint_resumes_only_with_the_same_mask() -> None:
    X, y = _data()
    mask = _mask(len(y))
    events: list[dict[str, object]] = []
    whole = _fit(
        X,
        y,
        mask,
        checkpoint_every=2,
        callback=lambda e: events.append(e.checkpoint) if e.checkpoint else None,
    )
    assert events
    resumed = _fit(X, y, mask, resume_from=events[0])
    np.testing.assert_array_equal(resumed.surrogate_loss, whole.surrogate_loss)  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="row masks differ"):
        _fit(X, y, ~mask | (np.arange(len(y)) == 0)[:, None], resume_from=events[0])
    with pytest.raises(ValueError, match="row masks differ"):
        _fit(X, y, None, resume_from=events[0])
    assert callable(check_checkpoint)


@pytest.mark.parametrize(
    ("mask", "message"),
    [
        (np.ones((120, 3), dtype=bool), r"shape \[n, K\] = \[120, 2\]"),
        (np.ones((120, 2)), "booleans"),
        (np.c_[np.zeros(120, dtype=bool), np.ones(120, dtype=bool)], r"model\(s\) \[0\] no rows"),
    ],
)
def test_bad_masks_are_refused(mask: np.ndarray, message: str) -> None:
    X, y = _data()
    with pytest.raises(ValueError, match=message):
        _fit(X, y, mask)


def test_row_masks_need_sgd() -> None:
    X, y = _data()
    with pytest.raises(ValueError, match="row_mask needs the SGD optimizer"):
        fit_cost_sensitive(
            X, y, COSTS, model=ModelSpec("linear"), surrogate="logistic",
            config=TrainingConfig(device="cpu"), row_mask=np.ones((len(y), 2), dtype=bool),
        )  # fmt: skip


def test_images_with_augmentation_take_a_mask() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(48, 2, 8, 8)).astype(np.float32)
    y = (X[:, 0, :4].mean(axis=(1, 2)) > 0).astype(np.int64)
    mask = np.ones((48, 2), dtype=bool)
    mask[:20, 1] = False
    config = TrainingConfig(device="cpu", epochs=2, batch_size=16, augment=True)
    base = fit_cost_sensitive(
        X, y, COSTS, model=CNN, surrogate="logistic", config=config, row_mask=mask
    )
    y2 = y.copy()
    y2[:20] = 1 - y2[:20]
    other = fit_cost_sensitive(
        X, y2, COSTS, model=CNN, surrogate="logistic", config=config, row_mask=mask
    )
    for name, t in base.model.tensors().items():
        if name not in ("mean", "std"):
            assert torch.equal(t[1], other.model.tensors()[name][1]), name
