"""Domain exceptions raised below the API layer.

The CRUD, validation, dataset and inference modules raise these; only ``service.api.problems``
turns them into HTTP responses, so the lower layers stay usable from workers and the CLI.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


class ServiceError(Exception):
    """Base class; ``str(exc)`` is a message safe to show to the client."""


class NotFoundError(ServiceError):
    """The resource does not exist *for this tenant* (another tenant's rows look the same)."""

    def __init__(self, kind: str, ident: object) -> None:
        super().__init__(f"{kind} {ident} not found")
        self.kind = kind


class ConflictError(ServiceError):
    """The request is valid but the resource's state forbids it (cancel a finished job...)."""


class NotReadyError(ConflictError):
    """The resource exists but what was asked for is not available yet (a running job's result)."""


@dataclass(frozen=True)
class FieldError:
    loc: tuple[str | int, ...]
    msg: str
    type: str = "value_error"


class InvalidInputError(ServiceError):
    """The request is well-formed JSON but its content is wrong; ``errors`` name the fields."""

    def __init__(self, title: str, errors: Sequence[FieldError]) -> None:
        super().__init__("; ".join(e.msg for e in errors) or title)
        self.title = title
        self.errors = list(errors)


class IdempotencyKeyReusedError(ServiceError):
    """An Idempotency-Key was reused with a different request body."""


class QuotaExceededError(ServiceError):
    """A tenant already has as many active (queued, running or cancelling) jobs as allowed."""


class PayloadTooLargeError(ServiceError):
    """An upload or download went past its configured size cap."""


class StorageQuotaExceededError(ServiceError):
    """An upload would take a tenant's stored datasets past its quota."""


class UnsupportedFormatError(ServiceError):
    """A file format or model format the service cannot handle."""


class UnsafeURLError(ServiceError):
    """A URL that the service refuses to fetch (private address, bad scheme, too many hops)."""


class FetchError(ServiceError):
    """A remote dataset could not be downloaded (network error, HTTP error status)."""
