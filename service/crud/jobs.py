"""Jobs: submission (idempotent), reads, cancellation, and the trace/result rows of a job."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import and_, delete, func, or_, select
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.orm import Session

from core import store
from core.db.base import utcnow
from core.db.errors import is_lock_conflict
from core.db.models import Job, JobFit, LambdaStep, MetricResult, Model
from core.errors import (
    ConflictError,
    IdempotencyKeyReusedError,
    NotFoundError,
    NotReadyError,
    QuotaExceededError,
)
from core.job_spec import current_spec_hash, spec_hash
from core.records import ManifestLabels
from core.states import TERMINAL_STATES, IllegalTransitionError, JobState
from service.crud.datasets import dataset_exists, unknown_dataset
from service.crud.pagination import decode_step_cursor, encode_step_cursor, newest_first_page
from service.crud.tenants import lock_tenant


def submit_job(
    session: Session,
    *,
    tenant_id: uuid.UUID,
    spec: dict[str, Any],
    dataset_uri: str,
    dataset_id: uuid.UUID | None,
    idempotency_key: str | None,
    max_active_jobs: int = 0,
) -> tuple[Job, bool]:
    """Create a queued job, or return the job an earlier submission with the same
    ``idempotency_key`` created. Returns ``(job, created)``.

    The key is scoped to the tenant. Reusing it with a *different* normalized spec raises
    :class:`IdempotencyKeyReusedError` (the API answers 422, as the IETF Idempotency-Key draft
    recommends); the spec is compared after normalization, so spelling out a default is the
    same request.

    ``max_active_jobs`` (0: none) caps the tenant's queued, running and cancelling jobs; a new
    job past it raises :class:`QuotaExceededError` (a replayed one is always returned). The
    tenant's row is locked while counting, so concurrent submissions cannot overshoot it.
    """
    for attempt in range(_CONFLICT_ATTEMPTS):
        try:
            return _submit_once(
                session, tenant_id=tenant_id, spec=spec, dataset_uri=dataset_uri,
                dataset_id=dataset_id, idempotency_key=idempotency_key,
                max_active_jobs=max_active_jobs,
            )  # fmt: skip
        except OperationalError as exc:
            # Submissions with one key, a quota's tenant lock and a worker claiming the new job
            # can close a cycle of lock waits; Postgres breaks it by aborting one of them, which
            # was answered 503 "database unavailable". Run again, it finds the key's job.
            if not is_lock_conflict(exc) or attempt == _CONFLICT_ATTEMPTS - 1:
                raise
            session.rollback()
    raise AssertionError("unreachable")


# A transaction aborted for another one is run again this many times in all.
_CONFLICT_ATTEMPTS = 3


def _submit_once(
    session: Session,
    *,
    tenant_id: uuid.UUID,
    spec: dict[str, Any],
    dataset_uri: str,
    dataset_id: uuid.UUID | None,
    idempotency_key: str | None,
    max_active_jobs: int,
) -> tuple[Job, bool]:
    request_hash = spec_hash(spec)
    if idempotency_key is not None:
        existing = _by_idempotency_key(session, tenant_id, idempotency_key)
        if existing is not None:
            return _replayed(existing, request_hash), False
    if max_active_jobs > 0:
        _check_quota(session, tenant_id, max_active_jobs)
    job = store.add_job(
        session,
        tenant_id=tenant_id,
        spec=spec,
        dataset_uri=dataset_uri,
        dataset_id=dataset_id,
        idempotency_key=idempotency_key,
        request_hash=request_hash,
    )
    try:
        session.commit()
    except IntegrityError:
        session.rollback()
        # The dataset was deleted since it was checked (SQLite: no row lock held it; see
        # service.crud.datasets): the same answer as for a dataset that never existed.
        if dataset_id is not None and not dataset_exists(session, tenant_id, dataset_id):
            raise unknown_dataset(dataset_id) from None
        # Two concurrent requests with one key: the unique constraint let exactly one insert win.
        if idempotency_key is None:
            raise
        existing = _by_idempotency_key(session, tenant_id, idempotency_key)
        if existing is None:
            raise
        return _replayed(existing, request_hash), False
    return job, True


_ACTIVE = (JobState.QUEUED.value, JobState.RUNNING.value, JobState.CANCELLING.value)


def _check_quota(session: Session, tenant_id: uuid.UUID, limit: int) -> None:
    lock_tenant(session, tenant_id)  # the tenant's submissions, one at a time until commit
    active = session.scalar(
        select(func.count())
        .select_from(Job)
        .where(Job.tenant_id == tenant_id, Job.state.in_(_ACTIVE))
    )
    if active is not None and active >= limit:
        session.rollback()  # release the lock now
        raise QuotaExceededError(
            f"this tenant has {active} active jobs (queued, running or cancelling), the most "
            f"allowed at once is {limit}: wait for one to finish, or cancel one"
        )


def _by_idempotency_key(session: Session, tenant_id: uuid.UUID, key: str) -> Job | None:
    return session.scalar(select(Job).where(Job.tenant_id == tenant_id, Job.idempotency_key == key))


def _replayed(job: Job, request_hash: str) -> Job:
    # The stored hash, else the stored spec's hash in this version's form (a job submitted
    # before an upgrade that changed how a spec is normalized is still the same request).
    if job.request_hash != request_hash and current_spec_hash(job.spec) != request_hash:
        raise IdempotencyKeyReusedError(
            "this Idempotency-Key was already used for a different job submission"
        )
    return job


def get_job(
    session: Session, tenant_id: uuid.UUID, job_id: uuid.UUID, *, lock: bool = False
) -> Job:
    stmt = select(Job).where(Job.id == job_id, Job.tenant_id == tenant_id)
    if lock:
        stmt = stmt.with_for_update()  # serializes with a worker claiming the same row
    job = session.scalar(stmt)
    if job is None:
        raise NotFoundError("job", job_id)
    return job


def list_jobs(
    session: Session,
    tenant_id: uuid.UUID,
    *,
    state: JobState | None,
    cursor: str | None,
    limit: int,
) -> tuple[list[Job], str | None]:
    stmt = select(Job).where(Job.tenant_id == tenant_id)
    if state is not None:
        stmt = stmt.where(Job.state == state.value)
    return newest_first_page(session, stmt, Job, cursor, limit)


def cancel_job(session: Session, tenant_id: uuid.UUID, job_id: uuid.UUID) -> Job:
    """Cancel at once if queued; ask the worker to stop if running; repeatable."""
    job = get_job(session, tenant_id, job_id, lock=True)
    try:
        changed = store.request_cancel(session, job.id, utcnow())
    except IllegalTransitionError as exc:
        session.rollback()
        raise ConflictError(
            f"job {job_id} has already {exc.current.value}; it cannot be cancelled"
        ) from None
    if changed:
        session.commit()
    else:
        session.rollback()  # already asked: cancelling twice is not an error
    session.refresh(job)  # the row as the compare-and-set left it
    return job


def delete_job(session: Session, tenant_id: uuid.UUID, job_id: uuid.UUID) -> list[uuid.UUID]:
    """Delete a finished job with all it left in the database: its trace, results, recorded fits
    and models (their ids are returned). The caller then removes its files from the store
    (after this commit: a failure between the two leaves files no row names, never a row
    without its files).

    Refused (409) while the job is queued, running or cancelling: a worker may be writing to it,
    and its owner should cancel it first. The row is locked, so a worker's claim of a queued job
    and this check cannot interleave."""
    job = get_job(session, tenant_id, job_id, lock=True)
    state = JobState(job.state)
    if state not in TERMINAL_STATES:
        session.rollback()
        raise ConflictError(
            f"job {job_id} is {state.value}: cancel it first (POST /v1/jobs/{job_id}/cancel), "
            "then delete it once it is cancelled"
        )
    models = list(session.scalars(select(Model.id).where(Model.job_id == job.id)))
    for child in (Model, LambdaStep, MetricResult, JobFit):  # SQLite enforces no FK cascade
        session.execute(delete(child).where(child.job_id == job.id))
    session.delete(job)
    session.commit()
    return models


def mark_enqueued(session: Session, job_id: uuid.UUID) -> None:
    """Record that the job's message was handed to the broker (the reconciler resends none)."""
    store.mark_enqueued(session, job_id, utcnow())
    session.commit()


