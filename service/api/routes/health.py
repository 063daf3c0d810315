"""Liveness, readiness and Prometheus metrics (no authentication: for the platform, not users;
a gateway should not expose them publicly)."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from service.readiness import check_broker, check_database

router = APIRouter(tags=["health"])


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
    summary="Readiness: the database and the broker are reachable",
    responses={503: {"model": Readiness, "description": "A dependency is unreachable"}},
)
async def readyz(request: Request) -> JSONResponse:
    state = request.app.state
    timeout = state.settings.readiness_timeout_seconds
    db_ok, db_detail = await run_in_threadpool(check_database, state.engine)
    broker_ok, broker_detail = await run_in_threadpool(
        check_broker, state.settings.effective_broker_url, timeout
    )
    ready = db_ok and broker_ok
    body = Readiness(
        status="ready" if ready else "not ready",
        checks={"database": db_detail, "broker": broker_detail},
    )
    return JSONResponse(body.model_dump(), status_code=200 if ready else 503)


@router.get(
    "/metrics",
    summary="Prometheus metrics",
    response_class=Response,
    responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
)
async def metrics(request: Request) -> Response:
    return Response(
        request.app.state.metrics.render(),
        media_type="text/plain; version=0.0.4; charset=utf-8",
    )
