"""Stacked hypothesis sets: specs, shapes, identical initialization, standardization, copies."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import metro.models as models_module
from metro.models import (
    CONV_STACKINGS,
    MODEL_KINDS,
    ModelSpec,
    StackedModel,
    build_model,
    get_model_spec,
)

SPECS = {
    "linear": ModelSpec("linear"),
    "mlp": ModelSpec("mlp", hidden=(6, 5)),
    "cnn3": ModelSpec("cnn3", channels=(3, 4, 5)),
}
SHAPES = {"linear": (3, 2), "mlp": (7,), "cnn3": (2, 8, 6)}


def _data(kind: str, n: int = 9, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, *SHAPES[kind], generator=g) * 3 + 1


def _randomize(model: StackedModel, seed: int = 1) -> StackedModel:
    """Distinct random parameters per model (a fresh stack's models are identical)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.5)
    return model


# -- specs --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"kind": "resnet"}, "kind"),
        ({"kind": 3}, "kind"),
        ({"kind": "mlp", "hidden": ()}, "hidden"),
        ({"kind": "mlp", "hidden": (8, 0)}, "hidden"),
        ({"kind": "mlp", "hidden": (8, -2)}, "hidden"),
        ({"kind": "mlp", "hidden": (True,)}, "hidden"),
        ({"kind": "mlp", "hidden": (2.5,)}, "hidden"),
        ({"kind": "mlp", "hidden": "64"}, "hidden"),
        ({"kind": "cnn3", "channels": (8, 8)}, "channels"),
        ({"kind": "cnn3", "channels": (8, 0, 8)}, "channels"),
    ],
)
def test_spec_validation_names_the_field(kwargs: dict, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        ModelSpec(**kwargs)


def test_spec_normalizes_sizes_and_round_trips() -> None:
    spec = ModelSpec("mlp", hidden=[16, np.int64(8)])  # type: ignore[arg-type]
    assert spec.hidden == (16, 8) and isinstance(spec.hidden, tuple)
    for s in [*SPECS.values(), spec]:
        assert ModelSpec.from_dict(s.to_dict()) == s
    assert ModelSpec.from_dict({"kind": "mlp"}) == ModelSpec("mlp")
    with pytest.raises(ValueError, match="unknown model spec field"):
        ModelSpec.from_dict({"kind": "mlp", "depth": 3})
    with pytest.raises(ValueError, match="mapping"):
        ModelSpec.from_dict(["mlp"])  # type: ignore[arg-type]


def test_get_model_spec() -> None:
    assert get_model_spec("MLP", hidden=(4,)) == ModelSpec("mlp", hidden=(4,))
    assert get_model_spec(SPECS["cnn3"]) is SPECS["cnn3"]
    with pytest.raises(ValueError, match="only be given with a model kind name"):
        get_model_spec(SPECS["mlp"], hidden=(3,))
    with pytest.raises(ValueError, match="takes no parameter"):
        get_model_spec("mlp", width=3)
    with pytest.raises(ValueError, match="kind name or a ModelSpec"):
        get_model_spec(3)  # type: ignore[arg-type]
    # A size the kind does not have was dropped: the default mlp, trained without a word.
    with pytest.raises(ValueError, match="'mlp' models have no 'channels'"):
        get_model_spec("mlp", channels=(1, 2, 3))
    with pytest.raises(ValueError, match="'linear' models have no 'hidden'"):
        get_model_spec("linear", hidden=(3,))
    # A spec stored with every kind's sizes (as jobs once were) is still read.
    assert ModelSpec.from_dict({"kind": "linear", "hidden": (3,)}).kind == "linear"


def test_check_input() -> None:
    ModelSpec("linear").check_input((3, 32, 32))
    ModelSpec("mlp").check_input((5,))
    ModelSpec("cnn3").check_input((3, 4, 4))
    with pytest.raises(ValueError, match=r"\(C, H, W\)"):
        ModelSpec("cnn3").check_input((3, 32))
    with pytest.raises(ValueError, match="at least 4x4"):
        ModelSpec("cnn3").check_input((3, 3, 32))
    with pytest.raises(ValueError, match="input_shape"):
        ModelSpec("linear").check_input(())
    with pytest.raises(ValueError, match="input_shape"):
        ModelSpec("linear").check_input((0, 2))


# -- construction and evaluation ----------------------------------------------------------------
@pytest.mark.parametrize("kind", MODEL_KINDS)
def test_forward_shape_and_layouts(kind: str) -> None:
    model = build_model(SPECS[kind], input_shape=SHAPES[kind], n_models=4, seed=3)
    x = _data(kind, n=9)
    out = model(x)
    assert out.shape == (9, 4) and out.dtype == torch.float32
    for name, shape in model.per_model_shapes().items():
        assert tuple(model.unstack(name, getattr(model, name)).shape) == (4, *shape)
    if kind == "linear":
        assert model.weight.shape == (6, 4) and model.bias.shape == (4,)
        assert torch.count_nonzero(model.weight) == 0  # linear models start at zero
    with pytest.raises(ValueError, match="inputs must have shape"):
        model(torch.zeros(9, 5))


@pytest.mark.parametrize("kind", ["mlp", "cnn3"])
def test_every_model_of_a_stack_starts_like_a_single_model(kind: str) -> None:
    stack = build_model(SPECS[kind], input_shape=SHAPES[kind], n_models=3, seed=11)
    single = build_model(SPECS[kind], input_shape=SHAPES[kind], n_models=1, seed=11)
    other = build_model(SPECS[kind], input_shape=SHAPES[kind], n_models=1, seed=12)
    for k in range(3):
        for name, t in stack.select([k]).tensors().items():
            assert torch.equal(t, single.tensors()[name]), name
    x = _data(kind)
    out = stack(x)
    torch.testing.assert_close(out, single(x).expand(-1, 3), rtol=1e-5, atol=1e-6)
    assert not torch.allclose(other(x), single(x))
    # The seed is used through a private generator: the global RNG is untouched.
    state = torch.random.get_rng_state()
    build_model(SPECS[kind], input_shape=SHAPES[kind], n_models=2, seed=5)
    assert torch.equal(state, torch.random.get_rng_state())


def test_cnn_stacking_strategies_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    model = _randomize(build_model(SPECS["cnn3"], input_shape=SHAPES["cnn3"], n_models=3))
    x = _data("cnn3")
    monkeypatch.setitem(models_module._CNN_STACKING, "cpu", "loop")
    looped = model(x)
    monkeypatch.setitem(models_module._CNN_STACKING, "cpu", "grouped")
    grouped = model(x)
    torch.testing.assert_close(grouped, looped, rtol=1e-4, atol=1e-5)
    # Every per-layer stacking computes the same function, in either memory layout, and the
    # same gradients.
    combos = [f"{a}/{b}" for a in CONV_STACKINGS for b in CONV_STACKINGS]
    for how in combos:
        monkeypatch.setitem(models_module._CNN_STACKING, "cpu", how)
        for layout in (torch.contiguous_format, torch.channels_last):
            torch.testing.assert_close(
                model(x.contiguous(memory_format=layout)), looped, rtol=1e-4, atol=1e-5, msg=how
            )
    grads = {}
    for how in ("loop", *combos):
        monkeypatch.setitem(models_module._CNN_STACKING, "cpu", how)
        model.zero_grad()
        model(x).square().sum().backward()
        grads[how] = {name: p.grad.clone() for name, p in model.named_parameters()}
    for how in combos:
        for name, g in grads["loop"].items():
            torch.testing.assert_close(grads[how][name], g, rtol=1e-4, atol=1e-5, msg=how + name)
    monkeypatch.setitem(models_module._CNN_STACKING, "cpu", "gemm/nonsense")
    with pytest.raises(ValueError, match="unknown cnn3 stacking"):
        model(x)
    # Model k of the loop is exactly model k evaluated alone.
    monkeypatch.setitem(models_module._CNN_STACKING, "cpu", "loop")
    assert torch.equal(model.select([1])(x)[:, 0], looped[:, 1])


@pytest.mark.parametrize(("side", "expected"), [(8, "grouped"), (16, "grouped"), (32, "loop")])
def test_cpu_stacks_small_images_with_grouped_convolutions(
    monkeypatch: pytest.MonkeyPatch, side: int, expected: str
) -> None:
    # By default the CPU chooses by image size (measured: grouped is 1.2-2.7x faster up to 16x16,
    # the loop up to 1.7x faster at 32x32 with wider channels).
    calls: list[str] = []
    model = build_model(SPECS["cnn3"], input_shape=(SHAPES["cnn3"][0], side, side), n_models=2)
    for name in ("_cnn_loop", "_cnn_stacked"):
        original = getattr(model, name)
        monkeypatch.setattr(
            model,
            name,
            lambda z, *how, name=name, original=original: (
                calls.append((name, *how)) or original(z, *how)
            ),
        )
    model(torch.zeros(2, SHAPES["cnn3"][0], side, side))
    assert calls == [("_cnn_loop",) if expected == "loop" else ("_cnn_stacked", (expected,) * 2)]


def test_mlp_matches_a_plain_per_model_computation() -> None:
    model = _randomize(build_model(SPECS["mlp"], input_shape=(7,), n_models=2))
    x = _data("mlp")
    z = (x - model.mean) / model.std
    for k in range(2):
        a = torch.relu(z @ model.hidden0_weight[k] + model.hidden0_bias[k])
        a = torch.relu(a @ model.hidden1_weight[k] + model.hidden1_bias[k])
        expected = a @ model.out_weight[k] + model.out_bias[k]
        torch.testing.assert_close(model(x)[:, k], expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_models": 0}, "n_models"),
        ({"n_models": 2.0}, "n_models"),
        ({"seed": -1}, "seed"),
        ({"X_stats": np.zeros((4, 5))}, "X_stats"),
        ({"X_stats": np.zeros((0, 3, 2))}, "X_stats"),
        ({"X_stats": np.full((4, 3, 2), np.nan)}, "finite"),
        ({"input_shape": (3, -2)}, "input_shape"),
    ],
)
def test_build_model_validation(kwargs: dict, message: str) -> None:
    args = {"input_shape": (3, 2), "n_models": 2, **kwargs}
    with pytest.raises(ValueError, match=message):
        build_model(ModelSpec("linear"), **args)
    with pytest.raises(ValueError, match="ModelSpec"):
        build_model("linear", input_shape=(3,), n_models=1)  # type: ignore[arg-type]


