"""Saved models: one directory (or object-store prefix) per model, no pickles anywhere.

A saved model is three files:

``model.safetensors``
    :meth:`StackedModel.tensors` of a stack of one model (float32, the stacked layout of
    :mod:`metro.models`, ``mean``/``std`` standardization buffers included).
``model.onnx``
    The same scoring function exported to ONNX: input ``x`` ``[n, *input_shape]`` float32,
    output ``score`` ``[n, 1]``; optional (``onnx=False``), recorded in the manifest.
``manifest.json``
    ``format_version``, ``architecture`` (``ModelSpec.to_dict()``), ``input_shape``,
    ``n_features``, ``feature_names``, ``feature_ranges`` (a tabular model's: ``{"min": [...],
    "max": [...]}``, each feature's finite training extremes; absent for images and in files
    written before they were kept), ``metric``, ``lambda_star``, ``threshold``, ``labels``
    (``{"positive": ..., "negative": ...}``), ``weights_sha256`` (of ``model.safetensors``),
    ``onnx_sha256`` (or null) and any extra keys the caller gives. It is written last, so a
    directory with a manifest is complete.

The decision rule is ``score >= threshold`` -> positive label (the paper's sign(0) = +1).

A model of several classes (:mod:`metro.multiclass`) is a stack of K models, one per class,
whose ONNX ``score`` is ``[n, K]``; its manifest lists ``classes`` (K of them) and ``decision``:
``argmax`` (the predicted class is the one with the largest score) or ``per_label`` (label k is
on where its score is ``>= 0``), and has no ``labels``.

The target is a local directory or any fsspec URL (``s3://bucket/prefix``, ``memory://x``);
fsspec is imported only for URLs.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import math
import os
import tempfile
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import numpy as np
import torch

from metro.models import ModelSpec, StackedModel

__all__ = [
    "DECISIONS",
    "FORMAT_VERSION",
    "MANIFEST_FILE",
    "ONNX_FILE",
    "WEIGHTS_FILE",
    "ModelFormatError",
    "export_onnx",
    "load_model",
    "predict_labels",
    "read_manifest",
    "save_model",
]

FORMAT_VERSION = 2
WEIGHTS_FILE = "model.safetensors"
MANIFEST_FILE = "manifest.json"
ONNX_FILE = "model.onnx"
_ONNX_OPSET = 18
#: How a model of several classes decides: ``argmax`` of its K scores (multi-class), or each
#: score ``>= 0`` turns its label on (``per_label``, multi-label).
DECISIONS = ("argmax", "per_label")
# Keys save_model computes itself; a caller's value for them is refused rather than ignored.
_COMPUTED = (
    "format_version", "architecture", "input_shape", "n_features", "weights_sha256", "onnx_sha256",
)  # fmt: skip


class ModelFormatError(ValueError):
    """The files are missing, corrupt, of another format version, or do not match."""


# -- storage: a local directory or an fsspec URL --------------------------------------------------
def is_url(target: str | os.PathLike[str]) -> bool:
    """Whether ``target`` names a remote (fsspec) location rather than a local path: it has a
    scheme, and the scheme is not ``file`` (in any case: URI schemes are case-insensitive).
    The one test of it for the library, the artifact store and the upload store."""
    return isinstance(target, str) and "://" in target and target[:7].lower() != "file://"


def local_path(target: str | os.PathLike[str]) -> Path:
    """The local path a target that is not a URL names: a path as it is, or a ``file://`` URL
    without its scheme (``Path("file:///a")`` would be the relative path ``file:/a``)."""
    text = os.fspath(target)
    return Path(text[len("file://") :] if text[:7].lower() == "file://" else text)


def sync_directory(directory: Path) -> None:
    """Flush a directory's entries to disk: a file created or renamed into it survives a crash
    of the machine only once they are. (No-op where directories cannot be opened: Windows.)"""
    if os.name == "nt":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_file(out: IO[bytes]) -> None:
    """Flush an open file's bytes through Python's buffer and the OS's cache to disk."""
    out.flush()
    os.fsync(out.fileno())


