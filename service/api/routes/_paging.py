"""Query parameters shared by the list endpoints.

Each cursor parameter states its exact form as a ``pattern``: a string of that form is always
answered with a page, any other is a 422 (see :mod:`service.crud.pagination`).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

from core.config import Settings
from service.crud.pagination import (
    NEWEST_FIRST_CURSOR,
    NEWEST_FIRST_CURSOR_LENGTH,
    STEP_CURSOR,
    STEP_CURSOR_LENGTH,
)

CursorQuery = Annotated[
    str | None,
    Query(
        pattern=NEWEST_FIRST_CURSOR,
        max_length=NEWEST_FIRST_CURSOR_LENGTH,
        description="The next_cursor of the previous page",
    ),
]
StepCursorQuery = Annotated[
    str | None,
    Query(
        pattern=STEP_CURSOR,
        max_length=STEP_CURSOR_LENGTH,
        description="The next_cursor of the previous page",
    ),
]
LimitQuery = Annotated[
    int | None,
    Query(ge=1, description="Page size; values above the server's maximum are lowered to it"),
]


def page_size(limit: int | None, settings: Settings) -> int:
    return min(limit or settings.default_page_size, settings.max_page_size)