# -- standardization ----------------------------------------------------------------------------
def test_standardization_statistics() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 4)) * [1.0, 10.0, 0.01, 1.0] + [0.0, 5.0, -3.0, 0.0]
    X[:, 3] = 0.1  # a constant float column: std must be exactly 1, not round-off
    model = build_model(ModelSpec("mlp"), input_shape=(4,), n_models=1, X_stats=X)
    np.testing.assert_allclose(model.mean.numpy(), X.mean(0), rtol=1e-6, atol=1e-7)
    expected_std = X.std(0)
    expected_std[3] = 1.0
    np.testing.assert_allclose(model.std.numpy(), expected_std, rtol=1e-6)

    images = rng.normal(size=(6, 3, 5, 4)) * np.array([1.0, 2.0, 3.0])[:, None, None] + 7.0
    cnn = build_model(ModelSpec("cnn3"), input_shape=(3, 5, 4), n_models=2, X_stats=images)
    per_channel = images.transpose(1, 0, 2, 3).reshape(3, -1)
    assert cnn.mean.shape == (3,)
    np.testing.assert_allclose(cnn.mean.numpy(), per_channel.mean(1), rtol=1e-6)
    np.testing.assert_allclose(cnn.std.numpy(), per_channel.std(1), rtol=1e-6)


