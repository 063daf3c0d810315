"""Loading trained models from the artifact store and scoring rows with them.

Model artifact format, version 1 (what workers write and ``metro.serialization`` must match)
----------------------------------------------------------------------------------------------
A model is a directory or object-store prefix holding

``model.safetensors``
    A flat dict of float32 tensors (``safetensors.torch.save_file``). ``d`` is the number of
    features:

    * every kind: ``mean`` [d] and ``std`` [d] (std > 0); the model sees ``(x - mean) / std``.
    * ``kind: "linear"``: ``weight`` [d, 1] and ``bias`` [1]; ``score = z @ weight + bias``.
    * ``kind: "mlp"``: ``layers.{i}.weight`` [out_i, in_i] and ``layers.{i}.bias`` [out_i] for
      i = 0..L (``torch.nn.Linear`` layout), ``in_0 = d``, ``out_L = 1``, ReLU between layers.
``manifest.json``
    ``{"format_version": 1,
       "architecture": {"kind": "linear"} | {"kind": "mlp", "hidden": [64], "activation": "relu"},
       "n_features": d, "feature_names": [..d names..] | null,
       "metric": {...normalized metric spec of the job...}, "lambda_star": float | null,
       "threshold": 0.0, "labels": {"positive": <label>, "negative": <label>},
       "weights_sha256": "<hex SHA-256 of model.safetensors>"}``
    Unknown keys are kept and shown to clients (``GET /v1/models/{id}``).
``model.onnx`` (optional)
    The same function exported to ONNX, input ``[n, d]`` float32, output ``[n, 1]`` scores.

A row is labelled positive when its score is strictly greater than ``threshold``.

The loaded-model cache is keyed by ``(model id, weights sha256)``: a model row never changes its
weights, and if it ever did the new digest would miss the cache instead of serving stale weights.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from service import artifacts
from service.artifacts import ArtifactError
from service.errors import FieldError, InvalidInputError

FORMAT_VERSION = 1
SUPPORTED_KINDS = ("linear", "mlp")
_FLOAT32_MAX = float(np.finfo(np.float32).max)
INVALID_ROWS = "Invalid prediction request"


@dataclass(frozen=True)
class LoadedModel:
    module: nn.Module
    manifest: dict[str, Any]
    n_features: int
    feature_names: tuple[str, ...] | None
    threshold: float
    positive_label: Any
    negative_label: Any


class _Standardized(nn.Module):
    def __init__(self, mean: torch.Tensor, std: torch.Tensor, body: nn.Module) -> None:
        super().__init__()
        self.register_buffer("mean", mean)
        self.register_buffer("std", std)
        self.body = body

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body((x - self.mean) / self.std)


def build_module(manifest: dict[str, Any], tensors: dict[str, torch.Tensor]) -> nn.Module:
    """The scoring module (``forward(x [n, d]) -> [n, 1]``) for a version-1 artifact."""
    arch = manifest.get("architecture") or {}
    kind = arch.get("kind")
    d = int(manifest["n_features"])
    mean, std = tensors["mean"].float(), tensors["std"].float()
    if mean.shape != (d,) or std.shape != (d,) or not bool((std > 0).all()):
        raise ArtifactError("mean/std tensors do not match the manifest")
    if kind == "linear":
        weight, bias = tensors["weight"].float(), tensors["bias"].float()
        if weight.shape != (d, 1) or bias.shape != (1,):
            raise ArtifactError("linear weight/bias shapes do not match the manifest")
        layer = nn.Linear(d, 1)
        with torch.no_grad():
            layer.weight.copy_(weight.T)
            layer.bias.copy_(bias)
        body: nn.Module = layer
    elif kind == "mlp":
        layers: list[nn.Module] = []
        i, in_features = 0, d
        while f"layers.{i}.weight" in tensors:
            w, b = tensors[f"layers.{i}.weight"].float(), tensors[f"layers.{i}.bias"].float()
            if w.ndim != 2 or w.shape[1] != in_features or b.shape != (w.shape[0],):
                raise ArtifactError(f"mlp layer {i} has inconsistent shapes")
            linear = nn.Linear(w.shape[1], w.shape[0])
            with torch.no_grad():
                linear.weight.copy_(w)
                linear.bias.copy_(b)
            layers += [linear, nn.ReLU()]
            in_features, i = w.shape[0], i + 1
        if not layers or in_features != 1:
            raise ArtifactError("an mlp must end in a layer with one output")
        body = nn.Sequential(*layers[:-1])  # no activation after the output layer
    else:
        raise ArtifactError(f"unsupported model kind {kind!r}")
    module = _Standardized(mean, std, body)
    module.eval()
    return module


def load_model(model_uri: str, expected_sha256: str) -> LoadedModel:
    """Read, verify and build a model from its artifact directory."""
    from safetensors.torch import load as load_safetensors

    weights = artifacts.read_bytes(model_uri, artifacts.WEIGHTS_FILE)
    digest = hashlib.sha256(weights).hexdigest()
    try:
        manifest = json.loads(artifacts.read_bytes(model_uri, artifacts.MANIFEST_FILE))
    except json.JSONDecodeError:
        raise ArtifactError("manifest.json is not valid JSON") from None
    # Both the database row and the manifest name the digest; a mismatch means a partial write
    # or tampering, and serving predictions from unknown weights would be worse than failing.
    if digest != expected_sha256 or manifest.get("weights_sha256") != digest:
        raise ArtifactError("model.safetensors does not match its recorded sha256")
    if manifest.get("format_version", FORMAT_VERSION) != FORMAT_VERSION:
        raise ArtifactError(f"unsupported artifact format_version {manifest.get('format_version')}")
    try:
        tensors = load_safetensors(weights)
        module = build_module(manifest, tensors)
    except KeyError as exc:
        raise ArtifactError(f"tensor {exc} is missing") from None
    names = manifest.get("feature_names")
    labels = manifest.get("labels") or {}
    return LoadedModel(
        module=module,
        manifest=manifest,
        n_features=int(manifest["n_features"]),
        feature_names=tuple(names) if names is not None else None,
        threshold=float(manifest.get("threshold", 0.0)),
        positive_label=labels.get("positive", 1),
        negative_label=labels.get("negative", 0),
    )


class ModelCache:
    """A small thread-safe LRU of loaded models (the API serves from a thread pool)."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._items: OrderedDict[tuple[uuid.UUID, str], LoadedModel] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: tuple[uuid.UUID, str], load: Callable[[], LoadedModel]) -> LoadedModel:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                self.hits += 1
                return self._items[key]
            self.misses += 1
        # Loaded outside the lock: a slow load must not block predictions on other models.
        # Two threads may load the same model at once; the second insert simply wins.
        model = load()
        with self._lock:
            self._items[key] = model
            self._items.move_to_end(key)
            while len(self._items) > self.maxsize:
                self._items.popitem(last=False)
        return model

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


