"""Query parameters shared by the list endpoints."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

from core.config import Settings

CursorQuery = Annotated[
    str | None, Query(max_length=512, description="The next_cursor of the previous page")
]
LimitQuery = Annotated[
    int | None,
    Query(ge=1, description="Page size; values above the server's maximum are lowered to it"),
]


def page_size(limit: int | None, settings: Settings) -> int:
    return min(limit or settings.default_page_size, settings.max_page_size)