def replace_durably(source: Path, destination: Path) -> None:
    """Rename ``source`` (whose bytes are on disk: :func:`fsync_file`) over ``destination``, and
    the rename itself to disk, so that once this returns a crash leaves the whole file there."""
    os.replace(source, destination)
    sync_directory(destination.parent)


@contextlib.contextmanager
def atomic_file(path: Path) -> Iterator[IO[bytes]]:
    """A file to write ``path``'s bytes into: written beside it and renamed over it when the
    block ends, so a reader never sees half a file, and flushed to disk first, so a file the
    caller then reports as saved (a model, an upload) is not lost or truncated by a crash of
    the machine. An exception in the block leaves ``path`` as it was, and no temporary."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as out:
            yield out
            fsync_file(out)
        replace_durably(Path(tmp), path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through :func:`atomic_file`."""
    with atomic_file(path) as out:
        out.write(data)


def _write(target: str | os.PathLike[str], name: str, data: bytes) -> None:
    if is_url(target):
        import fsspec

        fs, root = fsspec.core.url_to_fs(str(target))
        fs.makedirs(root, exist_ok=True)
        fs.pipe_file(root.rstrip("/") + "/" + name, data)  # one PUT: atomic on object stores
        return
    write_atomically(local_path(target) / name, data)


def _read(target: str | os.PathLike[str], name: str) -> bytes:
    try:
        if is_url(target):
            import fsspec

            fs, root = fsspec.core.url_to_fs(str(target))
            with fs.open(root.rstrip("/") + "/" + name, "rb") as fh:
                return bytes(fh.read())
        return (local_path(target) / name).read_bytes()
    except FileNotFoundError:
        raise ModelFormatError(f"{name} is missing") from None


