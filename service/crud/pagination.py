"""Keyset ("cursor") pagination.

Lists are ordered newest first on ``(created_at, id)``; a cursor is the key of the last row
returned and the next page holds the rows strictly after it in that order. Unlike offsets, rows
inserted while a client pages (always newer, so "before" the first page) neither shift nor
repeat rows on later pages. ``id`` breaks ties between rows created in the same microsecond.
The cursor is opaque to clients (base64url JSON) and validated when decoded.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from datetime import datetime
from typing import Any, Protocol, TypeVar

from sqlalchemy import Select, and_, or_
from sqlalchemy.orm import Session

from core.errors import FieldError, InvalidInputError


class _Paged(Protocol):
    """A row pages can be cut after: newest first, ties broken by id."""

    @property
    def created_at(self) -> datetime: ...

    @property
    def id(self) -> uuid.UUID: ...


T = TypeVar("T", bound=_Paged)

_BAD_CURSOR = InvalidInputError(
    "Invalid cursor", [FieldError(("query", "cursor"), "cursor is not one this API returned")]
)


def encode_cursor(values: list[Any]) -> str:
    raw = json.dumps(values, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, length: int) -> list[Any]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        values = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise _BAD_CURSOR from None
    if not isinstance(values, list) or len(values) != length:
        raise _BAD_CURSOR
    return values


def newest_first_page(
    session: Session, stmt: Select[T], entity: Any, cursor: str | None, limit: int
) -> tuple[list[T], str | None]:
    """One page of ``stmt`` (already filtered) ordered by ``created_at`` desc, ``id`` desc."""
    if cursor is not None:
        created_raw, id_raw = decode_cursor(cursor, 2)
        try:
            created_at = datetime.fromisoformat(created_raw)
            last_id = uuid.UUID(id_raw)
        except (TypeError, ValueError):
            raise _BAD_CURSOR from None
        if created_at.tzinfo is None:
            raise _BAD_CURSOR
        stmt = stmt.where(
            or_(
                entity.created_at < created_at,
                and_(entity.created_at == created_at, entity.id < last_id),
            )
        )
    stmt = stmt.order_by(entity.created_at.desc(), entity.id.desc()).limit(limit + 1)
    rows = list(session.scalars(stmt))
    if len(rows) <= limit:
        return rows, None
    rows = rows[:limit]
    last = rows[-1]
    return rows, encode_cursor([last.created_at.isoformat(), str(last.id)])
