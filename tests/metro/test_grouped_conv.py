"""metro.grouped_conv: K independent 3x3 convolutions as one operator, against PyTorch's grouped
convolution computed in float64 (on a CPU the operator runs PyTorch's own kernels, so these tests
check its autograd formula and weight layout; the Triton kernels run in the gpu-marked ones)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from metro import grouped_conv
from metro.grouped_conv import grouped_conv3x3, triton_available

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


def _reference(a, weight, bias, grad_out):
    """Scores and gradients of F.conv2d(groups=K) in float64."""
    a64, w64, b64 = (t.detach().double().requires_grad_() for t in (a, weight, bias))
    out = F.conv2d(a64, w64.flatten(0, 1), b64.flatten(), padding=1, groups=weight.shape[0])
    grads = torch.autograd.grad(out, (a64, w64, b64), grad_out.double())
    return out.detach(), *grads


def _relative_errors(device, dtype, shape, *, seed, channels_last=True):
    n, G, c_in, c_out, H, W = shape
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(n, G * c_in, H, W, generator=gen)
    if channels_last:
        a = a.contiguous(memory_format=torch.channels_last)
    weight = torch.randn(G, c_out, c_in, 3, 3, generator=gen) / (3 * c_in**0.5)
    bias = torch.randn(G, c_out, generator=gen)
    grad_out = torch.randn(n, G * c_out, H, W, generator=gen)
    expected = _reference(a, weight, bias, grad_out)
    a_d = a.to(device, dtype).requires_grad_()
    w_d = weight.to(device).requires_grad_()
    b_d = bias.to(device).requires_grad_()
    out = grouped_conv3x3(a_d, w_d, b_d)
    assert out.shape == (n, G * c_out, H, W)
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


@pytest.mark.parametrize("shape", SHAPES)
def test_matches_pytorchs_grouped_convolution_and_its_gradients(shape) -> None:
    errors = _relative_errors(torch.device("cpu"), torch.float32, shape, seed=sum(shape))
    assert max(errors) < 1e-5, errors


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
    with pytest.raises(ValueError, match=message):
        grouped_conv3x3(torch.zeros(a), torch.zeros(weight), torch.zeros(bias))


# The shapes of cnn3's layers 2 and 3 in the paper's protocol (21 models, 32/64/128 channels on
# 32x32 images), at a quarter of the batch: bf16 runs the autotuned kernels, fp32 one fixed tile.
LAYER_SHAPES = [(256, 21, 32, 64, 16, 16), (256, 21, 64, 128, 8, 8)]


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("shape", "dtype"),
    [(s, torch.float32) for s in SHAPES]
    + [(s, torch.bfloat16) for s in [SHAPES[3], *LAYER_SHAPES]],
)
def test_triton_kernels_match_in_float64(shape, dtype) -> None:
    device = torch.device("cuda")
    assert triton_available(device)
    # fp32 runs the tile products in IEEE fp32; bf16 rounds the operands (2**-8) and the output.
    tolerance = 1e-5 if dtype == torch.float32 else 2e-2
    for channels_last in (True, False):
        errors = _relative_errors(
            device, dtype, shape, seed=sum(shape), channels_last=channels_last
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