def list_trace(
    session: Session,
    tenant_id: uuid.UUID,
    job_id: uuid.UUID,
    *,
    cursor: str | None,
    limit: int,
) -> tuple[list[LambdaStep], str | None]:
    """Lambda steps in search order, ``(repeat, step)`` ascending; the cursor is the last key, so
    steps a running worker appends show up on later pages, never twice."""
    get_job(session, tenant_id, job_id)
    stmt = select(LambdaStep).where(LambdaStep.job_id == job_id)
    if cursor is not None:
        repeat, step = decode_step_cursor(cursor)
        stmt = stmt.where(
            or_(
                LambdaStep.repeat > repeat,
                and_(LambdaStep.repeat == repeat, LambdaStep.step > step),
            )
        )
    stmt = stmt.order_by(LambdaStep.repeat, LambdaStep.step).limit(limit + 1)
    rows = list(session.scalars(stmt))
    if len(rows) <= limit:
        return rows, None
    rows = rows[:limit]
    return rows, encode_step_cursor(rows[-1].repeat, rows[-1].step)


def get_result_rows(
    session: Session, tenant_id: uuid.UUID, job_id: uuid.UUID
) -> tuple[Job, list[MetricResult]]:
    job = get_job(session, tenant_id, job_id)
    if job.state in (JobState.FAILED.value, JobState.CANCELLED.value):
        # Not "not ready": it never will be, and why is what the client needs to know.
        reason = f": {job.failure_reason}" if job.failure_reason else ""
        raise ConflictError(f"job {job_id} {job.state}{reason}; it has no result")
    if job.state != JobState.SUCCEEDED.value:
        raise NotReadyError(
            f"job {job_id} is {job.state}; its result is available once it has succeeded"
        )
    rows = session.scalars(
        select(MetricResult)
        .where(MetricResult.job_id == job_id)
        .order_by(MetricResult.method, MetricResult.repeat, MetricResult.split)
    )
    return job, list(rows)


