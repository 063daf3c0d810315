"""The route class of every router that hands out database sessions.

A sync route runs in a thread of the shared pool; FastAPI then validates its return value in
*another* thread of that pool, and runs the session dependency's cleanup after that. A read left
its transaction open, so the request kept its pooled connection while it waited for the second
thread: with more requests than threads and connections together, every thread waited for a
connection held by a request that waited for a thread (the lock-up under load).

:class:`SessionScopedRoute` closes the route's session in the route's own thread, as soon as the
route returns: a connection is then only ever held by a thread that is running.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from fastapi.routing import APIRoute
from sqlalchemy.orm import Session


def _closing_sessions(endpoint: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(endpoint)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return endpoint(*args, **kwargs)
        finally:
            for value in kwargs.values():
                if isinstance(value, Session):
                    value.close()  # returns the connection; loaded objects stay readable

    return run


class SessionScopedRoute(APIRoute):
    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        if not inspect.iscoroutinefunction(endpoint):
            endpoint = _closing_sessions(endpoint)
        super().__init__(path, endpoint, **kwargs)