# -- JSON -----------------------------------------------------------------------------------------
def _jsonable(value: Any, where: str) -> Any:
    """Plain JSON values (numpy scalars and tuples converted); NaN and infinity become null,
    since JSON has no spelling for them."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list | tuple | np.ndarray):
        return [
            _jsonable(v, f"{where}[]")
            for v in (value.tolist() if isinstance(value, np.ndarray) else value)
        ]
    raise ValueError(f"manifest field {where} is not JSON-serializable ({type(value).__name__})")


# -- ONNX -----------------------------------------------------------------------------------------
class _Scorer(torch.nn.Module):
    def __init__(self, model: StackedModel) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x)


def export_onnx(model: StackedModel, metadata: Mapping[str, Any] | None = None) -> bytes:
    """The model as ONNX bytes: input ``x`` [n, *input_shape] float32, output ``score`` [n, K].

    ``metadata`` (JSON-able values) is written into the graph's ``metadata_props``, each value
    as JSON text: a table's ``feature_names`` there tell an ONNX Runtime user which column
    each of ``x``'s positions is (``InferenceSession.get_modelmeta().custom_metadata_map``),
    where the file alone said nothing of the order, and a retrained model's order follows its
    new file's columns; its ``feature_ranges``, each column's training min and max.

    Uses the TorchScript-based exporter (a fraction of a second, no extra packages); falls back
    to the torch.export-based one when that is unavailable.
    """
    scorer = _Scorer(model.select(list(range(model.n_models))).to("cpu", torch.float32).eval())
    example = (torch.zeros(2, *model.input_shape),)
    buf = io.BytesIO()
    export: Any = torch.onnx.export  # (typed for paths; it writes to file objects as well)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            export(
                scorer, example, buf, input_names=["x"], output_names=["score"],
                dynamic_axes={"x": {0: "n"}, "score": {0: "n"}}, opset_version=_ONNX_OPSET,
                dynamo=False,
            )  # fmt: skip
        except Exception:
            buf = io.BytesIO()
            export(
                scorer, example, buf, input_names=["x"], output_names=["score"],
                dynamic_shapes=({0: torch.export.Dim("n")},), opset_version=_ONNX_OPSET,
                dynamo=True, verbose=False,
            )  # fmt: skip
    data = buf.getvalue()
    given = {k: v for k, v in (metadata or {}).items() if v is not None}
    if not given:
        return data
    import onnx

    proto = onnx.load_from_string(data)
    for key, value in given.items():
        entry = proto.metadata_props.add()
        entry.key = key
        entry.value = json.dumps(value, sort_keys=True)
    return proto.SerializeToString()


# -- save / load ----------------------------------------------------------------------------------
def save_model(
    target: str | os.PathLike[str],
    model: StackedModel,
    *,
    manifest: Mapping[str, Any] | None = None,
    onnx: bool = True,
) -> dict[str, Any]:
    """Write ``model`` (a stack of one) to ``target`` and return the full manifest.

    ``manifest`` gives the descriptive fields (``metric``, ``lambda_star``, ``threshold``,
    ``labels``, ``feature_names``) and any extras; the structural ones (format version,
    architecture, shapes, digests) are computed here.
    """
    from safetensors.torch import save as save_safetensors

    if not isinstance(model, StackedModel):
        raise ValueError(f"model must be a StackedModel, got {type(model).__name__}")
    given = dict(manifest or {})
    classes = given.get("classes")
    if classes is not None:
        decision = given.get("decision")
        if decision not in DECISIONS:
            raise ValueError(
                f"a model with classes needs decision in {DECISIONS}, got {decision!r}"
            )
        if not isinstance(classes, list | tuple) or len(classes) != model.n_models:
            raise ValueError(
                f"classes must list one class per model of the stack ({model.n_models})"
            )
    elif model.n_models != 1:
        raise ValueError(
            f"save_model saves one model; this stack holds {model.n_models} "
            "(take one out with model.select([k]), or give one of 'classes' per model)"
        )
    clash = sorted(set(given) & set(_COMPUTED))
    if clash:
        raise ValueError(f"manifest fields {clash} are computed by save_model; do not pass them")
    threshold = given.pop("threshold", 0.0)
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float | np.number)
        or not (math.isfinite(float(threshold)))
    ):
        raise ValueError(f"threshold must be a finite number, got {threshold!r}")
    n_features = math.prod(model.input_shape)
    names = given.pop("feature_names", None)
    if names is not None:
        names = [str(n) for n in names]
        if len(names) != n_features or len(model.input_shape) != 1:
            raise ValueError(
                f"{len(names)} feature names for a model taking inputs of shape {model.input_shape}"
            )
    ranges = given.pop("feature_ranges", None)
    if ranges is not None:
        from metro.ranges import FeatureRanges

        if len(model.input_shape) != 1:
            raise ValueError("feature_ranges are kept for tabular models only")
        try:
            ranges = FeatureRanges.from_dict(ranges, n_features=n_features).to_dict()
        except ValueError as exc:
            raise ValueError(f"feature_ranges: {exc}") from None
    labels = given.pop("labels", None) or {"positive": 1, "negative": 0}
    if not isinstance(labels, Mapping) or set(labels) != {"positive", "negative"}:
        raise ValueError("labels must be a mapping with exactly 'positive' and 'negative'")
    shown_labels = (
        None
        if classes is not None
        else {"positive": labels["positive"], "negative": labels["negative"]}
    )

    weights = save_safetensors(model.tensors())
    digest = hashlib.sha256(weights).hexdigest()
    onnx_bytes = (
        export_onnx(
            model,
            {
                "feature_names": names,
                "feature_ranges": ranges,
                "threshold": float(threshold),
                "labels": _jsonable(shown_labels, "labels"),
                "classes": _jsonable(classes, "classes"),
                "decision": given.get("decision"),
            },
        )
        if onnx
        else None
    )
    full: dict[str, Any] = {
        "format_version": FORMAT_VERSION,
        "architecture": model.spec.to_dict(),
        "input_shape": list(model.input_shape),
        "n_features": n_features,
        "feature_names": names,
        # Absent, not null, where none were given: a manifest says what it knows.
        **({} if ranges is None else {"feature_ranges": ranges}),
        "metric": given.pop("metric", None),
        "lambda_star": given.pop("lambda_star", None),
        "threshold": float(threshold),
        "labels": shown_labels,
        "weights_sha256": digest,
        "onnx_sha256": None if onnx_bytes is None else hashlib.sha256(onnx_bytes).hexdigest(),
        **given,
    }
    full = _jsonable(full, "manifest")
    text = json.dumps(full, indent=2, sort_keys=True, allow_nan=False) + "\n"
    _write(target, WEIGHTS_FILE, weights)
    if onnx_bytes is not None:
        _write(target, ONNX_FILE, onnx_bytes)
    _write(target, MANIFEST_FILE, text.encode())  # last: its presence means the model is complete
    return full


def read_manifest(target: str | os.PathLike[str]) -> dict[str, Any]:
    try:
        manifest = json.loads(_read(target, MANIFEST_FILE))
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise ModelFormatError(f"{MANIFEST_FILE} is not valid JSON") from None
    if not isinstance(manifest, dict):
        raise ModelFormatError(f"{MANIFEST_FILE} is not a JSON object")
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        raise ModelFormatError(
            f"unsupported model format_version {version!r} (this version reads {FORMAT_VERSION})"
        )
    return manifest


def load_model(
    target: str | os.PathLike[str], *, expected_sha256: str | None = None
) -> tuple[StackedModel, dict[str, Any]]:
    """Read, verify and rebuild a saved model: ``(model in eval mode, manifest)``.

    The weights' SHA-256 must equal the manifest's ``weights_sha256`` (and ``expected_sha256``
    when given, e.g. the digest a database recorded): a mismatch means a partial write or
    tampering, and is a :class:`ModelFormatError` rather than predictions from unknown weights.
    """
    from safetensors import SafetensorError
    from safetensors.torch import load as load_safetensors

    manifest = read_manifest(target)
    weights = _read(target, WEIGHTS_FILE)
    digest = hashlib.sha256(weights).hexdigest()
    if digest != manifest.get("weights_sha256") or (
        expected_sha256 is not None and digest != expected_sha256
    ):
        raise ModelFormatError(f"{WEIGHTS_FILE} does not match its recorded sha256")
    try:
        tensors = load_safetensors(weights)
        spec = ModelSpec.from_dict(manifest["architecture"])
        shape = tuple(int(s) for s in manifest["input_shape"])
        model = StackedModel.from_tensors(spec, shape, tensors)
    except (KeyError, TypeError, ValueError, SafetensorError) as exc:
        raise ModelFormatError(f"the saved model is inconsistent: {exc}") from None
    classes = manifest.get("classes")
    wanted = 1 if classes is None else len(classes) if isinstance(classes, list) else -1
    if model.n_models != wanted:
        raise ModelFormatError(
            f"a saved model holds {'one model' if classes is None else 'one model per class'}, "
            f"this one {model.n_models}"
        )
    n_features = manifest.get("n_features")
    # Checked as written: int(None), a null in the file, ended in a TypeError (a bare 500).
    if isinstance(n_features, bool) or not isinstance(n_features, int):
        raise ModelFormatError(f"the manifest's n_features is not a number: {n_features!r}")
    if n_features != math.prod(shape):
        raise ModelFormatError("n_features does not match input_shape")
    return model, manifest


def predict_labels(scores: np.ndarray, threshold: float = 0.0) -> np.ndarray:
    """The decision rule of every saved model: positive where ``score >= threshold``."""
    return np.asarray(scores) >= threshold
