"""Loading trained models from the artifact store and scoring rows with them.

Models are written and read by :mod:`metro.serialization` (the one home of the format:
``model.safetensors`` + ``manifest.json`` with the weights' sha256 + ``model.onnx``), so every
model kind the library trains (linear, mlp, cnn3) can be served. A request row is the flattened
input (``n_features`` = the product of ``input_shape``) and is reshaped to the model's input.

A row is labelled positive when its score is at least ``threshold`` (``score >= threshold``, the
paper's sign(0) = +1), exactly as the library and the workers decide.

Linear models are scored in numpy from arrays taken out of the module once, at load: the same
float32 arithmetic as the module's forward (standardize, then ``z @ w + b``), without torch's
per-call dispatch, autograd-mode switch and module hooks, which cost several times the arithmetic
for the few rows of a typical request. Other kinds run the module.

The loaded-model cache is keyed by ``(model id, weights sha256)``: a model row never changes its
weights, and if it ever did the new digest would miss the cache instead of serving stale weights.
"""

from __future__ import annotations

import logging
import math
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from core.artifacts import ArtifactError
from core.errors import FieldError, InvalidInputError
from metro.ranges import FeatureRanges, RangeReport, out_of_range
from metro.trainer import FLOAT32_MAX, undefined_score_rows

INVALID_ROWS = "Invalid prediction request"

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class LinearScorer:
    """A linear model's forward as float32 numpy arrays: ``((x - mean) / std) @ weight + bias``."""

    mean: np.ndarray  # [d]
    std: np.ndarray  # [d]
    weight: np.ndarray  # [d, K]: one column per model of the stack (one per class)
    bias: np.ndarray  # [K]

    @classmethod
    def of(cls, module: torch.nn.Module) -> LinearScorer:
        def array(tensor: torch.Tensor) -> np.ndarray:
            out = tensor.detach().to(torch.float32).cpu().numpy().copy()
            out.setflags(write=False)
            return out

        def part(name: str) -> torch.Tensor:
            value = getattr(module, name)
            if not isinstance(value, torch.Tensor):
                raise ValueError(f"a linear model's {name} is not a tensor")
            return value

        # A saved model holds one model, or one per class of an averaged job.
        return cls(
            mean=array(part("mean")),
            std=array(part("std")),
            weight=array(part("weight")),
            bias=array(part("bias")),
        )

    def __call__(self, matrix: np.ndarray) -> np.ndarray:
        """Scores [n, K]; a row that overflows scores NaN or inf (:func:`predict` judges it)."""
        # Standardized in float32, as the module does; the dot product in float64, so that a
        # row's score does not depend on the batch it came in or on its memory layout (float32
        # products summed in a BLAS kernel's order moved a margin by an ulp, which flipped the
        # label of a row at the threshold between a row sent alone and in a batch).
        with np.errstate(over="ignore", invalid="ignore"):
            z = ((matrix - self.mean) / self.std).astype(np.float64)
            weight = self.weight.astype(np.float64)
            scores = z @ weight + self.bias.astype(np.float64)
            # Where the terms' magnitudes pass float32's range, the module's float32 sum can
            # overflow (NaN, inf) whatever the float64 sum is: no score, as the library, the
            # saved model and the ONNX file have none (the float64 sum scored such a row).
            # Judged row by row (a second product) only where the whole batch's bound,
            # max |z| times a model's sum of |w|, could pass it: not for ordinary rows.
            magnitude = np.abs(weight)
            if np.abs(z).max(initial=0.0) * magnitude.sum(axis=0).max(initial=0.0) > FLOAT32_MAX:
                scores[np.abs(z) @ magnitude > FLOAT32_MAX] = np.nan
            return np.asarray(scores.astype(np.float32))


@dataclass(frozen=True)
class LoadedModel:
    module: torch.nn.Module
    manifest: dict[str, Any]
    input_shape: tuple[int, ...]
    n_features: int
    feature_names: tuple[str, ...] | None
    threshold: float
    positive_label: Any
    negative_label: Any
    # Set for linear models: the numpy form of the module's forward (see the module's docstring).
    linear: LinearScorer | None = None
    # A model of several classes (an averaged job): its classes, one per score, and how it
    # decides ("argmax" or "per_label"); None for a binary model.
    classes: tuple[Any, ...] | None = None
    decision: str | None = None
    # A tabular model's training ranges (None: an image model, or a manifest without them).
    ranges: FeatureRanges | None = None


def load_model(
    model_uri: str, expected_sha256: str, *, recorded_manifest: Mapping[str, Any] | None = None
) -> LoadedModel:
    """Read, verify (the weights' sha256 against the manifest and the database, the manifest
    against the one the database recorded) and build a model."""
    from metro.serialization import ModelFormatError
    from metro.serialization import load_model as load_saved

    try:
        module, manifest = load_saved(model_uri, expected_sha256=expected_sha256)
    except ModelFormatError as exc:
        raise ArtifactError(str(exc)) from None
    except OSError:
        raise ArtifactError("the model files could not be read") from None
    if recorded_manifest is not None and not same_json(manifest, recorded_manifest):
        # The weights' digest covers the weights only: an edited or wrongly restored
        # manifest.json flipped the labels of every prediction, answered 200.
        raise ArtifactError("its manifest.json is not the manifest recorded for it")
    names = manifest.get("feature_names")
    labels = manifest.get("labels") or {}
    return LoadedModel(
        module=module,
        manifest=manifest,
        input_shape=tuple(module.input_shape),
        n_features=int(manifest["n_features"]),
        feature_names=tuple(names) if names is not None else None,
        threshold=float(manifest.get("threshold", 0.0)),
        positive_label=labels.get("positive", 1),
        negative_label=labels.get("negative", 0),
        linear=LinearScorer.of(module) if module.spec.kind == "linear" else None,
        classes=None if manifest.get("classes") is None else tuple(manifest["classes"]),
        decision=manifest.get("decision"),
        ranges=_ranges(manifest, model_uri),
    )


