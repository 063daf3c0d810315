"""metro.grouped_conv: K independent 3x3 convolutions as one operator, against PyTorch's grouped
convolution computed in float64 (on a CPU the operator runs PyTorch's own kernels, so these tests
check its autograd formula and weight layout; the Triton kernels run in the gpu-marked ones)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from metro import grouped_conv
from metro.grouped_conv import grouped_conv3x3, grouped_conv3x3_pool_relu, triton_available

# (images, models, channels in, channels out, height, width): odd sizes, channel counts that are
# not powers of two and cross the kernels' tile sides (64 in, 128 out), and enough pixels for
# several slices of the weight gradient (4,096 pixels each).
SHAPES = [
    (3, 2, 5, 7, 6, 5),
    (2, 3, 32, 64, 8, 8),
    (4, 2, 3, 20, 5, 9),
    (2, 2, 80, 140, 6, 6),
    (70, 2, 17, 20, 8, 8),
]


def _reference(a, weight, bias, grad_out, *, pooled):
    """Scores and gradients of F.conv2d(groups=K) (then 2x2 max-pool and ReLU) in float64."""
    a64, w64, b64 = (t.detach().double().requires_grad_() for t in (a, weight, bias))
    out = F.conv2d(a64, w64.flatten(0, 1), b64.flatten(), padding=1, groups=weight.shape[0])
    if pooled:
        out = F.relu(F.max_pool2d(out, 2))
    grads = torch.autograd.grad(out, (a64, w64, b64), grad_out.double())
    return out.detach(), *grads


def _relative_errors(device, dtype, shape, *, seed, channels_last=True, pooled=False):
    n, G, c_in, c_out, H, W = shape
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(n, G * c_in, H, W, generator=gen)
    if channels_last:
        a = a.contiguous(memory_format=torch.channels_last)
    weight = torch.randn(G, c_out, c_in, 3, 3, generator=gen) / (3 * c_in**0.5)
    bias = torch.randn(G, c_out, generator=gen)
    out_size = (H // 2, W // 2) if pooled else (H, W)
    grad_out = torch.randn(n, G * c_out, *out_size, generator=gen)
    expected = _reference(a, weight, bias, grad_out, pooled=pooled)
    a_d = a.to(device, dtype).requires_grad_()
    w_d = weight.to(device).requires_grad_()
    b_d = bias.to(device).requires_grad_()
    out = (grouped_conv3x3_pool_relu if pooled else grouped_conv3x3)(a_d, w_d, b_d)
    assert out.shape == (n, G * c_out, *out_size)
    assert out.dtype == dtype
    assert out.is_contiguous(memory_format=torch.channels_last)
    got = (out, *torch.autograd.grad(out, (a_d, w_d, b_d), grad_out.to(device, dtype)))
    assert got[2].dtype == torch.float32 and got[3].dtype == torch.float32
    errors = []
    for g, e in zip(got, expected, strict=True):
        g = g.detach().double().cpu()
        assert torch.isfinite(g).all()
        errors.append(((g - e).norm() / e.norm()).item())
    return errors


@pytest.mark.parametrize("pooled", [False, True])
@pytest.mark.parametrize("shape", SHAPES)
def test_matches_pytorchs_grouped_convolution_and_its_gradients(shape, pooled) -> None:
    errors = _relative_errors(
        torch.device("cpu"), torch.float32, shape, seed=sum(shape), pooled=pooled
    )
    assert max(errors) < 1e-5, errors


def test_the_pooled_form_routes_the_gradient_through_each_windows_maximum() -> None:
    # Where the ReLU is off (every value of a window <= 0) no gradient flows, and in a window
    # whose maximum is positive only the maximum's position gets it.
    a = torch.zeros(1, 1, 4, 4)
    weight = torch.zeros(1, 1, 1, 3, 3)
    weight[0, 0, 0, 1, 1] = 1.0  # the identity: the convolution is the input itself
    a[0, 0, :2, :2] = torch.tensor([[1.0, 3.0], [2.0, -1.0]])
    a[0, 0, 2:, 2:] = -1.0
    a.requires_grad_()
    out = grouped_conv3x3_pool_relu(a, weight, torch.zeros(1, 1))
    assert out[0, 0].tolist() == [[3.0, 0.0], [0.0, 0.0]]
    (grad,) = torch.autograd.grad(out.sum(), a)
    expected = torch.zeros(4, 4)
    expected[0, 1] = 1.0
    assert torch.equal(grad[0, 0], expected)


def test_takes_any_memory_layout() -> None:
    errors = _relative_errors(
        torch.device("cpu"), torch.float32, SHAPES[1], seed=1, channels_last=False
    )
    assert max(errors) < 1e-5, errors


def test_traces_into_one_graph_with_its_backward() -> None:
    # A custom operator with a registered fake and autograd formula: torch.compile traces a step
    # through it without a graph break, forward and backward.
    a = torch.randn(2, 6, 5, 5).contiguous(memory_format=torch.channels_last)
    weight = torch.randn(2, 4, 3, 3, 3, requires_grad=True)
    bias = torch.randn(2, 4, requires_grad=True)

    def loss(a, weight, bias):
        return grouped_conv3x3(a, weight, bias).square().sum()

    compiled = torch.compile(loss, backend="aot_eager", fullgraph=True)
    pooled = torch.compile(
        lambda a, w, b: grouped_conv3x3_pool_relu(a, w, b).sum(), backend="aot_eager",
        fullgraph=True,
    )  # fmt: skip
    pooled(a, weight, bias).backward()
    weight.grad = bias.grad = None
    value = compiled(a, weight, bias)
    value.backward()
    eager_w, eager_b = torch.autograd.grad(loss(a, weight, bias), (weight, bias))
    torch.testing.assert_close(value, loss(a, weight, bias))
    torch.testing.assert_close(weight.grad, eager_w)
    torch.testing.assert_close(bias.grad, eager_b)


@pytest.mark.parametrize(
    ("a", "weight", "bias", "message"),
    [
        ((2, 6, 5, 5), (2, 4, 3, 5, 5), (2, 4), "3, 3"),
        ((2, 6, 5), (2, 4, 3, 3, 3), (2, 4), "input"),
        ((2, 7, 5, 5), (2, 4, 3, 3, 3), (2, 4), "7 channels"),
        ((2, 6, 5, 5), (2, 4, 3, 3, 3), (8,), "bias must be"),
    ],
)
def test_refuses_shapes_that_do_not_match(a, weight, bias, message) -> None:
    for op in (grouped_conv3x3, grouped_conv3x3_pool_relu):
        with pytest.raises(ValueError, match=message):
            op(torch.zeros(a), torch.zeros(weight), torch.zeros(bias))


# cnn3's three layers in the paper's protocol (21 models, 32/64/128 channels on 32x32 images) at
# a quarter of the batch, the first as one dense convolution with 21*32 outputs (pooled, as the
# model runs the first two): bf16 runs the autotuned kernels, fp32 one fixed tile.
LAYER_SHAPES = [
    ((256, 1, 3, 21 * 32, 32, 32), True),
    ((256, 21, 32, 64, 16, 16), True),
    ((256, 21, 64, 128, 8, 8), False),
]


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("shape", "dtype", "pooled"),
    [(s, torch.float32, p) for s in SHAPES[:4] for p in (False, True)]
    + [(s, torch.bfloat16, p) for s, p in LAYER_SHAPES],
)
def test_triton_kernels_match_in_float64(shape, dtype, pooled) -> None:
    device = torch.device("cuda")
    assert triton_available(device)
    # fp32 runs the tile products in IEEE fp32; bf16 rounds the operands (2**-8) and the output.
    tolerance = 1e-5 if dtype == torch.float32 else 2e-2
    # Other memory layouts take other specializations of the kernels (each a compile): once.
    layouts = (True, False) if shape == SHAPES[1] else (True,)
    for channels_last in layouts:
        errors = _relative_errors(
            device, dtype, shape, seed=sum(shape), channels_last=channels_last, pooled=pooled
        )
        assert max(errors) < tolerance, (channels_last, errors)
    assert triton_available(device), grouped_conv._failed  # the kernels ran, not the fallback


@pytest.mark.gpu
def test_triton_weight_gradient_is_deterministic() -> None:
    device = torch.device("cuda")
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(512, 21 * 32, 16, 16, generator=gen).to(device, torch.bfloat16)
    a = a.contiguous(memory_format=torch.channels_last)
    weight = torch.randn(21, 64, 32, 3, 3, generator=gen).to(device).requires_grad_()
    bias = torch.zeros(21, 64, device=device, requires_grad=True)
    grads = []
    for _ in range(2):
        out = grouped_conv3x3(a, weight, bias)
        grads.append(torch.autograd.grad(out.float().square().sum(), weight)[0])
    assert torch.equal(grads[0], grads[1])
    assert triton_available(device), grouped_conv._failed