def test_statistics_are_chunked_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    X = torch.randn(37, 3, 4, 4, generator=torch.Generator().manual_seed(0)) + 2
    whole = build_model(ModelSpec("cnn3"), input_shape=(3, 4, 4), n_models=1, X_stats=X)
    monkeypatch.setattr(models_module, "_STATS_CHUNK_ROWS", 5)
    chunked = build_model(ModelSpec("cnn3"), input_shape=(3, 4, 4), n_models=1, X_stats=X)
    torch.testing.assert_close(chunked.mean, whole.mean)
    torch.testing.assert_close(chunked.std, whole.std)


@pytest.mark.parametrize("kind", MODEL_KINDS)
def test_standardization_is_inside_the_model(kind: str) -> None:
    """A model built on a shifted/scaled copy of the data, with the same weights, scores the
    shifted/scaled inputs exactly as the original scores the originals."""
    x = _data(kind, n=12).numpy()
    scale, shift = 4.0, -3.0
    a = _randomize(build_model(SPECS[kind], input_shape=SHAPES[kind], n_models=2, X_stats=x))
    b = build_model(SPECS[kind], input_shape=SHAPES[kind], n_models=2, X_stats=x * scale + shift)
    with torch.no_grad():
        for name, p in a.named_parameters():
            getattr(b, name).copy_(p)
    torch.testing.assert_close(
        b(torch.from_numpy(x * scale + shift)), a(torch.from_numpy(x)), rtol=1e-4, atol=1e-4
    )