def _ranges(manifest: Mapping[str, Any], model_uri: str) -> FeatureRanges | None:
    """The manifest's feature ranges; None where it has none (written before they were kept)
    or they are unreadable. The ranges only inform (``out_of_range``), so a damaged record
    skips that check, with a warning in the log at each load, rather than refusing every
    prediction of a model whose weights and decision are intact (it was a 500 per request)."""
    try:
        return FeatureRanges.of_manifest(manifest)
    except ValueError as exc:
        logger.warning(
            "model %s: its manifest's feature_ranges are unreadable (%s); its predictions are "
            "scored without the range check", model_uri, exc,
        )  # fmt: skip
        return None


def same_json(a: Any, b: Any) -> bool:
    """Whether two JSON values are the same, numbers by value: the database's copy of a manifest
    went through PostgreSQL's jsonb, which writes 1e23 back as the integer 10**23 (and -0.0 as
    0), so a float may come back an int a rounding away."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int) and isinstance(b, int):
        return a == b  # exactly (an int past a float's range cannot be made one)
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b or math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


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

    def peek(self, key: tuple[uuid.UUID, str]) -> LoadedModel | None:
        """The model if it is loaded (counted as a hit), else None; never loads."""
        with self._lock:
            model = self._items.get(key)
            if model is not None:
                self._items.move_to_end(key)
                self.hits += 1
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
    # Judged as the model reads it, in float32: 3.4028235e38 (float32's largest, as printed) is
    # just past it in float64 but rounds to it, and the library and the ONNX file took it.
    with np.errstate(over="ignore"):
        finite = np.isfinite(matrix.astype(np.float32))
    if not finite.all():
        i, j = (int(v) for v in np.argwhere(~finite)[0])
        raise bad((field, i, j), f"row {i}, value {j} is NaN, infinite or too large for float32")
    if order is not None:
        matrix = matrix[:, order]
    return matrix.astype(np.float32)


@dataclass(frozen=True)
class Prediction:
    """What the prediction endpoint answers: per row its margin and label; for a model of
    several classes also every class's margin (``class_margins``, in the manifest's class
    order) and, for a binary model, None there; and the columns outside the training ranges
    (``out_of_range``, None where none is)."""

    margins: list[float]
    labels: list[Any]
    class_margins: list[list[float]] | None = None
    out_of_range: RangeReport | None = None


def range_report(model: LoadedModel, matrix: np.ndarray) -> RangeReport | None:
    """The columns of the validated rows outside the model's training ranges (the 5 with the
    most rows), or None where none is or the model has no ranges."""
    if model.ranges is None:
        return None
    report = out_of_range(matrix, model.ranges, feature_names=model.feature_names)
    return report if report else None


def predict(model: LoadedModel, matrix: np.ndarray, *, field: str = "instances") -> Prediction:
    """Score the validated rows (``field`` names them in errors: ``instances`` or ``data``)."""
    if model.linear is not None:
        scores = model.linear(matrix)
    else:
        x = torch.from_numpy(matrix).reshape(matrix.shape[0], *model.input_shape)
        with torch.inference_mode():
            scores = model.module(x).numpy()
    # Finite values that overflow inside the model (a value far outside the training data's
    # scale, divided by a small standard deviation: inf - inf, or past float32's range, where
    # the ONNX file's scores are infinite) have no score: a 422 naming the row. They were a
    # margin of 0 decided as positive, then a clipped margin (and, for several classes, a tie
    # of clipped scores decided as the first class).
    undefined = undefined_score_rows(scores)
    if undefined.any():
        i = int(np.flatnonzero(undefined)[0])
        raise InvalidInputError(
            INVALID_ROWS,
            [FieldError(("body", field, i), f"row {i} has no score: its values overflow the "
                        "model (far outside the scale of the data it was trained on)")],
        )  # fmt: skip
    report = range_report(model, matrix)
    if model.classes is None:
        values: list[float] = scores[:, 0].tolist()
        positive, negative, threshold = model.positive_label, model.negative_label, model.threshold
        return Prediction(
            margins=values,
            labels=[positive if s >= threshold else negative for s in values],
            out_of_range=report,
        )
    classes = model.classes
    best = np.argmax(scores, axis=1)
    labels: list[Any]
    if model.decision == "per_label":
        labels = [[classes[k] for k in np.flatnonzero(row >= 0)] for row in scores]
    else:
        labels = [classes[k] for k in best.tolist()]
    return Prediction(
        margins=scores[np.arange(scores.shape[0]), best].tolist(),
        labels=labels,
        class_margins=scores.tolist(),
        out_of_range=report,
    )
