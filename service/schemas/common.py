"""Schemas shared by several resources."""

from __future__ import annotations

from typing import Generic, TypeVar

from pydantic import BaseModel, Field, Tag

T = TypeVar("T")


class Page(BaseModel, Generic[T]):
    """One page of a cursor-paginated list; pass ``next_cursor`` back as ``cursor`` for the next
    page. ``null`` means this is the last page. Cursors are opaque and stable under inserts."""

    items: list[T]
    next_cursor: str | None = Field(default=None, description="Opaque cursor of the next page")


# A tagged union's tag is a step of pydantic's error locations (["body", "metric", "<tag>",
# "beta"]) though not of the request; each tag is made here, so that the API's error handler
# can leave them out and a location names the request's own path (["body", "metric", "beta"]).
UNION_TAGS: set[str] = set()


def union_tag(name: str) -> Tag:
    """The pydantic ``Tag`` of a union member; ``name`` must not be a field's name."""
    UNION_TAGS.add(name)
    return Tag(name)