# -- copies and serialization -------------------------------------------------------------------
@pytest.mark.parametrize("kind", MODEL_KINDS)
def test_tensors_round_trip(kind: str) -> None:
    x = _data(kind)
    model = _randomize(build_model(SPECS[kind], input_shape=SHAPES[kind], n_models=3, X_stats=x))
    tensors = model.tensors()
    assert {"mean", "std"} <= set(tensors)
    assert all(t.device.type == "cpu" and t.is_contiguous() for t in tensors.values())
    rebuilt = StackedModel.from_tensors(model.spec.to_dict(), SHAPES[kind], tensors)
    assert rebuilt.n_models == 3 and rebuilt.spec == model.spec
    assert torch.equal(rebuilt(x), model(x))
    # A copy: changing the saved tensors does not touch the model.
    tensors["mean"] += 1
    assert not torch.equal(tensors["mean"], model.mean)


def test_safetensors_round_trip(tmp_path) -> None:
    from safetensors.torch import load_file, save_file

    model = _randomize(build_model(SPECS["cnn3"], input_shape=SHAPES["cnn3"], n_models=2))
    save_file(model.tensors(), str(tmp_path / "m.safetensors"))
    rebuilt = StackedModel.from_tensors(
        SPECS["cnn3"], SHAPES["cnn3"], load_file(str(tmp_path / "m.safetensors"))
    )
    x = _data("cnn3")
    assert torch.equal(rebuilt(x), model(x))


def test_from_tensors_validation() -> None:
    model = build_model(SPECS["mlp"], input_shape=(7,), n_models=2)
    tensors = model.tensors()
    with pytest.raises(ValueError, match="missing"):
        StackedModel.from_tensors(
            SPECS["mlp"], (7,), {k: v for k, v in tensors.items() if k != "std"}
        )
    with pytest.raises(ValueError, match="unexpected"):
        StackedModel.from_tensors(SPECS["mlp"], (7,), {**tensors, "extra": torch.zeros(1)})
    with pytest.raises(ValueError, match="shape"):
        StackedModel.from_tensors(SPECS["mlp"], (8,), tensors)
    with pytest.raises(ValueError, match="floating point"):
        StackedModel.from_tensors(
            SPECS["mlp"], (7,), {**tensors, "mean": torch.zeros(7, dtype=torch.int64)}
        )
    with pytest.raises(ValueError, match=r"does not match|missing"):
        StackedModel.from_tensors(SPECS["linear"], (7,), tensors)


@pytest.mark.parametrize("kind", MODEL_KINDS)
def test_select(kind: str) -> None:
    x = _data(kind)
    model = _randomize(build_model(SPECS[kind], input_shape=SHAPES[kind], n_models=4, X_stats=x))
    out = model(x)
    picked = model.select([2, 0, 2])
    assert picked.n_models == 3
    torch.testing.assert_close(picked(x), out[:, [2, 0, 2]], rtol=1e-5, atol=1e-6)
    assert torch.equal(model.select([-1])(x), model.select([3])(x))
    # A copy: training the selection leaves the original alone.
    with torch.no_grad():
        for p in picked.parameters():
            p.add_(1.0)
    assert torch.equal(model(x), out)
    with pytest.raises(ValueError, match="out of range"):
        model.select([4])
    with pytest.raises(ValueError, match="at least one"):
        model.select([])
    with pytest.raises(ValueError, match="integers"):
        model.select([0.5])  # type: ignore[list-item]


