"""K independent 3x3 convolutions (padding 1) in one launch: the per-model layers of a cnn3 stack.

``grouped_conv3x3(a, weight, bias)`` computes, for every model k, a 3x3 convolution (stride 1,
padding 1) of model k's channels ``a[:, k*C:(k+1)*C]`` with ``weight[k]`` [C_out, C, 3, 3] and
``bias[k]`` [C_out]; the result is [n, K*C_out, H, W] in channels-last memory. It is what
``F.conv2d(a, weight.flatten(0, 1), bias.flatten(), padding=1, groups=K)`` computes.

Why a kernel of our own: on a CUDA card cuDNN runs such a grouped convolution as one
implicit-GEMM launch per group at about 8 TFLOP/s (docs/benchmarks.md, the profile), most of a
K-stack's SGD step. Here one Triton program computes a tile of pixels x output channels of one
model, reading its nine shifted input rows straight from the activation (an implicit GEMM, no
im2col copy), so all K models' tiles run in one launch on the tensor cores. The backward is two
launches: the input gradient is the same convolution of the output gradient with each model's
weights transposed and flipped, and the weight gradient is a GEMM over the pixels whose partial
sums (one per slice of the pixels) are added in a fixed order, so it is deterministic.

Where Triton is missing (a CPU build of PyTorch) or the tensors live on a CPU, the same three
pieces run as PyTorch's own grouped convolution and its weight gradient: the operator, its
autograd formula and the weight layout are then checked by any CPU test suite, and the Triton
kernels by the GPU tests (``TRITON_INTERPRET=1`` also runs them on a CPU, slowly).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

try:  # Triton ships with CUDA builds of PyTorch, not with CPU ones.
    import triton
    import triton.language as tl
except ImportError:  # pragma: no cover - depends on the torch build
    triton = None
    tl = None

__all__ = ["grouped_conv3x3", "triton_available"]


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "") == "1"


# Set once a kernel failed to build or launch in this process (a broken toolchain, say): from
# then on the PyTorch path runs, after one warning, rather than failing every fit.
_failed: list[str] = []


def triton_available(device: torch.device) -> bool:
    """Whether the Triton kernels run for tensors on ``device`` (CUDA, or any device under
    Triton's interpreter), and have not failed in this process."""
    return triton is not None and not _failed and (device.type == "cuda" or _interpreting())


def _launched(kernel: Callable[[], None]) -> bool:
    """Run ``kernel``; False (and a warning, the first time) if Triton could not build or launch
    it, so that the caller computes the same thing with PyTorch instead."""
    try:
        kernel()
    except Exception as exc:  # any compiler or launch failure: PyTorch's kernels instead
        _failed.append(f"{type(exc).__name__}: {exc}")
        warnings.warn(
            f"the Triton grouped convolution failed ({_failed[-1][:300]}); using PyTorch's",
            RuntimeWarning,
            stacklevel=3,
        )
        return False
    return True


def _pow2_block(size: int, *, low: int = 16, high: int = 64) -> int:
    """The tile side for a dimension of ``size``: a power of two in [low, high] (tl.dot needs
    at least 16), the smallest that covers ``size`` where one does."""
    block = low
    while block < size and block < high:
        block *= 2
    return block


if triton is not None:

    @triton.jit
    def _conv_fwd_kernel(
        x_ptr, w_ptr, b_ptr, out_ptr,
        N, H, W, C_IN, C_OUT,
        sxn, sxc, sxh, sxw,
        son, soc, soh, sow,
        HAS_BIAS: tl.constexpr, IEEE: tl.constexpr,
        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    ):  # fmt: skip
        """out[:, g*C_OUT + o] at pixel m = sum over taps and c of x[:, g*C_IN + c] at the
        tapped pixel times w[g, tap, c, o] (+ b[g*C_OUT + o]). Grid: (pixel tiles, output
        channel tiles, groups)."""
        pid_m = tl.program_id(0)
        pid_n = tl.program_id(1)
        g = tl.program_id(2)
        HW = H * W
        M = N * HW
        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        rk = tl.arange(0, BLOCK_K)
        m_ok = rm < M
        n_ok = rn < C_OUT
        img = (rm // HW).to(tl.int64)  # int64: a wide stack's activations pass 2**31 elements
        y = (rm % HW) // W
        x = rm % W
        x_rows = x_ptr + img * sxn + (g * C_IN).to(tl.int64) * sxc
        w_group = w_ptr + g.to(tl.int64) * 9 * C_IN * C_OUT
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        # One flat loop over (tap, channel block), so that the compiler pipelines the loads of
        # the next tap's tile behind this one's product (a loop over the taps unrolled around a
        # one-iteration channel loop had nothing to pipeline when C_IN <= BLOCK_K).
        c_blocks = tl.cdiv(C_IN, BLOCK_K)
        for step in range(0, 9 * c_blocks):
            tap = step // c_blocks
            c = (step % c_blocks) * BLOCK_K + rk
            yy = y + (tap // 3 - 1)
            xx = x + (tap % 3 - 1)
            inside = m_ok & (yy >= 0) & (yy < H) & (xx >= 0) & (xx < W)
            a = tl.load(
                x_rows[:, None] + (yy * sxh + xx * sxw)[:, None] + c[None, :] * sxc,
                mask=inside[:, None] & (c[None, :] < C_IN),
                other=0.0,
            )
            w = tl.load(
                w_group + (tap * C_IN + c)[:, None] * C_OUT + rn[None, :],
                mask=(c[:, None] < C_IN) & n_ok[None, :],
                other=0.0,
            )
            if IEEE:
                acc += tl.dot(a, w, input_precision="ieee")
            else:
                acc += tl.dot(a, w)
        if HAS_BIAS:
            bias = tl.load(b_ptr + g * C_OUT + rn, mask=n_ok, other=0.0)
            acc += bias.to(tl.float32)[None, :]
        out = (
            out_ptr
            + img[:, None] * son
            + (g * C_OUT + rn)[None, :].to(tl.int64) * soc
            + (y * soh + x * sow)[:, None]
        )
        tl.store(out, acc.to(out_ptr.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])

    @triton.jit
    def _conv_wgrad_kernel(
        x_ptr, go_ptr, ws_ptr,
        N, H, W, C_IN, C_OUT, M_PER_SPLIT,
        sxn, sxc, sxh, sxw,
        sgn, sgc, sgh, sgw,
        IEEE: tl.constexpr,
        BLOCK_M: tl.constexpr, BLOCK_CI: tl.constexpr, BLOCK_CO: tl.constexpr,
    ):  # fmt: skip
        """ws[split, g, tap, c, o] = sum over the split's pixels m of x[:, g*C_IN + c] at the
        tapped pixel times go[:, g*C_OUT + o] at m. Grid: (groups x taps x channel tiles,
        splits of the pixels)."""
        pid = tl.program_id(0)
        split = tl.program_id(1)
        n_ci = tl.cdiv(C_IN, BLOCK_CI)
        n_co = tl.cdiv(C_OUT, BLOCK_CO)
        co_block = pid % n_co
        rest = pid // n_co
        ci_block = rest % n_ci
        rest = rest // n_ci
        tap = rest % 9
        g = rest // 9
        dy = tap // 3 - 1
        dx = tap % 3 - 1
        rci = ci_block * BLOCK_CI + tl.arange(0, BLOCK_CI)
        rco = co_block * BLOCK_CO + tl.arange(0, BLOCK_CO)
        ci_ok = rci < C_IN
        co_ok = rco < C_OUT
        HW = H * W
        M = N * HW
        x_chan = (g * C_IN + rci).to(tl.int64) * sxc
        go_chan = (g * C_OUT + rco).to(tl.int64) * sgc
        acc = tl.zeros((BLOCK_CI, BLOCK_CO), dtype=tl.float32)
        start = split * M_PER_SPLIT
        for m0 in range(0, M_PER_SPLIT, BLOCK_M):
            rm = start + m0 + tl.arange(0, BLOCK_M)
            m_ok = rm < M
            img = (rm // HW).to(tl.int64)
            y = (rm % HW) // W
            x = rm % W
            yy = y + dy
            xx = x + dx
            inside = m_ok & (yy >= 0) & (yy < H) & (xx >= 0) & (xx < W)
            a = tl.load(
                x_ptr + x_chan[:, None] + (img * sxn + yy * sxh + xx * sxw)[None, :],
                mask=ci_ok[:, None] & inside[None, :],
                other=0.0,
            )
            go = tl.load(
                go_ptr + (img * sgn + y * sgh + x * sgw)[:, None] + go_chan[None, :],
                mask=m_ok[:, None] & co_ok[None, :],
                other=0.0,
            )
            if IEEE:
                acc += tl.dot(a, go, input_precision="ieee")
            else:
                acc += tl.dot(a, go)
        ws = (
            ws_ptr
            + ((split * (tl.num_programs(0) // (n_ci * n_co)) + g * 9 + tap).to(tl.int64))
            * C_IN
            * C_OUT
            + rci[:, None] * C_OUT
            + rco[None, :]
        )
        tl.store(ws, acc, mask=ci_ok[:, None] & co_ok[None, :])

    def _fwd_configs() -> list[Any]:
        return [
            triton.Config({"BLOCK_M": bm}, num_warps=warps, num_stages=stages)
            for bm, warps, stages in ((64, 4, 3), (128, 4, 3), (128, 8, 3), (256, 8, 3))
        ]

    def _wgrad_configs() -> list[Any]:
        return [
            triton.Config({"BLOCK_M": bm}, num_warps=warps, num_stages=stages)
            for bm, warps, stages in ((64, 4, 3), (128, 4, 3), (128, 8, 3))
        ]

    _conv_fwd_tuned = triton.autotune(
        configs=_fwd_configs(),
        key=["C_IN", "C_OUT", "H", "W", "BLOCK_N", "BLOCK_K", "IEEE"],
        cache_results=True,
    )(_conv_fwd_kernel)
    # The weight-gradient kernel stores (never accumulates) its partial sums, so timing a config
    # by running it again is harmless.
    _conv_wgrad_tuned = triton.autotune(
        configs=_wgrad_configs(),
        key=["C_IN", "C_OUT", "H", "W", "M_PER_SPLIT", "BLOCK_CI", "BLOCK_CO", "IEEE"],
        cache_results=True,
    )(_conv_wgrad_kernel)


# Pixels per slice of the weight gradient: each program sums this many pixels (a multiple of
# every BLOCK_M tried), so a 1,024-image batch of 16x16 maps gives 64 slices, enough programs to
# fill the card, and the fixed-order sum of the slices keeps the gradient deterministic.
_WGRAD_PIXELS_PER_SPLIT = 4096


def _arranged(weight: Tensor) -> Tensor:
    """[G, C_out, C_in, 3, 3] -> [G, 9, C_in, C_out] contiguous: each tap's C_in x C_out block
    is the B operand of one tile product."""
    return weight.permute(0, 3, 4, 2, 1).contiguous()


def _conv_forward(a: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """The convolution itself (no autograd): [n, G*C_in, H, W] -> [n, G*C_out, H, W]."""
    G, c_out, c_in = weight.shape[:3]
    n, _, H, W = a.shape
    if triton_available(a.device):
        out = torch.empty((n, G * c_out, H, W), dtype=a.dtype, device=a.device)
        out = out.contiguous(memory_format=torch.channels_last)
        w = _arranged(weight)
        b = bias.contiguous() if bias is not None else w  # any pointer; unread without a bias
        block_n = _pow2_block(c_out, high=128)
        args = (a, w, b, out, n, H, W, c_in, c_out, *a.stride(), *out.stride())
        meta = {"HAS_BIAS": bias is not None, "BLOCK_N": block_n, "BLOCK_K": _pow2_block(c_in)}

        def launch() -> None:
            m = n * H * W
            if _interpreting() or a.dtype == torch.float32:
                # fp32 (scoring outside autocast) is not the training step's hot path: one
                # fixed tile shape, IEEE products, no autotuning.
                grid = (triton.cdiv(m, 64), triton.cdiv(c_out, block_n), G)
                _conv_fwd_kernel[grid](
                    *args, IEEE=a.dtype == torch.float32, BLOCK_M=64, num_warps=4, **meta
                )
            else:
                _conv_fwd_tuned[
                    lambda c: (triton.cdiv(m, c["BLOCK_M"]), triton.cdiv(c_out, block_n), G)
                ](*args, IEEE=False, **meta)

        if _launched(launch):
            return out
    flat_bias = None if bias is None else bias.flatten()
    out = F.conv2d(a, weight.flatten(0, 1), flat_bias, padding=1, groups=G)
    return out.contiguous(memory_format=torch.channels_last)


def _conv_weight_grad(a: Tensor, grad_out: Tensor, weight_shape: torch.Size) -> Tensor:
    """d loss / d weight, [G, C_out, C_in, 3, 3] float32, from the layer's input and the
    gradient of its output."""
    G, c_out, c_in = weight_shape[:3]
    n, _, H, W = a.shape
    if triton_available(a.device):
        splits = triton.cdiv(n * H * W, _WGRAD_PIXELS_PER_SPLIT)
        block_ci = _pow2_block(c_in)
        block_co = _pow2_block(c_out, high=128)
        ws = torch.empty((splits, G, 9, c_in, c_out), dtype=torch.float32, device=a.device)
        tiles = G * 9 * triton.cdiv(c_in, block_ci) * triton.cdiv(c_out, block_co)
        args = (
            a, grad_out, ws, n, H, W, c_in, c_out, _WGRAD_PIXELS_PER_SPLIT,
            *a.stride(), *grad_out.stride(),
        )  # fmt: skip
        meta = {"BLOCK_CI": block_ci, "BLOCK_CO": block_co}

        def launch() -> None:
            if _interpreting() or a.dtype == torch.float32:
                _conv_wgrad_kernel[(tiles, splits)](
                    *args, IEEE=a.dtype == torch.float32, BLOCK_M=64, num_warps=4, **meta
                )
            else:
                _conv_wgrad_tuned[(tiles, splits)](*args, IEEE=False, **meta)

        if _launched(launch):
            # Slices summed in a fixed order: a deterministic gradient (atomics would not be).
            return ws.sum(0).view(G, 3, 3, c_in, c_out).permute(0, 4, 3, 1, 2)
    flat = torch.nn.grad.conv2d_weight(
        a.float(), (G * c_out, c_in, 3, 3), grad_out.float(), padding=1, groups=G
    )
    return flat.view(G, c_out, c_in, 3, 3)


@torch.library.custom_op("metro::grouped_conv3x3", mutates_args=())
def _grouped_conv3x3_op(a: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    return _conv_forward(a, weight, bias)


@_grouped_conv3x3_op.register_fake
def _(a: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    n, _, H, W = a.shape
    out = a.new_empty((n, weight.shape[0] * weight.shape[1], H, W))
    return out.contiguous(memory_format=torch.channels_last)


@torch.library.custom_op("metro::grouped_conv3x3_input_grad", mutates_args=())
def _input_grad_op(grad_out: Tensor, weight: Tensor) -> Tensor:
    # The input gradient of a 3x3, padding-1 convolution is the same convolution of the output
    # gradient with each model's kernel transposed (C_in <-> C_out) and flipped in both axes.
    return _conv_forward(grad_out, weight.transpose(1, 2).flip(3, 4), None)


@_input_grad_op.register_fake
def _(grad_out: Tensor, weight: Tensor) -> Tensor:
    n, _, H, W = grad_out.shape
    out = grad_out.new_empty((n, weight.shape[0] * weight.shape[2], H, W))
    return out.contiguous(memory_format=torch.channels_last)


@torch.library.custom_op("metro::grouped_conv3x3_weight_grad", mutates_args=())
def _weight_grad_op(a: Tensor, grad_out: Tensor, weight: Tensor) -> Tensor:
    return _conv_weight_grad(a, grad_out, weight.shape).to(weight.dtype)


@_weight_grad_op.register_fake
def _(a: Tensor, grad_out: Tensor, weight: Tensor) -> Tensor:
    return torch.empty_like(weight, memory_format=torch.contiguous_format)


def _setup_context(ctx: Any, inputs: tuple[Tensor, Tensor, Tensor], output: Tensor) -> None:
    a, weight, _ = inputs
    ctx.save_for_backward(a, weight)


def _backward(ctx: Any, grad_out: Tensor) -> tuple[Tensor | None, Tensor | None, Tensor | None]:
    a, weight = ctx.saved_tensors
    grad_out = grad_out.contiguous(memory_format=torch.channels_last)
    need_a, need_w, need_b = ctx.needs_input_grad
    grad_a = _input_grad_op(grad_out, weight) if need_a else None
    grad_w = _weight_grad_op(a, grad_out, weight) if need_w else None
    grad_b = None
    if need_b:
        G, c_out = weight.shape[:2]
        grad_b = grad_out.sum(dim=(0, 2, 3), dtype=torch.float32).view(G, c_out).to(weight.dtype)
    return grad_a, grad_w, grad_b


_grouped_conv3x3_op.register_autograd(_backward, setup_context=_setup_context)


def grouped_conv3x3(a: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    """K independent 3x3 convolutions (padding 1): ``a`` [n, K*C, H, W] holds model k's C
    channels at k*C..(k+1)*C, ``weight`` is [K, C_out, C, 3, 3] and ``bias`` [K, C_out]; returns
    [n, K*C_out, H, W] in channels-last memory. Differentiable in all three. The weight and bias
    are cast to the activation's dtype (under bf16 autocast, the activations are bf16), as
    autocast casts a convolution's operands."""
    if a.dim() != 4 or weight.dim() != 5 or weight.shape[3:] != (3, 3):
        raise ValueError(
            f"grouped_conv3x3 needs a [n, K*C, H, W] input and [K, C_out, C, 3, 3] weights, got "
            f"{tuple(a.shape)} and {tuple(weight.shape)}"
        )
    if a.shape[1] != weight.shape[0] * weight.shape[2]:
        raise ValueError(
            f"the input has {a.shape[1]} channels, the weights expect "
            f"{weight.shape[0]} x {weight.shape[2]}"
        )
    if bias.shape != weight.shape[:2]:
        raise ValueError(
            f"bias must be [K, C_out] = {tuple(weight.shape[:2])}, got {tuple(bias.shape)}"
        )
    dtype = a.dtype
    return _grouped_conv3x3_op(a, weight.to(dtype), bias.to(dtype))
