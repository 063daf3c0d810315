"""Where uploaded datasets are kept, so that the API that receives them and the workers that read
them need share no disk.

The store is ``METRO_UPLOADS_URI`` when set; otherwise ``<METRO_ARTIFACTS_URI>/uploads`` when the
artifact store is an object store (``s3://``, any fsspec URL), and the local ``METRO_UPLOAD_DIR``
when it is a directory. A dataset row's ``storage_path`` is the full location (a path or a URL), so
a worker reads it from wherever it was stored, whatever its own settings say.

Identical bytes are stored once per tenant: the object is named by the SHA-256 of its contents,
and every upload of them (each its own dataset row, with its own name and inspection) points to
that one object. An object is removed when the last row pointing to it is deleted.
"""

from __future__ import annotations

import contextlib
import enum
import errno
import hashlib
import logging
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

import fsspec

from core.config import Settings
from core.datasets.uploads import StoredUpload
from core.errors import PayloadTooLargeError
from metro.serialization import (
    atomic_file,
    is_url,
    local_path,
    replace_durably,
    sync_directory,
)

logger = logging.getLogger(__name__)

_UPLOADS_PREFIX = "uploads"
_CHUNK = 1024 * 1024


class Kept(enum.Enum):
    """What :meth:`UploadStore.keep` did with a staged upload."""

    STORED = "stored"  # the bytes were not there: this upload's copy is the stored object
    SHARED = "shared"  # the same bytes were there, whole: the upload points to them
    REPAIRED = "repaired"  # an object was there but not these bytes (damaged): replaced


@dataclass(frozen=True)
class UploadStore:
    root: str  # a local directory, or an fsspec URL such as s3://bucket/prefix/uploads

    @classmethod
    def from_settings(cls, settings: Settings) -> UploadStore:
        if settings.uploads_uri:
            root = settings.uploads_uri
        elif is_url(settings.artifacts_uri):
            root = settings.artifacts_uri.rstrip("/") + "/" + _UPLOADS_PREFIX
        else:
            root = str(settings.upload_dir)
        return cls(root.rstrip("/") if is_url(root) else str(local_path(root)))

    @property
    def is_local(self) -> bool:
        return not is_url(self.root)

    def location(self, tenant_id: uuid.UUID, sha256: str, fmt: str) -> str:
        """Where the bytes with this digest are kept for this tenant."""
        if self.is_local:
            return str(Path(self.root) / str(tenant_id) / f"{sha256}{fmt}")
        return f"{self.root}/{tenant_id}/{sha256}{fmt}"

    def keep(self, staged: StoredUpload, location: str) -> Kept:
        """Move the staged file (its bytes already on disk) to ``location``, durably: once this
        returns, the stored object holds the upload's bytes whole, whatever crashes next.

        Where an object is there already it is checked against the upload's size and SHA-256:
        the same bytes are shared (and the staged file dropped); anything else (a local file a
        crash left truncated, an object damaged in the store) is replaced by the upload, which is
        what every dataset row pointing to it was recorded as. The caller holds the stored
        object's lock throughout.
        """
        if self.exists(location):
            if holds(location, size_bytes=staged.size_bytes, sha256=staged.sha256):
                staged.path.unlink(missing_ok=True)
                return Kept.SHARED
            logger.warning("stored upload %s did not hold its recorded bytes: replaced", location)
            self._put(staged.path, location)
            return Kept.REPAIRED
        self._put(staged.path, location)
        return Kept.STORED

    def _put(self, staged: Path, location: str) -> None:
        if self.is_local:
            directory = Path(location).parent
            if not directory.is_dir():
                directory.mkdir(parents=True, exist_ok=True)
                sync_directory(directory.parent)  # the tenant's directory's own entry
            _move_durably(staged, Path(location))
            return
        fs, path = fsspec.core.url_to_fs(location)
        try:
            fs.put_file(str(staged), path)
        finally:
            staged.unlink(missing_ok=True)

    @staticmethod
    def exists(location: str) -> bool:
        if not is_url(location):
            return Path(location).is_file()
        fs, path = fsspec.core.url_to_fs(location)
        fs.invalidate_cache(path)
        return bool(fs.exists(path))

    @staticmethod
    def remove(location: str) -> None:
        if not is_url(location):
            Path(location).unlink(missing_ok=True)
            return
        fs, path = fsspec.core.url_to_fs(location)
        with contextlib.suppress(FileNotFoundError):  # already gone: what was asked for
            fs.rm_file(path)


def _move_durably(staged: Path, destination: Path) -> None:
    """Rename the staged file over ``destination``; where the store is on another filesystem
    than the staging directory (a rename cannot cross), copy it beside ``destination`` first."""
    try:
        replace_durably(staged, destination)
        return
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
    with atomic_file(destination) as out, staged.open("rb") as source:
        shutil.copyfileobj(source, out, _CHUNK)
    staged.unlink(missing_ok=True)


def holds(location: str, *, size_bytes: int, sha256: str) -> bool:
    """Whether the stored object at ``location`` (a path or an fsspec URL) is exactly these
    bytes: its size, then its SHA-256 (the content, on an object store too: a damaged object of
    the same size was kept as it was, and the upload that should repair it shared it instead).
    FileNotFoundError where there is none."""
    fs, path = fsspec.core.url_to_fs(location)
    if fs.size(path) != size_bytes:
        return False
    with fs.open(path, "rb") as stored:
        return hashlib.file_digest(stored, "sha256").hexdigest() == sha256


def fetch_stored(location: str, destination: Path, *, max_bytes: int) -> None:
    """Copy a stored upload to a local file (for a worker on another machine than the API).

    ``max_bytes`` bounds the copy: a stored upload passed ``METRO_MAX_UPLOAD_BYTES`` once, but
    the store is not trusted to be only the API's to write.
    """
    fs, path = fsspec.core.url_to_fs(location)
    size = fs.size(path)
    if size is not None and size > max_bytes:
        raise PayloadTooLargeError(
            f"the stored dataset is {size} bytes, more than the limit of {max_bytes}"
        )
    with fs.open(path, "rb") as source, open(destination, "wb") as out:
        shutil.copyfileobj(source, out, 1024 * 1024)
