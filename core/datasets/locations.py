"""Which external dataset locations a tenant's job may read: ``file://`` paths and ``s3://``
objects, named in a job by URI and read with the service's own rights.

A tenant reaches its own uploads through ``dataset://<id>`` (checked against its tenant in the
database), the built-in sets, and nothing else unless an operator allowed it:

* ``file://`` only under ``METRO_DATA_ROOTS``, ``s3://`` only under ``METRO_DATA_URI_PREFIXES``;
  ``{tenant}`` in either stands for the tenant's id, so a root or prefix can be one per tenant;
* never inside the service's own stores (uploads, staging, artifacts, fits), even where an
  allowed root or prefix contains them: those hold every tenant's data;
* a path is judged by its real path (``..``, ``//`` and symlinks resolved, percent-encoding
  decoded once); an object URI must already be in canonical form (lower-case bucket, no empty,
  ``.`` or ``..`` segment, no ``%``, backslash, query or fragment), since an object store does not
  resolve such forms the way a file system does and they would only serve to dodge a prefix.

Every refusal of a location, for whatever reason, and a missing local file, give one message
(:data:`NOT_READABLE`): an answer that differed would tell a tenant that a file exists. The API
checks at submission; the worker checks again before it reads, with its own settings.
"""

from __future__ import annotations

import os
import re
import urllib.parse
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from core.config import Settings
from core.datasets.storage import UploadStore
from metro.datasets import DataError
from metro.datasets import local_path_of as library_reading
from metro.serialization import is_url

TENANT_PLACEHOLDER = "{tenant}"

# S3's rules for bucket names (lower case, digits, dots and hyphens, 3 to 63 characters).
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


def not_readable(uri: str) -> str:
    """The one message for a location that is refused or does not exist."""
    return (
        f"no readable dataset at {uri}: it does not exist, or it is not in a location this server "
        "lets this tenant read (dataset://, builtin://, or an allowed file:// root or s3:// prefix)"
    )


class UnreadableLocationError(ValueError):
    """A location this tenant may not read, or a local file that does not exist (one message)."""

    def __init__(self, uri: str) -> None:
        super().__init__(not_readable(uri))


def _with_tenant(template: str, tenant_id: uuid.UUID) -> str:
    return template.replace(TENANT_PLACEHOLDER, str(tenant_id))


def _within(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:
        return False


def _prefix_form(prefix: str) -> str:
    """A prefix compared as a folder: ``s3://b/data`` allows ``s3://b/data/x``, not
    ``s3://b/database``."""
    scheme, _, rest = prefix.partition("://")
    return f"{scheme.lower()}://{rest.strip('/')}/"


@dataclass(frozen=True)
class LocationPolicy:
    data_roots: tuple[str, ...]
    uri_prefixes: tuple[str, ...]
    reserved_dirs: tuple[str, ...]  # real paths of the service's local stores
    reserved_prefixes: tuple[str, ...]  # the service's object-store prefixes, in _prefix_form

    @classmethod
    def from_settings(cls, settings: Settings) -> LocationPolicy:
        stores = {settings.artifacts_uri, UploadStore.from_settings(settings).root}
        stores.add(str(settings.upload_dir))
        if settings.uploads_uri:
            stores.add(settings.uploads_uri)
        urls = [s for s in stores if is_url(s)]
        dirs = [s[7:] if s[:7].lower() == "file://" else s for s in stores if not is_url(s)]
        return cls(
            data_roots=tuple(str(r) for r in settings.data_roots),
            uri_prefixes=tuple(settings.data_uri_prefixes),
            reserved_dirs=tuple(os.path.realpath(d) for d in dirs),
            # Compared case-insensitively: a bucket or key that differs only in case from the
            # service's own is refused (more than needed, never less).
            reserved_prefixes=tuple(_prefix_form(u).casefold() for u in urls),
        )

    # -- file:// ------------------------------------------------------------------------------

    def roots_for(self, tenant_id: uuid.UUID) -> list[str]:
        """The real paths of the data roots of this tenant (templates filled in)."""
        return [os.path.realpath(_with_tenant(r, tenant_id)) for r in self.data_roots]

    def local_file(self, tenant_id: uuid.UUID, uri: str, path: str) -> tuple[str, str]:
        """``(real path, the data root holding it)`` of an absolute local path this tenant may
        read, or :class:`UnreadableLocationError`. ``uri`` is what messages name."""
        if "\x00" in path or not os.path.isabs(path):
            raise UnreadableLocationError(uri)
        real = os.path.realpath(path)
        # Containment is judged on the resolved path (no escape through '..' or a symlink),
        # and before existence, which is then part of the same answer.
        if any(_within(real, reserved) for reserved in self.reserved_dirs):
            raise UnreadableLocationError(uri)
        root = next((r for r in self.roots_for(tenant_id) if _within(real, r)), None)
        if root is None or not os.path.isfile(real):
            raise UnreadableLocationError(uri)
        return real, root

    # -- s3:// --------------------------------------------------------------------------------

    def object_uri(self, tenant_id: uuid.UUID, uri: str) -> str:
        """The canonical ``s3://bucket/key`` of an object this tenant may read, or
        :class:`UnreadableLocationError`."""
        canonical = canonical_object_uri(uri)
        if canonical is None:
            raise UnreadableLocationError(uri)
        if any(canonical.casefold().startswith(p) for p in self.reserved_prefixes):
            raise UnreadableLocationError(uri)
        allowed = (_prefix_form(_with_tenant(p, tenant_id)) for p in self.uri_prefixes)
        if not any(canonical.startswith(p) for p in allowed):
            raise UnreadableLocationError(uri)
        return canonical


def canonical_object_uri(uri: str) -> str | None:
    """``s3://bucket/key`` when ``uri`` is already that canonical form (but for the scheme's
    case), else None."""
    try:
        parts = urllib.parse.urlsplit(uri)
    except ValueError:
        return None
    if parts.scheme.lower() != "s3" or parts.query or parts.fragment or "#" in uri or "?" in uri:
        return None
    bucket = parts.netloc
    if not _BUCKET.match(bucket):
        return None  # also refuses user info, a port and upper case
    key = parts.path.removeprefix("/")
    if not key or not _plain_segments(key.split("/")):
        return None
    if any(c in key for c in "%\\") or any(ord(c) < 0x20 or ord(c) == 0x7F for c in key):
        return None
    return f"s3://{bucket}/{key}"


def _plain_segments(segments: Iterable[str]) -> bool:
    return all(s not in ("", ".", "..") for s in segments)


def local_path_of(uri: str) -> str | None:
    """The path a ``file://`` URI (or a bare path) names, percent-decoded once, as the library
    reads it when it opens the file, or None when the URI is not a plain local one (another
    scheme, a host, a query or a fragment)."""
    try:
        return library_reading(uri)
    except DataError:
        return None
