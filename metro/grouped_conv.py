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

``grouped_conv3x3_pool_relu(a, weight, bias)`` is ``relu(max_pool2d(grouped_conv3x3(...), 2))``
in one kernel: it keeps each 2x2 window's maximum and a byte saying where it was (or that the
ReLU was off), never the full-size map, and its backward routes the gradient through those bytes
inside the loads of the two backward kernels. cnn3's first layer (all K models on the shared
image, as one convolution with K*c1 outputs) and second layer run this way under the "triton"
stacking (metro.models): the first layer's full-size map is a K-stack step's largest tensor.

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
from torch.nn.grad import conv2d_weight

try:  # Triton ships with CUDA builds of PyTorch, not with CPU ones.
    import triton
    import triton.language as tl
except ImportError:  # pragma: no cover - depends on the torch build
    triton = None
    tl = None

__all__ = ["grouped_conv3x3", "grouped_conv3x3_pool_relu", "triton_available"]


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "") == "1"


# Set once a kernel failed to build or launch in this process (a broken toolchain, say): from
# then on the PyTorch path runs, after one warning, rather than failing every fit.
_failed: list[str] = []


def triton_available(device: torch.device) -> bool:
    """Whether the Triton kernels run for tensors on ``device`` (CUDA, or any device under
    Triton's interpreter), and have not failed in this process."""
    return triton is not None and not _failed and (device.type == "cuda" or _interpreting())


