"""From a user's path or ``file://`` uri to the file it names, within the allowed data roots.

Restricting which files a request may read is done in the library rather than the service
(``data_roots``), because only the code that opens the file can resolve symlinks at the moment it
opens it. Messages show the path as the user gave it, never the resolved one.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Sequence
from typing import Any

from metro.datasets._base import DataError


def check_uri(uri: Any, data_roots: Any) -> None:
    """The types of ``uri`` and ``data_roots`` (a caller's bug) and an empty uri (the user's)."""
    if not isinstance(uri, str):
        raise TypeError(f"uri must be a string, got {type(uri).__name__}")
    if isinstance(data_roots, str | os.PathLike):
        raise TypeError("data_roots must be a sequence of paths, not a single path")
    if not uri.strip():
        raise DataError("the dataset uri is empty")


def uri_scheme(uri: str) -> str:
    """The scheme of a dataset uri in lower case (URI schemes are case-insensitive); "" for a
    bare path."""
    return urllib.parse.urlsplit(uri).scheme.lower() if "://" in uri else ""


def local_path_of(uri: str) -> str:
    """The path a ``file://`` uri (or a bare path) names, percent-decoded once; DataError for a
    file URI with a host, a query or a fragment, and for any other scheme. The one reading of a
    local uri: the service's location policy asks it too (core.datasets.locations)."""
    scheme = uri_scheme(uri)
    if not scheme:
        return uri
    if scheme != "file":
        raise DataError(
            f"unsupported URI scheme '{scheme}://'; expected a local path, file:// or builtin://"
        )
    parts = urllib.parse.urlsplit(uri)
    if parts.netloc not in ("", "localhost"):
        raise DataError(f"file URIs must be absolute, as in file:///data/train.csv; got {uri}")
    if parts.query or parts.fragment:
        raise DataError(f"file URIs take no query or fragment; got {uri}")
    return urllib.parse.unquote(parts.path)


def resolve_path(uri: str, data_roots: Sequence[str | os.PathLike[str]] | None) -> tuple[str, str]:
    """``(path as the user gave it, real path to open)``, enforcing ``data_roots``.

    The containment check uses the fully resolved path, so neither ``..`` nor a symlink planted
    inside a root can reach outside it, and it runs before the existence check, so that a request
    cannot probe which files exist elsewhere on the machine.
    """
    given = local_path_of(uri)
    if not given:
        raise DataError("the dataset path is empty")
    if "\x00" in given:  # no file has one; the operating system refuses to look it up
        raise DataError("the dataset path contains a NUL character")
    real = os.path.realpath(given)
    if data_roots is not None:
        allowed = False
        for root in data_roots:
            real_root = os.path.realpath(root)
            try:
                allowed = os.path.commonpath([real, real_root]) == real_root
            except ValueError:  # different drives on Windows
                allowed = False
            if allowed:
                break
        if not allowed:
            raise DataError(f"path is outside the allowed data roots: {given}")
    if not os.path.exists(real):
        raise DataError(f"file not found: {given}")
    if not os.path.isfile(real):
        raise DataError(f"not a regular file: {given}")
    return given, real
