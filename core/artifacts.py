"""The artifact store: where workers put trained models and the API reads them back.

``METRO_ARTIFACTS_URI`` is a local directory by default or any fsspec URL (``s3://bucket/prefix``
with s3fs installed, ``memory://`` in tests). A model's ``artifact_uri`` is either a full URL or
a path relative to that root; both go through fsspec so the code does not care which.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import fsspec

from core.errors import ServiceError

# The model's file names are the library's: one definition for writer and reader.
from metro.serialization import MANIFEST_FILE, ONNX_FILE, WEIGHTS_FILE

__all__ = [
    "MANIFEST_FILE",
    "ONNX_FILE",
    "WEIGHTS_FILE",
    "ArtifactError",
    "iter_file",
    "read_bytes",
    "resolve_artifact_uri",
    "sha256_of",
]

_CHUNK = 1024 * 1024


class ArtifactError(ServiceError):
    """A model's files are missing or corrupt: a server-side fault, not the client's."""

    status = 500
    slug = "artifact-unavailable"
    title = "Model unavailable"
    public_detail = "the model's stored files could not be used; the operators have been notified"


def _has_scheme(uri: str) -> bool:
    return "://" in uri


def resolve_artifact_uri(artifacts_root: str, artifact_uri: str) -> str:
    if _has_scheme(artifact_uri) or artifact_uri.startswith("/"):
        return artifact_uri
    return artifacts_root.rstrip("/") + "/" + artifact_uri


def _fs_path(model_uri: str, name: str) -> tuple[Any, str]:
    fs, root = fsspec.core.url_to_fs(model_uri)
    return fs, root.rstrip("/") + "/" + name


def read_bytes(model_uri: str, name: str) -> bytes:
    fs, path = _fs_path(model_uri, name)
    try:
        with fs.open(path, "rb") as fh:
            return bytes(fh.read())
    except FileNotFoundError:
        raise ArtifactError(f"artifact file {name} is missing") from None


def sha256_of(model_uri: str, name: str) -> str:
    """The SHA-256 of a stored file, read in chunks; ArtifactError where it is missing."""
    fs, path = _fs_path(model_uri, name)
    try:
        with fs.open(path, "rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest()
    except FileNotFoundError:
        raise ArtifactError(f"artifact file {name} is missing") from None


def iter_file(model_uri: str, name: str) -> Iterator[bytes]:
    """Stream a file in chunks (downloads do not load a large model into memory)."""
    fs, path = _fs_path(model_uri, name)
    with fs.open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            yield chunk