def _launched(
    kernel: Any,
    tuned: Any,
    grid: Callable[[int], tuple[int, ...]],
    args: tuple[Any, ...],
    meta: dict[str, Any],
    dtype: torch.dtype,
) -> bool:
    """Launch ``kernel`` on ``grid(BLOCK_M)``; False (and a warning, the first time) if Triton
    could not build or launch it, so that the caller computes the same thing with PyTorch
    instead. fp32 (scoring outside autocast, not the training step's hot path) and the
    interpreter take one fixed tile of 64 pixels with IEEE products and no autotuning; bf16 and
    fp16 take the autotuned ``tuned``."""
    fp32 = dtype == torch.float32
    try:
        if _interpreting() or fp32:
            kernel[grid(64)](*args, IEEE=fp32, BLOCK_M=64, num_warps=4, **meta)
        else:
            tuned[lambda config: grid(config["BLOCK_M"])](*args, IEEE=False, **meta)
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
    def _mma(acc, a, b, IEEE: tl.constexpr):
        if IEEE:
            return acc + tl.dot(a, b, input_precision="ieee")
        else:
            return acc + tl.dot(a, b)

    @triton.jit
    def _gather(
        x_ptr, code_ptr, img, ch, yy, xx, ok, sn, sc, sh, sw, H, W, UNPOOL: tl.constexpr
    ):  # fmt: skip
        """x at (img, ch, yy, xx) (broadcast index tensors), 0 where not ``ok``. With UNPOOL, x
        is the gradient of a 2x2 max-pool's output (H/2 x W/2) and ``code`` its codes: each
        value goes to its window's maximum only (code (dy*2 + dx), 4 where the ReLU after the
        pool was off), so the full-size gradient is never written."""
        if UNPOOL:
            ok = ok & (yy < (H // 2) * 2) & (xx < (W // 2) * 2)
            off = img * sn + ch * sc + (yy // 2) * sh + (xx // 2) * sw
            v = tl.load(x_ptr + off, mask=ok, other=0.0)
            code = tl.load(code_ptr + off, mask=ok, other=4).to(tl.int32)
            return tl.where(code == (yy % 2) * 2 + (xx % 2), v, tl.zeros_like(v))
        else:
            return tl.load(x_ptr + img * sn + ch * sc + yy * sh + xx * sw, mask=ok, other=0.0)

    @triton.jit
    def _conv_fwd_kernel(
        x_ptr, xcode_ptr, w_ptr, b_ptr, out_ptr, ocode_ptr,
        N, H, W, C_IN, C_OUT,
        sxn, sxc, sxh, sxw,
        son, soc, soh, sow,
        HAS_BIAS: tl.constexpr, IEEE: tl.constexpr, UNPOOL: tl.constexpr,
        POOL: tl.constexpr, FLAT_K: tl.constexpr,
        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    ):  # fmt: skip
        """out[:, g*C_OUT + o] at pixel m = sum over taps and c of x[:, g*C_IN + c] at the
        tapped pixel times w[g, tap, c, o] (+ b[g*C_OUT + o]). With POOL, each output pixel is
        a 2x2 window: the ReLU of the window's maximum is stored, and its position's code.
        FLAT_K walks the 9*C_IN products as one run of (tap, channel) pairs (for few input
        channels, e.g. an image's 3), else tap by tap over channel blocks (loads stay
        contiguous). Grid: (output pixel tiles, output channel tiles, groups)."""
        pid_m = tl.program_id(0)
        pid_n = tl.program_id(1)
        g = tl.program_id(2)
        if POOL:
            HO = H // 2
            WO = W // 2
        else:
            HO = H
            WO = W
        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        rk = tl.arange(0, BLOCK_K)
        m_ok = rm < N * HO * WO
        n_ok = rn < C_OUT
        img = (rm // (HO * WO)).to(tl.int64)  # int64: wide stacks pass 2**31 elements
        oy = (rm % (HO * WO)) // WO
        ox = rm % WO
        K_RED = 9 * C_IN
        w_group = w_ptr + g.to(tl.int64) * K_RED * C_OUT
        best = tl.full((BLOCK_M, BLOCK_N), float("-inf"), tl.float32)
        code = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
        for q in tl.static_range(4 if POOL else 1):
            if POOL:
                y = oy * 2 + q // 2
                x = ox * 2 + q % 2
            else:
                y = oy
                x = ox
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            if FLAT_K:
                for k0 in range(0, K_RED, BLOCK_K):
                    r = k0 + rk
                    tap = r // C_IN
                    ch = (g * C_IN + r % C_IN).to(tl.int64)
                    yy = y[:, None] + (tap // 3 - 1)[None, :]
                    xx = x[:, None] + (tap % 3 - 1)[None, :]
                    ok = m_ok[:, None] & (r < K_RED)[None, :]
                    ok = ok & (yy >= 0) & (yy < H) & (xx >= 0) & (xx < W)
                    a = _gather(
                        x_ptr, xcode_ptr, img[:, None], ch[None, :], yy, xx, ok,
                        sxn, sxc, sxh, sxw, H, W, UNPOOL,
                    )  # fmt: skip
                    w = tl.load(
                        w_group + r[:, None] * C_OUT + rn[None, :],
                        mask=(r < K_RED)[:, None] & n_ok[None, :],
                        other=0.0,
                    )
                    acc = _mma(acc, a, w, IEEE)
            else:
                # One flat loop over (tap, channel block), so that the compiler pipelines the
                # next tap's loads behind this one's product.
                c_blocks = tl.cdiv(C_IN, BLOCK_K)
                for step in range(0, 9 * c_blocks):
                    tap = step // c_blocks
                    c = (step % c_blocks) * BLOCK_K + rk
                    yy = y + (tap // 3 - 1)
                    xx = x + (tap % 3 - 1)
                    inside = m_ok & (yy >= 0) & (yy < H) & (xx >= 0) & (xx < W)
                    a = _gather(
                        x_ptr, xcode_ptr, img[:, None], (g * C_IN + c).to(tl.int64)[None, :],
                        yy[:, None], xx[:, None], inside[:, None] & (c < C_IN)[None, :],
                        sxn, sxc, sxh, sxw, H, W, UNPOOL,
                    )  # fmt: skip
                    w = tl.load(
                        w_group + (tap * C_IN + c)[:, None] * C_OUT + rn[None, :],
                        mask=(c < C_IN)[:, None] & n_ok[None, :],
                        other=0.0,
                    )
                    acc = _mma(acc, a, w, IEEE)
            if HAS_BIAS:
                bias = tl.load(b_ptr + g * C_OUT + rn, mask=n_ok, other=0.0)
                acc += bias.to(tl.float32)[None, :]
            if POOL:
                better = acc > best  # the first maximum of the window wins a tie
                best = tl.where(better, acc, best)
                code = tl.where(better, q, code)
            else:
                best = acc
        out = (
            img[:, None] * son
            + (g * C_OUT + rn)[None, :].to(tl.int64) * soc
            + (oy * soh + ox * sow)[:, None]
        )
        stored = m_ok[:, None] & n_ok[None, :]
        if POOL:
            tl.store(ocode_ptr + out, tl.where(best > 0, code, 4).to(tl.int8), mask=stored)
            best = tl.maximum(best, 0.0)
        tl.store(out_ptr + out, best.to(out_ptr.dtype.element_ty), mask=stored)

    @triton.jit
    def _conv_wgrad_kernel(
        x_ptr, go_ptr, gcode_ptr, ws_ptr,
        N, H, W, C_IN, C_OUT, M_PER_SPLIT,
        sxn, sxc, sxh, sxw,
        sgn, sgc, sgh, sgw,
        IEEE: tl.constexpr, UNPOOL: tl.constexpr, FLAT_K: tl.constexpr,
        BLOCK_M: tl.constexpr, BLOCK_CI: tl.constexpr, BLOCK_CO: tl.constexpr,
    ):  # fmt: skip
        """ws[split, g, tap*C_IN + c, o] = sum over the split's pixels m of x[:, g*C_IN + c] at
        the tapped pixel times go[:, g*C_OUT + o] at m (go unpooled on the fly with UNPOOL).
        Rows: (tap, channel) pairs in runs of BLOCK_CI with FLAT_K, else one tap's channel
        block. Grid: (groups x row blocks x output channel tiles, splits of the pixels)."""
        pid = tl.program_id(0)
        split = tl.program_id(1)
        n_co = tl.cdiv(C_OUT, BLOCK_CO)
        n_cb = tl.cdiv(C_IN, BLOCK_CI)
        n_r = tl.cdiv(9 * C_IN, BLOCK_CI) if FLAT_K else 9 * n_cb
        co_block = pid % n_co
        r_block = (pid // n_co) % n_r
        g = pid // (n_co * n_r)
        lanes = tl.arange(0, BLOCK_CI)
        if FLAT_K:
            r = r_block * BLOCK_CI + lanes
            r_ok = r < 9 * C_IN
            tap = r // C_IN
            c = r % C_IN
        else:
            c = (r_block % n_cb) * BLOCK_CI + lanes
            r_ok = c < C_IN
            tap = tl.zeros((BLOCK_CI,), dtype=tl.int32) + r_block // n_cb
            r = tap * C_IN + c
        dy = tap // 3 - 1
        dx = tap % 3 - 1
        rco = co_block * BLOCK_CO + tl.arange(0, BLOCK_CO)
        co_ok = rco < C_OUT
        HW = H * W
        M = N * HW
        x_chan = (g * C_IN + c).to(tl.int64) * sxc
        go_chan = (g * C_OUT + rco).to(tl.int64)
        acc = tl.zeros((BLOCK_CI, BLOCK_CO), dtype=tl.float32)
        start = split * M_PER_SPLIT
        for m0 in range(0, M_PER_SPLIT, BLOCK_M):
            rm = start + m0 + tl.arange(0, BLOCK_M)
            m_ok = rm < M
            img = (rm // HW).to(tl.int64)
            y = (rm % HW) // W
            x = rm % W
            yy = y[None, :] + dy[:, None]
            xx = x[None, :] + dx[:, None]
            inside = r_ok[:, None] & m_ok[None, :] & (yy >= 0) & (yy < H) & (xx >= 0) & (xx < W)
            a = tl.load(
                x_ptr + x_chan[:, None] + img[None, :] * sxn + yy * sxh + xx * sxw,
                mask=inside,
                other=0.0,
            )
            go = _gather(
                go_ptr, gcode_ptr, img[:, None], go_chan[None, :], y[:, None], x[:, None],
                m_ok[:, None] & co_ok[None, :], sgn, sgc, sgh, sgw, H, W, UNPOOL,
            )  # fmt: skip
            acc = _mma(acc, a, go, IEEE)
        rows = (split * (tl.num_programs(0) // (n_co * n_r)) + g).to(tl.int64) * 9 * C_IN + r
        tl.store(
            ws_ptr + rows[:, None] * C_OUT + rco[None, :],
            acc,
            mask=r_ok[:, None] & co_ok[None, :],
        )

    def _configs(shapes: tuple[tuple[int, int, int], ...]) -> list[Any]:
        return [
            triton.Config({"BLOCK_M": bm}, num_warps=warps, num_stages=stages)
            for bm, warps, stages in shapes
        ]

    _conv_fwd_tuned = triton.autotune(
        configs=_configs(((64, 4, 3), (128, 4, 3), (128, 8, 3), (256, 8, 3))),
        key=["C_IN", "C_OUT", "H", "W", "UNPOOL", "POOL", "FLAT_K", "BLOCK_N", "BLOCK_K"],
        cache_results=True,
    )(_conv_fwd_kernel)
    # The weight-gradient kernel stores (never accumulates) its partial sums, so timing a config
    # by running it again is harmless.
    _conv_wgrad_tuned = triton.autotune(
        configs=_configs(((64, 4, 3), (128, 4, 3), (128, 8, 3))),
        key=["C_IN", "C_OUT", "H", "W", "M_PER_SPLIT", "UNPOOL", "FLAT_K", "BLOCK_CI", "BLOCK_CO"],
        cache_results=True,
    )(_conv_wgrad_kernel)


# Pixels per slice of the weight gradient: each program sums this many pixels (a multiple of
# every BLOCK_M tried), so a 1,024-image batch of 16x16 maps gives 64 slices, enough programs to
# fill the card, and the fixed-order sum of the slices keeps the gradient deterministic.
_WGRAD_PIXELS_PER_SPLIT = 4096
# Below this many input channels a convolution walks its 9*C_IN products as one run of
# (tap, channel) pairs: an image's 3 channels would fill a 16-wide tile three-sixteenths.
_FLAT_K_BELOW = 16


def _arranged(weight: Tensor) -> Tensor:
    """[G, C_out, C_in, 3, 3] -> [G, 9, C_in, C_out] contiguous: each tap's C_in x C_out block
    is the B operand of one tile product."""
    return weight.permute(0, 3, 4, 2, 1).contiguous()


def _channels_last(shape: tuple[int, ...], like: Tensor, dtype: torch.dtype) -> Tensor:
    out = torch.empty(shape, dtype=dtype, device=like.device)
    return out.contiguous(memory_format=torch.channels_last)


def _unpooled(grad: Tensor, code: Tensor, size: tuple[int, int]) -> Tensor:
    """The gradient of relu(max_pool2d(conv, 2)) with respect to conv ([n, C, H, W]), from the
    gradient of its output and the codes: each value at its window's maximum (PyTorch path)."""
    n, C, Hp, Wp = grad.shape
    full = grad.new_zeros((n, C, *size)).contiguous(memory_format=torch.channels_last)
    for q in range(4):
        dy, dx = divmod(q, 2)
        full[:, :, dy : 2 * Hp : 2, dx : 2 * Wp : 2] = torch.where(code == q, grad, 0)
    return full


def _conv_forward(
    a: Tensor,
    a_code: Tensor | None,
    weight: Tensor,
    bias: Tensor | None,
    size: tuple[int, int],
    *,
    pool: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """The convolution itself (no autograd): [n, G*C_in, H, W] -> [n, G*C_out, H, W], or with
    ``pool`` relu(max_pool2d(., 2)) [n, G*C_out, H/2, W/2] and its codes (int8: the maximum's
    place dy*2 + dx in its window, 4 where the ReLU is off). With ``a_code``, ``a`` is the
    pooled gradient [n, G*C_in, H/2, W/2] of such a layer, unpooled on the fly to ``size``."""
    G, c_out, c_in = weight.shape[:3]
    n = a.shape[0]
    H, W = size
    out_size = (H // 2, W // 2) if pool else (H, W)
    if triton_available(a.device):
        out = _channels_last((n, G * c_out, *out_size), a, a.dtype)
        code = _channels_last(out.shape, a, torch.int8) if pool else None
        w = _arranged(weight)
        args = (
            a, a if a_code is None else a_code, w, w if bias is None else bias.contiguous(),
            out, out if code is None else code, n, H, W, c_in, c_out, *a.stride(), *out.stride(),
        )  # fmt: skip
        flat = c_in < _FLAT_K_BELOW
        block_n = _pow2_block(c_out, high=128)
        meta = {
            "HAS_BIAS": bias is not None,
            "UNPOOL": a_code is not None,
            "POOL": pool,
            "FLAT_K": flat,
            "BLOCK_N": block_n,
            "BLOCK_K": _pow2_block(9 * c_in if flat else c_in),
        }
        rows = n * out_size[0] * out_size[1]

        def grid(block_m: int) -> tuple[int, int, int]:
            return (triton.cdiv(rows, block_m), triton.cdiv(c_out, block_n), G)

        if _launched(_conv_fwd_kernel, _conv_fwd_tuned, grid, args, meta, a.dtype):
            return out, code
    if a_code is not None:
        a = _unpooled(a, a_code, size)
    flat_bias = None if bias is None else bias.flatten()
    conv = F.conv2d(a, weight.flatten(0, 1), flat_bias, padding=1, groups=G)
    if not pool:
        return conv.contiguous(memory_format=torch.channels_last), None
    pooled, index = F.max_pool2d(conv, 2, return_indices=True)  # index: y * W + x in the plane
    place = (index // W % 2) * 2 + index % W % 2
    code = torch.where(pooled > 0, place, 4).to(torch.int8)
    return F.relu(pooled).contiguous(memory_format=torch.channels_last), code.contiguous(
        memory_format=torch.channels_last
    )


def _conv_weight_grad(
    a: Tensor, grad: Tensor, grad_code: Tensor | None, weight_shape: torch.Size
) -> Tensor:
    """d loss / d weight, [G, C_out, C_in, 3, 3] float32, from the layer's input and the
    gradient of its output (pooled, with its codes, for a pooled layer)."""
    G, c_out, c_in = weight_shape[:3]
    n, _, H, W = a.shape
    if triton_available(a.device):
        splits = triton.cdiv(n * H * W, _WGRAD_PIXELS_PER_SPLIT)
        flat = c_in < _FLAT_K_BELOW
        block_ci = _pow2_block(9 * c_in if flat else c_in)
        block_co = _pow2_block(c_out, high=128)
        n_rows = triton.cdiv(9 * c_in, block_ci) if flat else 9 * triton.cdiv(c_in, block_ci)
        ws = torch.empty((splits, G, 9 * c_in, c_out), dtype=torch.float32, device=a.device)
        tiles = G * n_rows * triton.cdiv(c_out, block_co)
        args = (
            a, grad, grad if grad_code is None else grad_code, ws,
            n, H, W, c_in, c_out, _WGRAD_PIXELS_PER_SPLIT, *a.stride(), *grad.stride(),
        )  # fmt: skip
        meta = {
            "UNPOOL": grad_code is not None,
            "FLAT_K": flat,
            "BLOCK_CI": block_ci,
            "BLOCK_CO": block_co,
        }

        def grid(_block_m: int) -> tuple[int, int]:
            return (tiles, splits)

        if _launched(_conv_wgrad_kernel, _conv_wgrad_tuned, grid, args, meta, a.dtype):
            # Slices summed in a fixed order: a deterministic gradient (atomics would not be).
            return ws.sum(0).view(G, 3, 3, c_in, c_out).permute(0, 4, 3, 1, 2)
    if grad_code is not None:
        grad = _unpooled(grad, grad_code, (H, W))
    flat_grad = conv2d_weight(a.float(), (G * c_out, c_in, 3, 3), grad.float(), padding=1, groups=G)
    return flat_grad.view(G, c_out, c_in, 3, 3)


def _flipped(weight: Tensor) -> Tensor:
    """The input gradient of a 3x3, padding-1 convolution is the same convolution of the output
    gradient with each model's kernel transposed (C_in <-> C_out) and flipped in both axes."""
    return weight.transpose(1, 2).flip(3, 4)


def _bias_grad(grad: Tensor, code: Tensor | None, weight: Tensor) -> Tensor:
    if code is not None:
        grad = grad.masked_fill(code == 4, 0)
    G, c_out = weight.shape[:2]
    return grad.sum(dim=(0, 2, 3), dtype=torch.float32).view(G, c_out).to(weight.dtype)


@torch.library.custom_op("metro::conv3x3", mutates_args=())
def _conv3x3_op(
    a: Tensor, a_code: Tensor | None, weight: Tensor, bias: Tensor | None, height: int, width: int
) -> Tensor:
    return _conv_forward(a, a_code, weight, bias, (height, width))[0]


@_conv3x3_op.register_fake
def _(a, a_code, weight, bias, height, width):
    return _channels_last(
        (a.shape[0], weight.shape[0] * weight.shape[1], height, width), a, a.dtype
    )


@torch.library.custom_op("metro::conv3x3_pool_relu", mutates_args=())
def _conv3x3_pool_relu_op(a: Tensor, weight: Tensor, bias: Tensor) -> tuple[Tensor, Tensor]:
    out, code = _conv_forward(a, None, weight, bias, (a.shape[2], a.shape[3]), pool=True)
    assert code is not None
    return out, code


@_conv3x3_pool_relu_op.register_fake
def _(a, weight, bias):
    shape = (a.shape[0], weight.shape[0] * weight.shape[1], a.shape[2] // 2, a.shape[3] // 2)
    return _channels_last(shape, a, a.dtype), _channels_last(shape, a, torch.int8)


@torch.library.custom_op("metro::conv3x3_weight_grad", mutates_args=())
def _weight_grad_op(a: Tensor, grad: Tensor, grad_code: Tensor | None, weight: Tensor) -> Tensor:
    return _conv_weight_grad(a, grad, grad_code, weight.shape).to(weight.dtype)


@_weight_grad_op.register_fake
def _(a, grad, grad_code, weight):
    return torch.empty_like(weight, memory_format=torch.contiguous_format)


def _save_conv(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
    a, a_code, weight, _, height, width = inputs
    if a_code is not None:
        raise RuntimeError(
            "metro::conv3x3 with an unpooled input is a backward, not differentiable"
        )
    ctx.save_for_backward(a, weight)
    ctx.size = (height, width)


def _conv_backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
    a, weight = ctx.saved_tensors
    grad = grad.contiguous(memory_format=torch.channels_last)
    need_a, _, need_w, need_b = ctx.needs_input_grad[:4]
    grad_a = _conv3x3_op(grad, None, _flipped(weight), None, *ctx.size) if need_a else None
    grad_w = _weight_grad_op(a, grad, None, weight) if need_w else None
    grad_b = _bias_grad(grad, None, weight) if need_b else None
    return grad_a, None, grad_w, grad_b, None, None


def _save_pooled(ctx: Any, inputs: tuple[Tensor, Tensor, Tensor], output: Any) -> None:
    a, weight, _ = inputs
    ctx.mark_non_differentiable(output[1])
    ctx.save_for_backward(a, weight, output[1])


def _pooled_backward(ctx: Any, grad: Tensor, _grad_code: Any) -> tuple[Tensor | None, ...]:
    a, weight, code = ctx.saved_tensors
    grad = grad.contiguous(memory_format=torch.channels_last)
    need_a, need_w, need_b = ctx.needs_input_grad
    size = (a.shape[2], a.shape[3])
    grad_a = _conv3x3_op(grad, code, _flipped(weight), None, *size) if need_a else None
    grad_w = _weight_grad_op(a, grad, code, weight) if need_w else None
    grad_b = _bias_grad(grad, code, weight) if need_b else None
    return grad_a, grad_w, grad_b


_conv3x3_op.register_autograd(_conv_backward, setup_context=_save_conv)
_conv3x3_pool_relu_op.register_autograd(_pooled_backward, setup_context=_save_pooled)


def _checked(a: Tensor, weight: Tensor, bias: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """The three operands, checked, in the dtype the layer runs in: autocast's where it is on
    (a custom operator gets no autocast casts of its own), else the activation's."""
    if a.dim() != 4 or weight.dim() != 5 or weight.shape[3:] != (3, 3):
        raise ValueError(
            f"a grouped 3x3 convolution needs a [n, K*C, H, W] input and [K, C_out, C, 3, 3] "
            f"weights, got {tuple(a.shape)} and {tuple(weight.shape)}"
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
    device = a.device.type
    dtype = torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else a.dtype
    return a.to(dtype), weight.to(dtype), bias.to(dtype)


def grouped_conv3x3(a: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    """K independent 3x3 convolutions (padding 1): ``a`` [n, K*C, H, W] holds model k's C
    channels at k*C..(k+1)*C, ``weight`` is [K, C_out, C, 3, 3] and ``bias`` [K, C_out]; returns
    [n, K*C_out, H, W] in channels-last memory. Differentiable in all three."""
    a, weight, bias = _checked(a, weight, bias)
    return _conv3x3_op(a, None, weight, bias, a.shape[2], a.shape[3])


def grouped_conv3x3_pool_relu(a: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    """``relu(max_pool2d(grouped_conv3x3(a, weight, bias), 2))`` in one pass: the full-size
    convolution is never written, only the pooled maps and a byte per pooled value saying where
    its maximum was (and whether the ReLU passed it), which the backward routes the gradient
    through. [n, K*C_out, H//2, W//2], channels-last."""
    a, weight, bias = _checked(a, weight, bias)
    return _conv3x3_pool_relu_op(a, weight, bias)[0]
