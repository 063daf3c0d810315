"""Domain exceptions raised below the API layer.

The CRUD, validation, dataset and inference modules raise these. Each class says what kind of
problem it is (``status``, ``slug``, ``title``: the answer it deserves); only
``service.api.problems`` turns them into HTTP responses, with one handler for them all, so the
lower layers stay usable from workers and the CLI.
"""

from __future__ import annotations

import errno
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar


class ServiceError(Exception):
    """Base class; ``str(exc)`` is a message safe to show to the client, unless the class has a
    ``public_detail``: a server-side fault, whose message is logged and never sent."""

    status: ClassVar[int] = 500
    slug: ClassVar[str] = "internal"
    title: str = "Internal server error"  # InvalidInputError sets its own per instance
    public_detail: ClassVar[str | None] = "an unexpected error occurred"


class NotFoundError(ServiceError):
    """The resource does not exist *for this tenant* (another tenant's rows look the same)."""

    status = 404
    slug = "not-found"
    title = "Not found"
    public_detail = None

    def __init__(self, kind: str, ident: object) -> None:
        super().__init__(f"{kind} {ident} not found")
        self.kind = kind


class ConflictError(ServiceError):
    """The request is valid but the resource's state forbids it (cancel a finished job...)."""

    status = 409
    slug = "conflict"
    title = "Conflict"
    public_detail = None


class NotReadyError(ConflictError):
    """The resource exists but what was asked for is not available yet (a running job's result)."""

    status = 409
    slug = "not-ready"
    title = "Not ready"
    public_detail = None


@dataclass(frozen=True)
class FieldError:
    loc: tuple[str | int, ...]
    msg: str
    type: str = "value_error"


class InvalidInputError(ServiceError):
    """The request is well-formed JSON but its content is wrong; ``errors`` name the fields."""

    status = 422
    slug = "validation"
    public_detail = None

    def __init__(self, title: str, errors: Sequence[FieldError]) -> None:
        super().__init__("; ".join(e.msg for e in errors) or title)
        self.title = title
        self.errors = list(errors)


class IdempotencyKeyReusedError(ServiceError):
    """An Idempotency-Key was reused with a different request body."""

    status = 422
    slug = "idempotency-key-reused"
    title = "Idempotency-Key reused"
    public_detail = None


class QuotaExceededError(ServiceError):
    """A tenant already has as many active (queued, running or cancelling) jobs as allowed."""

    status = 429
    slug = "quota-exceeded"
    title = "Too many active jobs"
    public_detail = None


class PayloadTooLargeError(ServiceError):
    """An upload or download went past its configured size cap."""

    status = 413
    slug = "too-large"
    title = "Content too large"
    public_detail = None


class StorageQuotaExceededError(ServiceError):
    """An upload would take a tenant's stored datasets past its quota."""

    status = 413
    slug = "storage-quota-exceeded"
    title = "Storage quota exceeded"
    public_detail = None


def storage_quota_message(needed: int, quota: int, *, before_upload: bool = False) -> str:
    """A StorageQuotaExceededError's detail: what the tenant's datasets would take with the
    upload, or (``before_upload``: refused before its body was read) already take."""
    said = (
        f"the tenant's stored datasets already take {needed} bytes, its whole quota of "
        f"{quota} bytes"
        if before_upload
        else f"the tenant's stored datasets would take {needed} bytes, more than its quota of "
        f"{quota} bytes"
    )
    return f"{said}; delete datasets (DELETE /v1/datasets/{{id}}) to make room"


class InsufficientStorageError(ServiceError):
    """The server's own storage is full (ENOSPC, EDQUOT): the request was fine, and nothing of
    it was kept. It answered a 500 "an unexpected error occurred", which a client cannot tell
    from a bug."""

    status = 507
    slug = "insufficient-storage"
    title = "Insufficient storage"
    public_detail = None


# The operating system's words for a full disk or a spent disk quota.
_NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT})


def no_room(exc: BaseException | None, what: str) -> InsufficientStorageError | None:
    """The 507 for an OSError that says the server's storage is full while it kept ``what``
    ("this upload"); None for any other error, or none."""
    if isinstance(exc, OSError) and exc.errno in _NO_ROOM:
        return InsufficientStorageError(
            f"the server has no room left to keep {what} (its storage is full); nothing was "
            "kept: try again later, or ask its operator to free space"
        )
    return None


class UnsupportedFormatError(ServiceError):
    """A file format or model format the service cannot handle."""

    status = 415
    slug = "unsupported-format"
    title = "Unsupported format"
    public_detail = None


class UnsafeURLError(ServiceError):
    """A URL that the service refuses to fetch (private address, bad scheme, too many hops)."""

    status = 422
    slug = "unsafe-url"
    title = "URL refused"
    public_detail = None


class FetchError(ServiceError):
    """A remote dataset could not be downloaded (network error, HTTP error status)."""

    status = 502
    slug = "fetch-failed"
    title = "Download failed"
    public_detail = None
