"""Keyset ("cursor") pagination.

Lists are ordered newest first on ``(created_at, id)``; a cursor is the key of the last row
returned and the next page holds the rows strictly after it in that order. Unlike offsets, rows
inserted while a client pages (always newer, so "before" the first page) neither shift nor
repeat rows on later pages. ``id`` breaks ties between rows created in the same microsecond.

A cursor is the key itself, in a form a regular expression describes exactly (the API's document
states it as the parameter's ``pattern``): every string of that form is a key this API could
have returned, and is answered with a page (perhaps empty), never refused, and any other string
is refused by the schema. Clients still treat cursors as opaque.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta
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

# The lists': the creation time in microseconds since the Unix epoch (17 digits reach the year
# 5138, inside what a datetime holds), a dot, and the row's id as 32 lowercase hex digits.
NEWEST_FIRST_CURSOR = r"^[0-9]{1,17}\.[0-9a-f]{32}$"
# A job's trace: the repeat and the step of the last point seen.
STEP_CURSOR = r"^[0-9]{1,9}\.[0-9]{1,9}$"
# Longest strings of those forms.
NEWEST_FIRST_CURSOR_LENGTH = 17 + 1 + 32
STEP_CURSOR_LENGTH = 9 + 1 + 9

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)

_BAD_CURSOR = InvalidInputError(
    "Invalid cursor", [FieldError(("query", "cursor"), "cursor is not one this API returned")]
)


def _parts(cursor: str, pattern: str) -> tuple[str, str]:
    # The API's schema has checked the form already; other callers are held to it here.
    if not re.fullmatch(pattern, cursor):
        raise _BAD_CURSOR
    first, _, second = cursor.partition(".")
    return first, second


def encode_newest_first_cursor(created_at: datetime, row_id: uuid.UUID) -> str:
    return f"{(created_at - _EPOCH) // _MICROSECOND}.{row_id.hex}"


def decode_newest_first_cursor(cursor: str) -> tuple[datetime, uuid.UUID]:
    micros, hex_id = _parts(cursor, NEWEST_FIRST_CURSOR)
    return _EPOCH + int(micros) * _MICROSECOND, uuid.UUID(hex=hex_id)


def encode_step_cursor(repeat: int, step: int) -> str:
    return f"{repeat}.{step}"


def decode_step_cursor(cursor: str) -> tuple[int, int]:
    repeat, step = _parts(cursor, STEP_CURSOR)
    return int(repeat), int(step)


def newest_first_page(
    session: Session, stmt: Select[T], entity: Any, cursor: str | None, limit: int
) -> tuple[list[T], str | None]:
    """One page of ``stmt`` (already filtered) ordered by ``created_at`` desc, ``id`` desc."""
    if cursor is not None:
        created_at, last_id = decode_newest_first_cursor(cursor)
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
    return rows, encode_newest_first_cursor(last.created_at, last.id)
