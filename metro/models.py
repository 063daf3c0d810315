"""Hypothesis sets: K independent models stacked so that one pass over the data serves all K.

A METRO search fits one cost-sensitive model per lambda. The K models of a :class:`StackedModel`
share nothing but their input: every parameter has one slice per model, so the K fits stay
independent (the gradient of a sum of per-model losses with respect to model k's slice is the
gradient of model k's own loss), while the data is read once per batch for all of them.

Layouts (per-model shape, stacked with K in front unless noted):

* ``linear``: ``weight`` [d, K] (K last, so ``z @ weight`` is one GEMM), ``bias`` [K].
* ``mlp``: ``hidden{i}_weight`` [K, d_in, d_out], ``hidden{i}_bias`` [K, d_out], then
  ``out_weight`` [K, d_last], ``out_bias`` [K]; evaluated with batched matrix products.
* ``cnn3``: ``conv{1,2,3}_weight`` [K, c_out, c_in, 3, 3], ``conv{1,2,3}_bias`` [K, c_out],
  ``head_weight`` [K, c3], ``head_bias`` [K].

Input standardization is part of the model (buffers ``mean`` and ``std``, per feature for
flattened inputs and per channel for images), so a saved model scores raw inputs.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from metro.grouped_conv import grouped_conv3x3, grouped_conv3x3_pool_relu
from metro.options import option

__all__ = [
    "CNN3_LAYERS",
    "CONV_STACKINGS",
    "MAX_CHANNELS",
    "MAX_HIDDEN_LAYERS",
    "MAX_LAYER_WIDTH",
    "MODEL_KINDS",
    "ModelSpec",
    "StackedModel",
    "build_model",
    "concatenate",
    "get_model_spec",
]

MODEL_KINDS: tuple[str, ...] = ("linear", "mlp", "cnn3")

# The sizes a spec may ask for, so that every accepted spec describes a network a worker can
# build and a spec stays small: an mlp has 1 to MAX_HIDDEN_LAYERS hidden layers of at most
# MAX_LAYER_WIDTH units (two such layers are 4.3e9 weights per model, far past any budget a
# service sets, see core.config.Settings.max_model_parameters); cnn3 has CNN3_LAYERS conv layers
# of at most MAX_CHANNELS channels. Deeper or wider models than these are not what the paper's
# hypothesis sets are about.
MAX_HIDDEN_LAYERS = 32
MAX_LAYER_WIDTH = 65_536
CNN3_LAYERS = 3
MAX_CHANNELS = 4_096

# Two max-pools of 2 halve the image twice; a side under 4 would pool to nothing.
_MIN_IMAGE_SIDE = 4
# Rows per chunk when computing the standardization statistics (bounds the float64 copy).
_STATS_CHUNK_ROWS = 8192
# How K conv stacks are evaluated, by device type, chosen by measurement (forward + backward):
# * CPU (2 cores, K=8, 64 images 3x32x32, channels 32/64/128): a loop over the K models 270 ms,
#   one grouped convolution per layer (groups=K) 380 ms, torch.func.vmap (which also lowers to
#   grouped convolutions) 540 ms; channels_last made the grouped/vmap paths 2-5x slower still.
#   oneDNN's grouped kernels are not tuned for this shape. The loop also makes model k of a stack
#   bit-identical to a K=1 model on CPU.
# * CPU, small images (1 thread, batch 64, forward + backward): the grouped path wins where the
#   per-kernel overhead dominates. 8x8 (digits), channels 8/16/32, K=21: 13 ms grouped against
#   35 ms loop; 8x8, 32/64/128, K=8: 32 against 48; 16x16, 8/16/32, K=21: 44 against 89;
#   16x16, 16/32/64, K=4: 22 against 27. At 32x32 the loop wins once the channels are wider
#   (16/32/64, K=21: 551 loop against 588; 32/64/128, K=21: 1302 against 2219).
# * CUDA (bf16 autocast, channels-last, K=21, batch 1024 3x32x32, channels 32/64/128, one whole
#   SGD step, bench/gpu.py; docs/benchmarks.md has the table): the grouped convolution of layer
#   3 is cuDNN's slowest kernel there (one implicit-GEMM launch per model, ~25 ms of a 34 ms
#   step), so layer 3 runs one dense convolution per model ("split") and layer 2 stays grouped:
#   33.2 ms against 34.5 all grouped, 36.2 all split, 44.9 the whole loop, 54.8 im2col + batched
#   GEMM (H200); under torch.compile 22.7 against 25.6 all grouped. metro.grouped_conv's Triton
#   kernels ("triton-conv": 32.1 ms against 35.4 for grouped/split, H100) and their fused
#   convolution + pool + ReLU form ("triton", not yet timed on a card) are not the default until
#   a device run of the code as it is now passes their tests and times them faster
#   (docs/benchmarks.md, "Triton kernels").
_CNN_STACKING: dict[str, str] = {"cpu": "by_size", "cuda": "grouped/split"}
# How layers 2 and 3 of a stack convolve each model's channels (a _CNN_STACKING value names one
# for both, or "second/third" per layer): one grouped convolution (groups=K), an im2col and one
# batched GEMM over the K models, one dense convolution per model on its channel slice, or
# metro.grouped_conv's Triton implicit GEMM ("triton-conv"; PyTorch's grouped convolution where
# Triton is missing). "triton" for layer 2 also runs layers 1 and 2 as that module's fused
# convolution + max-pool + ReLU kernels.
CONV_STACKINGS: tuple[str, ...] = ("grouped", "gemm", "split", "triton", "triton-conv")
# "by_size": images with at most this many pixels take the grouped path, larger ones the loop.
_GROUPED_MAX_PIXELS = 16 * 16


def _sizes(
    value: Any,
    field_name: str,
    *,
    max_len: int | None = None,
    exact_len: int | None = None,
    max_size: int | None = None,
) -> tuple[int, ...]:
    """A non-empty tuple of positive ints (at most ``max_len`` of them, or exactly
    ``exact_len``, each at most ``max_size``), or a ValueError naming the field. The length is
    checked first, so that a list of a million sizes is refused without reading it."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence | np.ndarray):
        raise ValueError(f"{field_name} must be a sequence of positive integers, got {value!r}")
    if exact_len is not None and len(value) != exact_len:
        raise ValueError(
            f"{field_name} must have exactly {exact_len} sizes (one per layer), got {len(value)}"
        )
    if max_len is not None and len(value) > max_len:
        raise ValueError(f"{field_name} may hold at most {max_len} sizes, got {len(value)}")
    sizes: list[int] = []
    for v in value:
        if isinstance(v, bool):
            raise ValueError(f"{field_name} must hold positive integers, got {v!r}")
        try:
            size = operator.index(v)
        except TypeError:
            raise ValueError(f"{field_name} must hold positive integers, got {v!r}") from None
        if size <= 0:
            raise ValueError(f"{field_name} must hold positive integers, got {size}")
        if max_size is not None and size > max_size:
            raise ValueError(f"{field_name} sizes must be at most {max_size}, got {size}")
        sizes.append(size)
    if not sizes:
        raise ValueError(f"{field_name} must not be empty")
    return tuple(sizes)


