"""Liveness, readiness and Prometheus metrics (no authentication: for the platform, not users;
a gateway should not expose them publicly)."""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import Any, Literal

import anyio
from fastapi import APIRouter, HTTPException, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from service.api.deps import bearer_key
from service.api.problems import problem_responses
from service.readiness import check_broker, check_database

router = APIRouter(tags=["health"])

# The checks' own threads: neither a busy shared thread pool nor a full connection pool may keep
# readiness from answering. A check that overruns its time is abandoned (its thread ends on its
# own, at the pool's or the socket's timeout); this bounds how many can linger, after which
# checks wait for a thread within their own time and report "timed out".
_CHECK_THREADS = anyio.CapacityLimiter(8)


async def _checked(check: Callable[..., tuple[bool, str]], *args: Any, timeout: float) -> Any:
    try:
        with anyio.fail_after(timeout):
            return await anyio.to_thread.run_sync(
                check, *args, limiter=_CHECK_THREADS, abandon_on_cancel=True
            )
    except TimeoutError:
        # Every pooled connection busy (the pool's own timeout is much longer), or a database or
        # broker that does not answer: either way this process cannot serve requests now.
        return False, "timed out"


class Health(BaseModel):
    status: Literal["ok"]


class Readiness(BaseModel):
    status: Literal["ready", "not ready"]
    checks: dict[str, str]


@router.get("/healthz", response_model=Health, summary="Liveness: the process serves requests")
async def healthz() -> Health:
    # async: answered on the event loop, so neither a busy thread pool nor an exhausted
    # database pool can keep it from answering.
    return Health(status="ok")


@router.get(
    "/readyz",
    response_model=Readiness,
    summary="Readiness: the database is reachable (the broker's state is reported beside it)",
    responses={503: {"model": Readiness, "description": "The database is unreachable"}},
)
async def readyz(request: Request) -> JSONResponse:
    # Answers within readiness_timeout_seconds (plus scheduling): the two checks run at once,
    # each in a thread of its own, and one that takes longer counts as failed. (A comment, not a
    # docstring: FastAPI would publish a docstring as the operation's description.)
    state = request.app.state
    timeout = state.settings.readiness_timeout_seconds
    results: dict[str, tuple[bool, str]] = {}

    async def run(name: str, check: Callable[..., tuple[bool, str]], *args: Any) -> None:
        results[name] = await _checked(check, *args, timeout=timeout)

    async with anyio.create_task_group() as checks:
        checks.start_soon(run, "database", check_database, state.engine)
        checks.start_soon(run, "broker", check_broker, state.settings.effective_broker_url, timeout)
    # Ready on the database alone: without the broker the API still serves every request
    # (a job is queued in the database, and the reconciler sends its message once the broker is
    # back), and a 503 would take every replica out of service, predictions and reads included,
    # for as long as Redis is away. The broker's state is reported beside it.
    ready = results["database"][0]
    body = Readiness(
        status="ready" if ready else "not ready",
        checks={name: results[name][1] for name in ("database", "broker")},
    )
    return JSONResponse(body.model_dump(), status_code=200 if ready else 503)


@router.get(
    "/metrics",
    summary="Prometheus metrics",
    response_class=Response,
    responses={
        200: {"content": {"text/plain": {"schema": {"type": "string"}}}},
        **problem_responses(401),
    },
)
async def metrics(request: Request) -> Response:
    """Every tenant's counts together: with METRO_METRICS_TOKEN set, only for that bearer token
    (an API key is a tenant's, not an operator's, and is not taken here)."""
    token = request.app.state.settings.metrics_token
    if token is not None:
        given = bearer_key(request.headers.get("authorization", "")) or ""
        if not hmac.compare_digest(given.encode(), token.get_secret_value().encode()):
            raise HTTPException(
                status_code=401,
                detail="/metrics needs the operator's METRO_METRICS_TOKEN as a bearer token",
                headers={"WWW-Authenticate": "Bearer"},
            )
    return Response(
        request.app.state.metrics.render(),
        media_type="text/plain; version=0.0.4; charset=utf-8",
    )
