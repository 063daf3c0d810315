"""The artifact store: where workers put trained models and the API reads them back.

``METRO_ARTIFACTS_URI`` is a local directory by default or any fsspec URL (``s3://bucket/prefix``
with s3fs installed, ``memory://`` in tests). A model's ``artifact_uri`` is either a full URL or
a path relative to that root; both go through fsspec so the code does not care which.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec

from core.errors import ServiceError

# The model's file names are the library's: one definition for writer and reader.
from metro.serialization import MANIFEST_FILE, ONNX_FILE, WEIGHTS_FILE, is_url, local_path

__all__ = [
    "MANIFEST_FILE",
    "ONNX_FILE",
    "WEIGHTS_FILE",
    "ArtifactError",
    "job_dir",
    "open_checked",
    "read_bytes",
    "remove_tree",
    "resolve_artifact_uri",
]

_CHUNK = 1024 * 1024
logger = logging.getLogger(__name__)


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


def job_dir(job_id: object) -> str:
    """Everything a job wrote to the store, relative to the root: its models (one folder per
    attempt) and its recorded fits (worker.artifacts lays them out)."""
    return f"jobs/{job_id}"


def remove_tree(artifacts_root: str, rel: str) -> None:
    """Delete a folder of the store and all under it; a folder already gone is no error, and
    any other failure is logged (leftovers cost storage, never correctness: no row names them)."""
    uri = resolve_artifact_uri(artifacts_root, rel)
    try:
        fs, path = fsspec.core.url_to_fs(uri)
        fs.invalidate_cache()
        fs.rm(path, recursive=True)
    except FileNotFoundError:
        pass
    except Exception:
        logger.warning("could not remove %s", rel, exc_info=True)
        return
    _remove_empty_parents(uri, rel)


def _remove_empty_parents(uri: str, rel: str) -> None:
    """On a local store, the folders above a removed one that it leaves empty, up to the root
    (a deleted model left ``jobs/<id>/model`` and ``jobs/<id>``, two empty folders a job).
    Object stores have no folders. A folder something was written to meanwhile is not empty,
    and stays."""
    if is_url(uri):
        return
    folder = Path(local_path(uri))
    for _ in Path(rel.strip("/")).parents[:-1]:  # each folder of rel above it, not the root
        folder = folder.parent
        try:
            folder.rmdir()
        except OSError:  # not empty, or gone: nothing above it to do either
            return


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


def open_checked(model_uri: str, name: str, recorded: str | None) -> Iterator[bytes]:
    """A stored file's bytes, in chunks, from one open of it whose SHA-256 was checked against
    ``recorded`` (None: not checked) before the first chunk: ArtifactError where it is missing
    or other bytes. Hashing one open and streaming a second let a file replaced in between be
    sent under the first one's digest. (An object store's file fetches ranges anew, so there
    the guard is that an attempt's model files are written once and never replaced.)"""
    fs, path = _fs_path(model_uri, name)
    try:
        fh = fs.open(path, "rb")
    except FileNotFoundError:
        raise ArtifactError(f"artifact file {name} is missing") from None
    try:
        found = hashlib.file_digest(fh, "sha256").hexdigest()
        if recorded is not None and found != recorded:
            raise ArtifactError(
                f"the stored {name} has SHA-256 {found}, not the recorded {recorded}"
            )
        fh.seek(0)
    except BaseException:
        fh.close()
        raise
    return _chunks(fh)


def require_file(model_uri: str, name: str) -> None:
    """ArtifactError where a stored file is missing (what a HEAD of its download asks, without
    reading it)."""
    fs, path = _fs_path(model_uri, name)
    if not fs.exists(path):
        raise ArtifactError(f"artifact file {name} is missing")


def _chunks(fh: Any) -> Iterator[bytes]:
    with fh:
        while chunk := fh.read(_CHUNK):
            yield chunk