def _input_shape(value: Any) -> tuple[int, ...]:
    try:
        return _sizes(value, "input_shape")
    except ValueError as exc:
        raise ValueError(f"{exc} (the shape of one example, without the batch dimension)") from None


# The sizes each kind reads (to_dict keeps, check_sizes_used accepts); the others are not part
# of it.
_SIZES_OF: dict[str, tuple[str, ...]] = {"linear": (), "mlp": ("hidden",), "cnn3": ("channels",)}


@dataclass(frozen=True)
class ModelSpec:
    """The hypothesis set: its kind and sizes (``hidden`` is used by mlp, ``channels`` by cnn3)."""

    kind: str = option(
        "linear", "linear, mlp or cnn3 (in any case)", choices=MODEL_KINDS, any_case=True
    )
    hidden: tuple[int, ...] = option(
        (64,),
        "mlp: the widths of its hidden layers",
        min_items=1,
        max_items=MAX_HIDDEN_LAYERS,
        item_ge=1,
        item_le=MAX_LAYER_WIDTH,
    )
    channels: tuple[int, int, int] = option(
        (32, 64, 128),
        "cnn3: the channels of its three conv layers",
        min_items=CNN3_LAYERS,
        max_items=CNN3_LAYERS,
        item_ge=1,
        item_le=MAX_CHANNELS,
    )

    def __post_init__(self) -> None:
        if isinstance(self.kind, str):  # a name, taken in any case (its option says so)
            object.__setattr__(self, "kind", self.kind.lower())
        if not isinstance(self.kind, str) or self.kind not in MODEL_KINDS:
            raise ValueError(
                f"unknown model kind {self.kind!r}; expected one of {', '.join(MODEL_KINDS)}"
            )
        hidden = _sizes(self.hidden, "hidden", max_len=MAX_HIDDEN_LAYERS, max_size=MAX_LAYER_WIDTH)
        object.__setattr__(self, "hidden", hidden)
        channels = _sizes(self.channels, "channels", exact_len=CNN3_LAYERS, max_size=MAX_CHANNELS)
        object.__setattr__(self, "channels", channels)

    def check_input(self, input_shape: tuple[int, ...]) -> None:
        """Raise ValueError unless examples of this shape fit the model: cnn3 needs (C, H, W)
        images with sides of at least 4; linear and mlp flatten any shape."""
        shape = _input_shape(input_shape)
        if self.kind != "cnn3":
            return
        if len(shape) != 3:
            raise ValueError(
                f"model kind 'cnn3' needs image inputs of shape (C, H, W), got {shape}"
            )
        if min(shape[1:]) < _MIN_IMAGE_SIDE:
            raise ValueError(
                f"model kind 'cnn3' needs images of at least {_MIN_IMAGE_SIDE}x{_MIN_IMAGE_SIDE} "
                f"(it max-pools twice), got {shape[1]}x{shape[2]}"
            )

    def n_parameters(self, n_inputs: int | None = None) -> int:
        """The trainable parameters of one model, counted without building anything (a stack of
        K models has K times as many). ``n_inputs`` is what the first layer reads: the features
        of one example (flattened) for linear and mlp, its channels for cnn3 (the image's sides
        do not matter). ``None``: one, the fewest any data gives, a lower bound for when the
        data is not known yet."""
        (n,) = _sizes([1 if n_inputs is None else n_inputs], "n_inputs")
        shape = (n, _MIN_IMAGE_SIDE, _MIN_IMAGE_SIDE) if self.kind == "cnn3" else (n,)
        return sum(math.prod(s) for s in _per_model_shapes(self, shape).values())

    def to_dict(self) -> dict[str, Any]:
        """The kind and the sizes it uses: a linear model has neither ``hidden`` nor
        ``channels``, an mlp no ``channels``, a cnn3 no ``hidden`` (:meth:`from_dict` fills in
        the defaults of the unused ones, which nothing reads)."""
        return {
            "kind": self.kind,
            **{size: list(getattr(self, size)) for size in _SIZES_OF[self.kind]},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelSpec:
        if not isinstance(data, Mapping):
            raise ValueError(f"a model spec must be a mapping, got {type(data).__name__}")
        unknown = set(data) - {"kind", "hidden", "channels"}
        if unknown:
            raise ValueError(f"unknown model spec field(s) {sorted(unknown)}")
        return cls(**dict(data))


def get_model_spec(kind: str | ModelSpec, **params: Any) -> ModelSpec:
    """A ModelSpec from a kind name and its sizes, or the given spec unchanged."""
    if isinstance(kind, ModelSpec):
        if params:
            raise ValueError("sizes can only be given with a model kind name")
        return kind
    if not isinstance(kind, str):
        raise ValueError(f"model must be a kind name or a ModelSpec, got {type(kind).__name__}")
    unknown = set(params) - {"hidden", "channels"}
    if unknown:
        raise ValueError(f"model kind {kind!r} takes no parameter(s) {sorted(unknown)}")
    check_sizes_used({"kind": kind.lower(), **params})
    return ModelSpec(kind.lower(), **params)


def check_sizes_used(spec: Mapping[str, Any]) -> None:
    """Raise ValueError where a model spec as a user gave it names a size its kind does not
    have: ``{"kind": "mlp", "channels": ...}`` trained the default mlp and said nothing.
    (:meth:`ModelSpec.from_dict` itself reads specs stored with every kind's sizes.)"""
    kind = spec.get("kind")
    if not isinstance(kind, str) or kind not in _SIZES_OF:
        return  # the kind's own check names it
    unused = sorted(set(spec) - {"kind"} - set(_SIZES_OF[kind]))
    if unused:
        used = _SIZES_OF[kind]
        takes = f"their only size is {used[0]!r}" if used else "they have no sizes"
        raise ValueError(f"{kind!r} models have no {' or '.join(map(repr, unused))}: {takes}")


def _per_model_shapes(spec: ModelSpec, input_shape: tuple[int, ...]) -> dict[str, tuple[int, ...]]:
    """Parameter name -> shape of one model's slice, in a fixed order (the init order)."""
    if spec.kind == "linear":
        return {"weight": (math.prod(input_shape),), "bias": ()}
    if spec.kind == "mlp":
        shapes: dict[str, tuple[int, ...]] = {}
        d_in = math.prod(input_shape)
        for i, d_out in enumerate(spec.hidden):
            shapes[f"hidden{i}_weight"] = (d_in, d_out)
            shapes[f"hidden{i}_bias"] = (d_out,)
            d_in = d_out
        shapes["out_weight"] = (d_in,)
        shapes["out_bias"] = ()
        return shapes
    c_in = input_shape[0]
    shapes = {}
    for i, c_out in enumerate(spec.channels, start=1):
        shapes[f"conv{i}_weight"] = (c_out, c_in, 3, 3)
        shapes[f"conv{i}_bias"] = (c_out,)
        c_in = c_out
    shapes["head_weight"] = (c_in,)
    shapes["head_bias"] = ()
    return shapes


def _fan_in(name: str, shapes: Mapping[str, tuple[int, ...]]) -> int:
    """Inputs per unit of the layer that owns ``name`` (for PyTorch's default init bound)."""
    weight_shape = shapes[name.removesuffix("bias").removesuffix("weight") + "weight"]
    if len(weight_shape) == 4:  # conv: c_in * 3 * 3
        return math.prod(weight_shape[1:])
    return weight_shape[0]


class StackedModel(torch.nn.Module):
    """K independent models evaluated together; ``forward(x)`` returns scores h(x), [n, K].

    Build one with :func:`build_model` (initialized, with input statistics) or
    :meth:`from_tensors` (saved weights); the constructor makes a zero-initialized stack.
    """

    mean: Tensor
    std: Tensor

    def __init__(self, spec: ModelSpec, *, input_shape: tuple[int, ...], n_models: int) -> None:
        super().__init__()
        if not isinstance(spec, ModelSpec):
            raise ValueError(f"spec must be a ModelSpec, got {type(spec).__name__}")
        shape = _input_shape(input_shape)
        spec.check_input(shape)
        if isinstance(n_models, bool) or not isinstance(n_models, int) or n_models < 1:
            raise ValueError(f"n_models must be a positive integer, got {n_models!r}")
        self.spec = spec
        self.input_shape = shape
        self.n_models = n_models
        self._shapes = _per_model_shapes(spec, shape)
        for name in self._shapes:
            stacked = torch.zeros(self._stacked_shape(name))
            self.register_parameter(name, torch.nn.Parameter(stacked))
        n_stats = shape[0] if spec.kind == "cnn3" else math.prod(shape)
        self.register_buffer("mean", torch.zeros(n_stats))
        self.register_buffer("std", torch.ones(n_stats))

    # -- layout ---------------------------------------------------------------------------------
    def _stacked_shape(self, name: str) -> tuple[int, ...]:
        if self.spec.kind == "linear" and name == "weight":
            return (*self._shapes[name], self.n_models)
        return (self.n_models, *self._shapes[name])

    def per_model_shapes(self) -> dict[str, tuple[int, ...]]:
        """Parameter name -> shape of one model's slice."""
        return dict(self._shapes)

    def unstack(self, name: str, tensor: Tensor) -> Tensor:
        """A tensor laid out like parameter ``name``, viewed as [K, *per-model shape]."""
        if self.spec.kind == "linear" and name == "weight":
            return tensor.transpose(0, 1)
        return tensor

    def restack(self, name: str, per_model: Tensor) -> Tensor:
        """Inverse of :meth:`unstack`: [K', *per-model shape] -> the layout of ``name``."""
        if self.spec.kind == "linear" and name == "weight":
            return per_model.transpose(0, 1)
        return per_model

    @staticmethod
    def is_weight(name: str) -> bool:
        """Weights take weight decay; biases (and the mean/std buffers) do not."""
        return name.endswith("weight")

    # -- evaluation -----------------------------------------------------------------------------
    def standardize(self, x: Tensor) -> Tensor:
        """(x - mean) / std; flattened to [n, d] for linear/mlp, [n, C, H, W] for cnn3."""
        if tuple(x.shape[1:]) != self.input_shape:
            raise ValueError(
                f"inputs must have shape [n, {', '.join(map(str, self.input_shape))}], "
                f"got {list(x.shape)}"
            )
        if self.spec.kind == "cnn3":
            return (x - self.mean[:, None, None]) / self.std[:, None, None]
        return (x.flatten(1) - self.mean) / self.std

    def forward(self, x: Tensor, *, standardized: bool = False) -> Tensor:
        """Scores [n, K]. ``standardized=True`` means x is already ``self.standardize(x)``
        (lets a trainer standardize a resident training set once, or augment after it)."""
        z = x if standardized else self.standardize(x)
        if self.spec.kind == "linear":
            p = dict(self.named_parameters())
            return torch.addmm(p["bias"], z, p["weight"])
        if self.spec.kind == "mlp":
            return self._mlp(z)
        how = self._cnn_stacking(z)
        if isinstance(how, str):  # "loop"
            return self._cnn_loop(z)
        return self._cnn_stacked(z, how)

    @staticmethod
    def _cnn_stacking(z: Tensor) -> str | tuple[str, str]:
        """ "loop", or how layers 2 and 3 are stacked, from ``_CNN_STACKING``."""
        how = _CNN_STACKING.get(z.device.type, "loop")
        if how == "by_size":
            how = "grouped" if z.shape[-2] * z.shape[-1] <= _GROUPED_MAX_PIXELS else "loop"
        if how == "loop":
            return how
        second, _, third = how.partition("/")
        layers = (second, third or second)
        if not set(layers) <= set(CONV_STACKINGS):
            raise ValueError(f"unknown cnn3 stacking {how!r}")
        return layers

    def _mlp(self, z: Tensor) -> Tensor:
        params = dict(self.named_parameters())
        # [n, d] @ [K, d, h] broadcasts to one batched GEMM; activations stay [K, n, h] so every
        # later layer is a plain bmm (measured faster on CPU than einsum or torch.func.vmap).
        a = torch.relu(torch.matmul(z, params["hidden0_weight"]) + params["hidden0_bias"][:, None])
        for i in range(1, len(self.spec.hidden)):
            w, b = params[f"hidden{i}_weight"], params[f"hidden{i}_bias"]
            a = torch.relu(torch.baddbmm(b[:, None, :], a, w))
        out = torch.baddbmm(params["out_bias"][:, None, None], a, params["out_weight"][:, :, None])
        return out.squeeze(2).transpose(0, 1)

    def _cnn_loop(self, z: Tensor) -> Tensor:
        p = dict(self.named_parameters())

        def conv(a: Tensor, layer: int, k: int) -> Tensor:
            w, b = p[f"conv{layer}_weight"][k], p[f"conv{layer}_bias"][k]
            return F.conv2d(a, w, b, padding=1)

        scores = []
        for k in range(self.n_models):
            a = _pool_relu(conv(z, 1, k))
            a = _pool_relu(conv(a, 2, k))
            a = F.relu(conv(a, 3, k))
            scores.append(a.mean(dim=(2, 3)) @ p["head_weight"][k] + p["head_bias"][k])
        return torch.stack(scores, dim=1)

    def _cnn_stacked(self, z: Tensor, layers: tuple[str, str]) -> Tensor:
        """All K models in one pass per layer. The first layer sees the same input for every
        model: one dense convolution with K*c1 outputs (a grouped one on the input repeated K
        times, without the repeat). Layers 2 and 3 convolve each model's own channels, the way
        ``layers`` names (see :data:`CONV_STACKINGS`)."""
        p = dict(self.named_parameters())
        K = self.n_models
        w1, b1 = p["conv1_weight"].flatten(0, 1), p["conv1_bias"].flatten()
        if layers[0] == "triton":
            # Convolution, max-pool and ReLU of layers 1 and 2 in one kernel each: the full-size
            # maps (the first is the step's largest tensor) are never written.
            a = grouped_conv3x3_pool_relu(z, w1[None], b1[None])
            a = grouped_conv3x3_pool_relu(a, p["conv2_weight"], p["conv2_bias"])
        else:
            a = _pool_relu(F.conv2d(z, w1, b1, padding=1))
            a = _pool_relu(_stacked_conv3x3(a, p["conv2_weight"], p["conv2_bias"], layers[0]))
        a = F.relu(_stacked_conv3x3(a, p["conv3_weight"], p["conv3_bias"], layers[1]))
        pooled = a.mean(dim=(2, 3)).view(z.shape[0], K, -1)
        return (pooled * p["head_weight"]).sum(-1) + p["head_bias"]

    # -- copies and serialization ---------------------------------------------------------------
    def select(self, indices: Sequence[int]) -> StackedModel:
        """A new stack (a copy) holding the models at ``indices``, in that order; repeats allowed
        (``select([0] * K)`` broadcasts one model to K copies)."""
        if isinstance(indices, str | bytes) or not isinstance(indices, Sequence | np.ndarray):
            raise ValueError(f"indices must be a sequence of model indices, got {indices!r}")
        idx: list[int] = []
        for i in indices:
            try:
                j = operator.index(i)
            except TypeError:
                raise ValueError(f"model indices must be integers, got {i!r}") from None
            if not -self.n_models <= j < self.n_models:
                raise ValueError(f"model index {j} out of range for a stack of {self.n_models}")
            idx.append(j % self.n_models)
        if not idx:
            raise ValueError("select needs at least one model index")
        ref = self.mean
        new = StackedModel(self.spec, input_shape=self.input_shape, n_models=len(idx))
        new = new.to(ref.device, ref.dtype)
        index = torch.tensor(idx, device=ref.device)
        with torch.no_grad():
            new.mean.copy_(self.mean)
            new.std.copy_(self.std)
            for name, param in self.named_parameters():
                chosen = self.unstack(name, param).index_select(0, index)
                getattr(new, name).copy_(new.restack(name, chosen))
        return new.train(self.training)

    @property
    def last_bias_name(self) -> str:
        """The parameter holding each model's output offset (one scalar per model)."""
        return list(_per_model_shapes(self.spec, self.input_shape))[-1]

    def shifted(self, offset: float) -> StackedModel:
        """A copy whose scores are all ``offset`` higher: ``h(x) - t >= 0`` becomes the model's own
        sign when ``offset = -t``, so a tuned decision threshold travels inside the model file
        (safetensors, ONNX, the prediction endpoint) with no extra field."""
        if not math.isfinite(float(offset)):
            raise ValueError(f"offset must be finite, got {offset!r}")
        new = self.select(list(range(self.n_models)))
        with torch.no_grad():
            getattr(new, self.last_bias_name).add_(float(offset))
        return new

    def tensors(self) -> dict[str, Tensor]:
        """Every parameter and buffer as a contiguous CPU tensor (a copy), for safetensors."""
        return {
            name: t.detach().to("cpu", copy=True).contiguous()
            for name, t in self.state_dict().items()
        }

    @classmethod
    def from_tensors(
        cls,
        spec: ModelSpec | Mapping[str, Any],
        input_shape: tuple[int, ...],
        tensors: Mapping[str, Tensor | np.ndarray],
    ) -> StackedModel:
        """Rebuild a stack from :meth:`tensors` output (the exact inverse)."""
        model_spec = spec if isinstance(spec, ModelSpec) else ModelSpec.from_dict(spec)
        shape = _input_shape(input_shape)
        model_spec.check_input(shape)
        if not isinstance(tensors, Mapping):
            raise ValueError(
                f"tensors must be a mapping of name -> tensor, got {type(tensors).__name__}"
            )
        expected = [*_per_model_shapes(model_spec, shape), "mean", "std"]
        missing = set(expected) - set(tensors)
        unknown = set(tensors) - set(expected)
        if missing or unknown:
            raise ValueError(
                f"tensors do not match a {model_spec.kind} model: "
                f"missing {sorted(missing)}, unexpected {sorted(unknown)}"
            )
        # The last bias holds one scalar per model in every kind.
        last_bias = torch.as_tensor(tensors[expected[-3]])
        if last_bias.ndim != 1 or last_bias.numel() < 1:
            raise ValueError(f"{expected[-3]} must be a 1-D tensor with one entry per model")
        model = cls(model_spec, input_shape=shape, n_models=int(last_bias.numel()))
        state = model.state_dict()
        with torch.no_grad():
            for name in expected:
                value = torch.as_tensor(tensors[name])
                if not value.is_floating_point():
                    raise ValueError(f"tensor {name!r} must be floating point, got {value.dtype}")
                if tuple(value.shape) != tuple(state[name].shape):
                    raise ValueError(
                        f"tensor {name!r} has shape {list(value.shape)}, "
                        f"expected {list(state[name].shape)}"
                    )
                state[name].copy_(value)
        return model.eval()

    def extra_repr(self) -> str:
        return f"kind={self.spec.kind!r}, input_shape={self.input_shape}, n_models={self.n_models}"


def concatenate(models: Sequence[StackedModel]) -> StackedModel:
    """One stack holding every model of ``models``, in order (a copy): the models of a
    multi-class fit, one per class, saved and served as one file whose K scores are the
    classes'. They must share the kind, the sizes and the input shape. A stack has one
    standardization; models fitted with different statistics are re-expressed on the first
    model's where that is exact (linear: ``w' = w * std / std_k``, the bias absorbing the mean),
    and refused otherwise."""
    if not models:
        raise ValueError("concatenate needs at least one model")
    first = models[0]
    for model in models[1:]:
        if model.spec != first.spec or model.input_shape != first.input_shape:
            raise ValueError("only models of one kind, sizes and input shape can be concatenated")
    total = sum(m.n_models for m in models)
    out = StackedModel(first.spec, input_shape=first.input_shape, n_models=total)
    mean, std = first.mean.detach().cpu(), first.std.detach().cpu()
    parts: dict[str, list[Tensor]] = {name: [] for name, _ in out.named_parameters()}
    for model in models:
        m = model.to("cpu", torch.float32)
        params = {name: p.detach().clone() for name, p in m.named_parameters()}
        same = torch.equal(m.mean.cpu(), mean) and torch.equal(m.std.cpu(), std)
        if not same:
            if first.spec.kind != "linear":
                raise ValueError(
                    "models standardized with different statistics can be concatenated only "
                    "when linear"
                )
            # ((x - m_k) / s_k) w = ((x - m) / s) (w s / s_k) + ((m - m_k) / s_k) w
            w = params["weight"]  # [d, K_k]
            ratio = (std / m.std.cpu())[:, None]
            params["bias"] = params["bias"] + (((mean - m.mean.cpu()) / m.std.cpu()) @ w)
            params["weight"] = w * ratio
        for name in parts:
            parts[name].append(m.unstack(name, params[name]))
    with torch.no_grad():
        out.mean.copy_(mean)
        out.std.copy_(std)
        for name, pieces in parts.items():
            getattr(out, name).copy_(out.restack(name, torch.cat(pieces, dim=0)))
    return out.eval()


def _pool_relu(a: Tensor) -> Tensor:
    """relu(max_pool(a)), which equals the network's max_pool(relu(a)) (relu is monotone), with
    the ReLU and its backward on a quarter of the activations: the first layer's output is the
    largest tensor of a K-stack step."""
    return F.relu(F.max_pool2d(a, 2))


def _stacked_conv3x3(a: Tensor, weight: Tensor, bias: Tensor, how: str) -> Tensor:
    """K independent 3x3 convolutions (padding 1): model k's ``weight[k]`` [C_out, C, 3, 3] and
    ``bias[k]`` on its channels k*C..(k+1)*C of ``a`` [n, K*C, H, W]; [n, K*C_out, H, W]."""
    K = weight.shape[0]
    if how == "grouped":
        return F.conv2d(a, weight.flatten(0, 1), bias.flatten(), padding=1, groups=K)
    if how == "gemm":
        return _conv3x3_gemm(a, weight, bias)
    if how in ("triton", "triton-conv"):
        return grouped_conv3x3(a, weight, bias)
    # "split": one dense convolution per model on its slice of the channels.
    return torch.cat(
        [F.conv2d(x, w, b, padding=1) for x, w, b in zip(a.chunk(K, 1), weight, bias, strict=True)],
        dim=1,
    )


def _conv3x3_gemm(a: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    """K independent 3x3 convolutions (padding 1) of ``a`` [n, K*C, H, W], whose channels hold
    model k's C channels at k*C..(k+1)*C, with ``weight`` [K, C_out, C, 3, 3] and ``bias``
    [K, C_out]: the nine shifted copies of each model's input are gathered once into
    [K, n*H*W, 9*C] (a K-major im2col) and multiplied by the weights in one ``baddbmm``.
    Returns [n, K*C_out, H, W] in channels-last memory (what a grouped convolution returns)."""
    K, c_out, c_in = weight.shape[:3]
    n, _, H, W = a.shape
    x = a.permute(0, 2, 3, 1).reshape(n, H, W, K, c_in)  # a view when a is channels-last
    x = F.pad(x, (0, 0, 0, 0, 1, 1, 1, 1))  # zero rows and columns around each image
    taps = [x[:, i : i + H, j : j + W].permute(3, 0, 1, 2, 4) for i in range(3) for j in range(3)]
    cols = torch.stack(taps, dim=4).view(K, n * H * W, 9 * c_in)  # [K, (n,y,x), (i,j,c)]
    w = weight.permute(0, 3, 4, 2, 1).reshape(K, 9 * c_in, c_out)  # [K, (i,j,c), c_out]
    out = torch.baddbmm(bias[:, None, :].to(cols.dtype), cols, w.to(cols.dtype))
    out = out.view(K, n, H, W, c_out).permute(1, 2, 3, 0, 4).reshape(n, H, W, K * c_out)
    return out.permute(0, 3, 1, 2)


def _as_tensor(X: np.ndarray | Tensor) -> Tensor:
    if isinstance(X, Tensor):
        return X.detach()
    arr = np.asarray(X)
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"X must hold real numbers, got dtype {arr.dtype}")
    return torch.from_numpy(np.ascontiguousarray(arr))


def _feature_stats(X: Tensor, *, per_channel: bool) -> tuple[Tensor, Tensor]:
    """Mean and (population) std per feature or per channel, in float64, two passes over row
    chunks so a large image set is never copied whole. A feature whose values are all equal gets
    std 1: comparing min and max is exact, where a computed variance of a constant float32 column
    is only zero up to round-off."""
    n = X.shape[0]

    def rows(start: int) -> Tensor:
        chunk = X[start : start + _STATS_CHUNK_ROWS].to(torch.float64)
        if per_channel:  # [m, C, H, W] -> [m * H * W, C]
            return chunk.transpose(0, 1).reshape(chunk.shape[1], -1).T
        return chunk.reshape(chunk.shape[0], -1)

    total: Tensor | None = None
    lo: Tensor | None = None
    hi: Tensor | None = None
    count = 0
    for start in range(0, n, _STATS_CHUNK_ROWS):
        r = rows(start)
        count += r.shape[0]
        s, mn, mx = r.sum(0), r.amin(0), r.amax(0)
        total = s if total is None else total + s
        lo = mn if lo is None else torch.minimum(lo, mn)
        hi = mx if hi is None else torch.maximum(hi, mx)
    assert total is not None and lo is not None and hi is not None
    mean = total / count
    sq = torch.zeros_like(mean)
    for start in range(0, n, _STATS_CHUNK_ROWS):
        sq += (rows(start) - mean).square().sum(0)
    std = torch.sqrt(sq / count).to(torch.float32)
    std = torch.where((hi == lo) | (std == 0), torch.ones_like(std), std)
    return mean.to(torch.float32).cpu(), std.cpu()


def build_model(
    spec: ModelSpec,
    *,
    input_shape: tuple[int, ...],
    n_models: int,
    X_stats: np.ndarray | Tensor | None = None,
    seed: int = 0,
) -> StackedModel:
    """A freshly initialized stack of ``n_models`` identical models.

    Every model gets the same initial parameters (model k equals a K=1 model built with the same
    seed), so the K fits of a search differ only by their cost tables and stay comparable.
    Linear models start at zero (the problem is convex); mlp and cnn3 layers use PyTorch's
    default init, U(-1/sqrt(fan_in), 1/sqrt(fan_in)), drawn from a generator seeded with
    ``seed`` (the global RNG is not touched). ``X_stats`` ([n, *input_shape]) sets the
    standardization; without it the model sees raw inputs (mean 0, std 1).
    """
    if not isinstance(spec, ModelSpec):
        raise ValueError(f"spec must be a ModelSpec, got {type(spec).__name__}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    model = StackedModel(spec, input_shape=input_shape, n_models=n_models)
    if spec.kind != "linear":
        gen = torch.Generator().manual_seed(int(seed))
        shapes = model.per_model_shapes()
        with torch.no_grad():
            for name, shape in shapes.items():
                bound = 1.0 / math.sqrt(_fan_in(name, shapes))
                one = (torch.rand(shape, generator=gen, dtype=torch.float64) * 2 - 1) * bound
                stacked = one.to(torch.float32).expand(n_models, *shape)
                getattr(model, name).copy_(model.restack(name, stacked))
    if X_stats is not None:
        X = _as_tensor(X_stats)
        if X.ndim < 2 or tuple(X.shape[1:]) != model.input_shape or X.shape[0] < 1:
            raise ValueError(
                f"X_stats must have shape [n >= 1, {', '.join(map(str, model.input_shape))}], "
                f"got {list(X.shape)}"
            )
        if X.is_floating_point() and not bool(torch.isfinite(X).all()):
            raise ValueError("X_stats must be finite (found NaN or infinity)")
        mean, std = _feature_stats(X, per_channel=spec.kind == "cnn3")
        with torch.no_grad():
            model.mean.copy_(mean)
            model.std.copy_(std)
    return model