@pytest.mark.parametrize("kind", MODEL_KINDS)
def test_shifted_moves_every_score_and_leaves_the_original(kind: str) -> None:
    model = build_model(SPECS[kind], input_shape=SHAPES[kind], n_models=3, seed=1)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_()
    x = _data(kind, n=7)
    before = model(x).detach().clone()
    moved = model.shifted(-0.75)
    torch.testing.assert_close(moved(x), before - 0.75)
    torch.testing.assert_close(model(x), before)
    rebuilt = StackedModel.from_tensors(SPECS[kind], SHAPES[kind], moved.tensors())
    torch.testing.assert_close(rebuilt(x), before - 0.75)
    with pytest.raises(ValueError, match="offset must be finite"):
        model.shifted(float("nan"))


@pytest.mark.gpu
@pytest.mark.parametrize("amp", [False, True])
def test_cuda_stackings_agree(monkeypatch: pytest.MonkeyPatch, amp: bool) -> None:
    # On CUDA the stackings compute the same scores and gradients up to the precision they run
    # in (cuDNN convolutions use TF32, autocast bf16; the Triton kernels IEEE fp32 or bf16).
    spec = ModelSpec("cnn3", channels=(8, 16, 32))
    model = _randomize(build_model(spec, input_shape=(3, 32, 32), n_models=3)).cuda()
    x = torch.randn(64, 3, 32, 32, generator=torch.Generator().manual_seed(3)).cuda()
    x = x.contiguous(memory_format=torch.channels_last)
    results = {}
    stackings = ("loop", "grouped", "gemm", "split", "gemm/grouped", "grouped/gemm", "triton")
    for how in (*stackings, "triton/split", "grouped/split", "triton-conv"):
        monkeypatch.setitem(models_module._CNN_STACKING, "cuda", how)
        model.zero_grad()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            scores = model(x).float()
        scores.square().sum().backward()
        grads = torch.cat([p.grad.flatten() for p in model.parameters()])
        results[how] = (scores.detach(), grads)
    tolerance = 5e-2 if amp else 1e-2
    for how in set(results) - {"loop"}:
        for got, want in zip(results[how], results["loop"], strict=True):
            assert torch.isfinite(got).all()
            assert (got - want).norm() / want.norm() < tolerance, how


@pytest.mark.parametrize("how", ["loop", "grouped", "gemm", "split/grouped", "triton"])
def test_cnn3_is_the_textbook_network(monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    # Every stacking pools before its ReLU; the network is still conv -> ReLU -> max-pool (twice),
    # conv -> ReLU, global average pool, linear head: same scores, same gradients.
    monkeypatch.setitem(models_module._CNN_STACKING, "cpu", how)
    model = _randomize(build_model(SPECS["cnn3"], input_shape=SHAPES["cnn3"], n_models=2))
    x = _data("cnn3")
    model(x).sum().backward()
    for k in range(2):
        w = {name: p.detach()[k].clone().requires_grad_() for name, p in model.named_parameters()}
        a = model.standardize(x)
        for layer in (1, 2, 3):
            a = F.relu(F.conv2d(a, w[f"conv{layer}_weight"], w[f"conv{layer}_bias"], padding=1))
            if layer < 3:
                a = F.max_pool2d(a, 2)
        expected = a.mean(dim=(2, 3)) @ w["head_weight"] + w["head_bias"]
        torch.testing.assert_close(model(x)[:, k], expected, rtol=1e-5, atol=1e-6)
        expected.sum().backward()
        for name, p in model.named_parameters():
            torch.testing.assert_close(p.grad[k], w[name].grad, rtol=1e-4, atol=1e-6, msg=name)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (ModelSpec("linear"), {"kind": "linear"}),
        (ModelSpec("mlp", hidden=(8, 4)), {"kind": "mlp", "hidden": [8, 4]}),
        (ModelSpec("cnn3", channels=(4, 8, 16)), {"kind": "cnn3", "channels": [4, 8, 16]}),
    ],
)
def test_to_dict_holds_only_the_sizes_the_kind_uses(spec, expected):
    """A linear model's spec and manifest carried hidden [64] and channels [32, 64, 128]."""
    assert spec.to_dict() == expected
    assert ModelSpec.from_dict(spec.to_dict()) == spec
    # Manifests written before keep loading.
    old = {"kind": spec.kind, "hidden": list(spec.hidden), "channels": list(spec.channels)}
    assert ModelSpec.from_dict(old) == spec