def delivered_labels(
    session: Session, tenant_id: uuid.UUID, job_id: uuid.UUID
) -> ManifestLabels | None:
    """A binary job's positive and negative label as its delivered model predicts them (the
    model manifest's ``labels``: what the worker resolved, where the spec may have left
    ``positive_label`` to be inferred); None without a model, or for one of several classes."""
    manifest = session.scalar(
        select(Model.manifest)
        .where(Model.job_id == job_id, Model.tenant_id == tenant_id)
        .order_by(Model.created_at)
        .limit(1)
    )
    labels = (manifest or {}).get("labels")
    if not isinstance(labels, dict) or (manifest or {}).get("classes") is not None:
        return None
    try:
        return ManifestLabels.model_validate(labels)
    except ValueError:  # a manifest this version cannot read: say nothing rather than fail
        return None


# -- writes used by the workers (and by tests to stand in for them) -------------------------


def record_lambda_step(session: Session, job_id: uuid.UUID, **fields: Any) -> bool:
    """Insert one trace point; False (and no change) if ``(job, repeat, step)`` is already there,
    which makes a retried write after a lost acknowledgement harmless."""
    try:
        with session.begin_nested():
            session.add(LambdaStep(job_id=job_id, **fields))
    except IntegrityError:
        return False
    return True


def record_metric_result(session: Session, job_id: uuid.UUID, **fields: Any) -> bool:
    """Insert one final metric row; False if that (method, repeat, split) is already recorded."""
    try:
        with session.begin_nested():
            session.add(MetricResult(job_id=job_id, **fields))
    except IntegrityError:
        return False
    return True
