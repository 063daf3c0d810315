"""Schemas shared by several resources."""

from __future__ import annotations

from typing import Generic, TypeVar

from pydantic import BaseModel, Field

T = TypeVar("T")


class Page(BaseModel, Generic[T]):
    """One page of a cursor-paginated list; pass ``next_cursor`` back as ``cursor`` for the next
    page. ``null`` means this is the last page. Cursors are opaque and stable under inserts."""

    items: list[T]
    next_cursor: str | None = Field(default=None, description="Opaque cursor of the next page")