def rows_to_matrix(
    model: LoadedModel,
    *,
    instances: Sequence[Sequence[float]] | None,
    columns: Sequence[str] | None,
    data: Sequence[Sequence[float]] | None,
    max_rows: int,
) -> np.ndarray:
    """Validate the rows of a prediction request: count, width, names, finiteness."""
    field = "instances" if instances is not None else "data"
    rows = instances if instances is not None else data
    assert rows is not None  # the request schema guarantees one form

    def bad(loc: tuple[str | int, ...], msg: str) -> InvalidInputError:
        return InvalidInputError(INVALID_ROWS, [FieldError(("body", *loc), msg)])

    if not rows:
        raise bad((field,), "give at least one row")
    if len(rows) > max_rows:
        raise bad((field,), f"{len(rows)} rows is more than the limit of {max_rows} per request")

    order: list[int] | None = None
    width = model.n_features
    if columns is not None:
        if model.feature_names is None:
            raise bad(("columns",), "this model has no feature names; send 'instances' instead")
        if len(set(columns)) != len(columns):
            raise bad(("columns",), "column names must be unique")
        missing = [n for n in model.feature_names if n not in columns]
        unknown = [c for c in columns if c not in model.feature_names]
        if missing or unknown:
            parts = []
            if missing:
                parts.append(f"missing {missing[:10]}")
            if unknown:
                parts.append(f"unknown {unknown[:10]}")
            raise bad(("columns",), "columns must be the model's features: " + ", ".join(parts))
        position = {name: i for i, name in enumerate(columns)}
        order = [position[name] for name in model.feature_names]
        width = len(columns)

    for i, row in enumerate(rows):
        if len(row) != width:
            raise bad((field, i), f"row {i} has {len(row)} values; the model expects {width}")
    matrix = np.asarray(rows, dtype=np.float64)
    finite = np.isfinite(matrix) & (np.abs(matrix) <= _FLOAT32_MAX)
    if not finite.all():
        i, j = (int(v) for v in np.argwhere(~finite)[0])
        raise bad((field, i, j), f"row {i}, value {j} is NaN, infinite or too large for float32")
    if order is not None:
        matrix = matrix[:, order]
    return matrix.astype(np.float32)


def predict(model: LoadedModel, matrix: np.ndarray) -> tuple[list[float], list[Any]]:
    with torch.inference_mode():
        scores = model.module(torch.from_numpy(matrix)).reshape(-1).numpy()
    labels = [
        model.positive_label if s > model.threshold else model.negative_label
        for s in scores.tolist()
    ]
    # A score can overflow float32 only with absurd weights; JSON cannot carry inf, so clip.
    out = [s if math.isfinite(s) else math.copysign(_FLOAT32_MAX, s) for s in scores.tolist()]
    return out, labels
