"""Schemas shared by several resources."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

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


def _given(*names: str) -> dict[str, Any]:
    """JSON Schema: each of ``names`` is present and not null (the server reads null as not
    given)."""
    return {"required": list(names), "properties": {n: {"not": {"type": "null"}} for n in names}}


def one_form_of(*forms: tuple[str, ...]) -> dict[str, Any]:
    """JSON Schema of an object that takes exactly one of ``forms`` (each a set of fields given
    together): a prediction's ``instances``, or ``columns`` with ``data``. Fields outside the
    chosen form must be absent or null, as the server checks."""
    fields = sorted({name for form in forms for name in form})
    return {
        "oneOf": [
            {
                "allOf": [_given(*form)],
                "not": {"anyOf": [_given(n) for n in fields if n not in form]},
            }
            for form in forms
        ]
    }
