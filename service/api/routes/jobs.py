"""/v1/jobs: submit, list, read, cancel, trace and result."""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from core.artifacts import job_dir, remove_tree
from core.config import Settings
from core.datasets.locations import LocationPolicy
from core.db.base import utcnow
from core.db.errors import DATABASE_UNAVAILABLE
from core.errors import FieldError, InvalidInputError
from core.job_spec import asks_for_gpu, metric_average
from core.queue import JobQueue
from core.states import JobState
from core.workers import live_columns, live_kinds, live_kinds_of, seen_window, waiting_reason
from service.api.deps import PrincipalDep, SessionDep, SettingsDep
from service.api.problems import problem_responses
from service.api.routes._paging import CursorQuery, LimitQuery, StepCursorQuery, page_size
from service.api.routing import SessionScopedRoute
from service.crud import jobs as crud
from service.crud import reads
from service.datasets.uris import check_dataset
from service.job_spec import (
    INVALID_JOB,
    JobLimits,
    check_job_limits,
    fields_with_nul,
    known_data_size,
    normalize_job_spec,
)
from service.results import build_job_result
from service.schemas.common import Page
from service.schemas.jobs import JobCreate, JobOut, JobResult, LambdaStepOut

router = APIRouter(prefix="/v1/jobs", tags=["jobs"], route_class=SessionScopedRoute)
logger = logging.getLogger(__name__)


def _job_queue(request: Request) -> JobQueue:
    """The app's handle on the broker (``app.state.job_queue``; tests put a fake there): it
    publishes by task name, so the API never imports the workers."""
    queue: JobQueue | None = getattr(request.app.state, "job_queue", None)
    if queue is None:
        queue = request.app.state.job_queue = JobQueue(request.app.state.settings)
    return queue


def _enqueue(request: Request, job: Any) -> None:
    """Send the committed job to the workers. A broker that is down does not fail the request:
    the job is in the database, and the reconciler sends its message later."""
    queue = _job_queue(request)
    try:
        queue.enqueue(job.id, job.spec)
    except Exception:
        logger.warning("job %s is queued but its message could not be sent yet", job.id)
        return
    try:
        with request.app.state.sessionmaker() as session:
            crud.mark_enqueued(session, job.id)
    except Exception:  # sent: the reconciler may send it again, which a worker skips
        logger.warning("job %s: its message was sent, but not recorded as sent", job.id)


@router.post(
    "",
    status_code=201,
    response_model=JobOut,
    summary="Submit a training job",
    responses={
        200: {
            "model": JobOut,
            "description": "The job an earlier request with this Idempotency-Key created",
        },
        201: {
            "headers": {"Location": {"description": "URL of the job", "schema": {"type": "string"}}}
        },
        **problem_responses(401, 413, 415, 422, 429),
    },
)
def submit_job(
    body: JobCreate,
    request: Request,
    response: Response,
    session: SessionDep,
    principal: PrincipalDep,
    settings: SettingsDep,
    idempotency_key: Annotated[
        str | None,
        Header(
            alias="Idempotency-Key",
            min_length=1,
            max_length=255,
            description="Retries with the same key return the same job (200) instead of a new one. "
            "The same key with a different body is a 422.",
        ),
    ] = None,
) -> JobOut:
    """The whole spec is validated now, by the ``metro`` library itself: an invalid metric,
    unknown surrogate or bad parameter is a 422 naming the field, never a job that fails later.
    So is a job past the server's limits (spec size, model parameters, work; see
    docs/operations.md, "Limits on a job")."""
    try:
        given = body.model_dump(mode="json", exclude_unset=True)
    except ValueError:
        # pydantic's serializer stops at about 255 levels ("Circular reference detected"), which
        # a free-form parameter can reach where the JSON reader (about 1,000) did not: a 500.
        raise InvalidInputError(
            INVALID_JOB, [FieldError(("body",), "the job is nested too deeply to read")]
        ) from None
    nul_errors = fields_with_nul(given, ("body",))
    if nul_errors:
        raise InvalidInputError(INVALID_JOB, nul_errors)
    errors = []
    spec = None
    try:
        spec = normalize_job_spec(body)
    except InvalidInputError as exc:
        errors += exc.errors
    try:
        checked = check_dataset(
            session,
            principal.tenant_id,
            body.dataset,
            locations=LocationPolicy.from_settings(settings),
            resolver=request.app.state.resolver,
            averaged=getattr(body.metric, "average", None) is not None,
        )
    except InvalidInputError as exc:
        errors += exc.errors
    if errors or spec is None:
        raise InvalidInputError(INVALID_JOB, errors)
    spec["dataset"]["uri"] = checked.uri
    # The operator's limits (spec size, model parameters, work) on what is known of the data now.
    check_job_limits(
        spec,
        limits=JobLimits.from_settings(settings),
        data=known_data_size(
            session,
            checked.uri,
            checked.dataset_id,
            averaged=metric_average(spec) is not None,
            label_column=spec["dataset"].get("label_column"),
            label_columns=len(spec["dataset"].get("label_columns") or [None]),
            ignored_columns=len(spec["dataset"].get("ignore_columns") or []),
        ),
    )
    job, created = crud.submit_job(
        session,
        tenant_id=principal.tenant_id,
        spec=spec,
        dataset_uri=checked.uri,
        dataset_id=checked.dataset_id,
        idempotency_key=idempotency_key,
        max_active_jobs=settings.max_active_jobs_per_tenant,
    )
    if created:  # after the commit, so a worker never receives a job it cannot read
        _enqueue(request, job)
    response.status_code = 201 if created else 200
    response.headers["Location"] = str(request.url_for("get_job", job_id=str(job.id)))
    out = JobOut.model_validate(job)
    if out.state == JobState.QUEUED:  # a replay of a finished job asks nothing more
        try:
            live = live_kinds(session, since=_seen_since(settings))
        except DATABASE_UNAVAILABLE:
            # The job is committed (and its message sent): a hint read after it must not turn
            # the answer into a 503, which a client retries into a second job.
            logger.warning("job %s: submitted; the workers' roll call could not be read", job.id)
            session.rollback()
        else:
            out = _said_waiting(out, live, settings)
    return out


