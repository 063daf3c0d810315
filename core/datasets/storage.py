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
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

import fsspec

from core.config import Settings
from core.errors import PayloadTooLargeError
from metro.serialization import is_url

_UPLOADS_PREFIX = "uploads"


@dataclass(frozen=True)
class UploadStore:
    root: str  # a local directory, or an fsspec URL such as s3://bucket/prefix/uploads

    @classmethod
    def from_settings(cls, settings: Settings) -> UploadStore:
        if settings.uploads_uri:
            return cls(settings.uploads_uri.rstrip("/"))
        if is_url(settings.artifacts_uri):
            return cls(settings.artifacts_uri.rstrip("/") + "/" + _UPLOADS_PREFIX)
        return cls(str(settings.upload_dir))

    @property
    def is_local(self) -> bool:
        return not is_url(self.root)

    def location(self, tenant_id: uuid.UUID, sha256: str, fmt: str) -> str:
        """Where the bytes with this digest are kept for this tenant."""
        if self.is_local:
            return str(Path(self.root) / str(tenant_id) / f"{sha256}{fmt}")
        return f"{self.root}/{tenant_id}/{sha256}{fmt}"

    def keep(self, staged: Path, location: str) -> bool:
        """Move the staged file to ``location``; False (and the staged file dropped) when the
        same bytes are there already."""
        if self.exists(location):
            staged.unlink(missing_ok=True)
            return False
        if self.is_local:
            Path(location).parent.mkdir(parents=True, exist_ok=True)
            os.replace(staged, location)
            return True
        fs, path = fsspec.core.url_to_fs(location)
        try:
            fs.put_file(str(staged), path)
        finally:
            staged.unlink(missing_ok=True)
        return True

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