def _seen_since(settings: Settings) -> datetime:
    """The oldest word of a worker that still counts it as there (core.workers)."""
    return utcnow() - timedelta(seconds=seen_window(settings))


def _said_waiting(out: JobOut, live: set[str], settings: Settings) -> JobOut:
    """A queued job that no worker serves says why it waits (core.workers)."""
    if out.state == JobState.QUEUED:
        out.waiting = waiting_reason(asks_for_gpu(out.spec), live, seen_window(settings))
    return out


@router.get(
    "",
    response_model=Page[JobOut],
    summary="List jobs, newest first",
    responses=problem_responses(401, 422),
)
def list_jobs(
    session: SessionDep,
    principal: PrincipalDep,
    settings: SettingsDep,
    state: Annotated[JobState | None, Query(description="Only jobs in this state")] = None,
    cursor: CursorQuery = None,
    limit: LimitQuery = None,
) -> Page[JobOut]:
    rows, next_cursor = crud.list_jobs(
        session, principal.tenant_id, state=state, cursor=cursor, limit=page_size(limit, settings)
    )
    items = [JobOut.model_validate(r) for r in rows]
    if any(item.state == JobState.QUEUED for item in items):
        live = live_kinds(session, since=_seen_since(settings))
        items = [_said_waiting(item, live, settings) for item in items]
    return Page[JobOut](items=items, next_cursor=next_cursor)


@router.get(
    "/{job_id}",
    response_model=JobOut,
    summary="Get a job",
    responses=problem_responses(401, 404, 422),
)
async def get_job(job_id: uuid.UUID, request: Request, principal: PrincipalDep) -> JobOut:
    # One Core SELECT on an autocommit connection, in one thread call that holds the connection
    # only while it runs (no session: see service.crud.reads).
    # The workers' roll call rides along, for a queued job's ``waiting`` (core.workers).
    settings = request.app.state.settings
    row = await run_in_threadpool(
        reads.read_job, request.app.state.read_engine, principal.tenant_id, job_id,
        _JOB_COLUMNS, live_columns(_seen_since(settings)),
    )  # fmt: skip
    return _said_waiting(JobOut.model_validate(row), live_kinds_of(row), settings)


# The job's own columns; ``waiting`` is said from the workers' rows.
_JOB_COLUMNS = tuple(name for name in JobOut.model_fields if name != "waiting")


@router.delete(
    "/{job_id}",
    status_code=204,
    summary="Delete a job",
    responses=problem_responses(401, 404, 409, 422),
)
def delete_job(
    job_id: uuid.UUID, request: Request, session: SessionDep, principal: PrincipalDep,
    settings: SettingsDep,
) -> Response:  # fmt: skip
    """Delete a finished job (succeeded, failed or cancelled) and all it produced: its trace,
    results and models, rows and files. A queued or running job is a 409: cancel it first.
    Its dataset stays (delete it apart). A prediction with one of its models that another API
    process holds in its cache answers for METRO_MODEL_REF_CACHE_SECONDS (5) at most."""
    models = crud.delete_job(session, principal.tenant_id, job_id)
    for model_id in models:
        request.app.state.model_refs.discard(principal.tenant_id, model_id)
    remove_tree(settings.artifacts_uri, job_dir(job_id))
    return Response(status_code=204)


@router.post(
    "/{job_id}/cancel",
    response_model=JobOut,
    summary="Cancel a job",
    responses=problem_responses(401, 404, 409, 422),
)
def cancel_job(job_id: uuid.UUID, session: SessionDep, principal: PrincipalDep) -> JobOut:
    """A queued job is cancelled at once; a running one goes to ``cancelling`` until its worker
    stops. Cancelling again is harmless; cancelling a finished job is a 409."""
    return JobOut.model_validate(
        crud.cancel_job(session, principal.tenant_id, job_id)
    )  # not queued


@router.get(
    "/{job_id}/trace",
    response_model=Page[LambdaStepOut],
    summary="The lambda search trace of a job",
    responses=problem_responses(401, 404, 422),
)
def get_job_trace(
    job_id: uuid.UUID,
    session: SessionDep,
    principal: PrincipalDep,
    settings: SettingsDep,
    cursor: StepCursorQuery = None,
    limit: LimitQuery = None,
) -> Page[LambdaStepOut]:
    rows, next_cursor = crud.list_trace(
        session, principal.tenant_id, job_id, cursor=cursor, limit=page_size(limit, settings)
    )
    return Page[LambdaStepOut](
        items=[LambdaStepOut.model_validate(r) for r in rows], next_cursor=next_cursor
    )


@router.get(
    "/{job_id}/result",
    response_model=JobResult,
    response_model_by_alias=True,
    summary="Final metrics of a succeeded job",
    responses=problem_responses(401, 404, 409, 422),
)
def get_job_result(job_id: uuid.UUID, session: SessionDep, principal: PrincipalDep) -> JobResult:
    """lambda*, the metric on validation and test splits with confusion counts for every repeat,
    and mean/std per method (METRO and the requested baselines side by side). 409 until the job
    has succeeded."""
    job, rows = crud.get_result_rows(session, principal.tenant_id, job_id)
    return build_job_result(
        job, rows, labels=crud.delivered_labels(session, principal.tenant_id, job.id)
    )
