"""The workers' writes to the database. Every change of a job a worker holds is a compare-and-set
on its lease (``lease_owner`` = this attempt's token), so a worker whose lease was taken over —
it stalled, the reconciler re-queued the job, another worker claimed it — can no longer change
the job; it only finds out and stops.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.orm import Session

from service.db.models import Job, JobFit, LambdaStep, MetricResult, Model
from service.job_states import JobState
from worker.context import WorkerContext, db_now

HELD = (JobState.RUNNING.value, JobState.CANCELLING.value)
TERMINAL = (JobState.SUCCEEDED.value, JobState.FAILED.value, JobState.CANCELLED.value)


@dataclass(frozen=True)
class ClaimedJob:
    id: uuid.UUID
    tenant_id: uuid.UUID
    spec: dict[str, Any]
    dataset_uri: str
    attempts: int
    max_attempts: int
    shard_size: int


def _lease_until(now: datetime, ctx: WorkerContext) -> datetime:
    return now + timedelta(seconds=ctx.settings.lease_seconds)


# -- jobs ---------------------------------------------------------------------------------------
def claim_job(ctx: WorkerContext, job_id: uuid.UUID, token: str) -> ClaimedJob | None:
    """Take the job if it is queued, or running under an expired lease, with attempts left.
    None if another worker holds it, it is finished, or it does not exist (a duplicate or stale
    message): the caller then simply acknowledges the message."""
    with ctx.session() as session:
        now = db_now(session)
        claimable = or_(
            Job.state == JobState.QUEUED.value,
            and_(Job.state == JobState.RUNNING.value, Job.lease_expires_at < now),
        )
        result = session.execute(
            update(Job)
            .where(Job.id == job_id, claimable, Job.attempts < Job.max_attempts)
            .values(
                state=JobState.RUNNING.value,
                lease_owner=token,
                lease_expires_at=_lease_until(now, ctx),
                heartbeat_at=now,
                attempts=Job.attempts + 1,
                started_at=func.coalesce(Job.started_at, now),
                updated_at=now,
            )
            .execution_options(synchronize_session=False)
        )
        if result.rowcount != 1:  # type: ignore[attr-defined]
            session.rollback()
            return None
        job = session.get(Job, job_id)
        assert job is not None
        if job.shard_size is None:  # fixed at the first claim, for every later attempt
            job.shard_size = ctx.settings.grid_shard_size
        claimed = ClaimedJob(
            id=job.id, tenant_id=job.tenant_id, spec=dict(job.spec), dataset_uri=job.dataset_uri,
            attempts=job.attempts, max_attempts=job.max_attempts, shard_size=job.shard_size,
        )  # fmt: skip
        session.commit()
        return claimed


def renew_job_lease(ctx: WorkerContext, job_id: uuid.UUID, token: str) -> tuple[bool, bool]:
    """(still held, cancel requested)."""
    with ctx.session() as session:
        now = db_now(session)
        result = session.execute(
            update(Job)
            .where(Job.id == job_id, Job.lease_owner == token, Job.state.in_(HELD))
            .values(lease_expires_at=_lease_until(now, ctx), heartbeat_at=now)
            .execution_options(synchronize_session=False)
        )
        held = result.rowcount == 1  # type: ignore[attr-defined]
        cancel = bool(session.scalar(select(Job.cancel_requested).where(Job.id == job_id)) or False)
        session.commit()
        return held, cancel


def job_status(ctx: WorkerContext, job_id: uuid.UUID) -> tuple[str | None, bool]:
    with ctx.session() as session:
        row = session.execute(
            select(Job.state, Job.cancel_requested).where(Job.id == job_id)
        ).one_or_none()
        return (None, False) if row is None else (row[0], bool(row[1]))


def _finish(session: Session, job_id: uuid.UUID, token: str, now: datetime, **values: Any) -> bool:
    result = session.execute(
        update(Job)
        .where(Job.id == job_id, Job.lease_owner == token, Job.state.in_(HELD))
        .values(lease_owner=None, lease_expires_at=None, finished_at=now, updated_at=now, **values)
        .execution_options(synchronize_session=False)
    )
    return result.rowcount == 1  # type: ignore[attr-defined]


def fail_job(ctx: WorkerContext, job_id: uuid.UUID, token: str, reason: str) -> bool:
    with ctx.session() as session:
        ok = _finish(
            session, job_id, token, db_now(session),
            state=JobState.FAILED.value, failure_reason=reason[:2000],
        )  # fmt: skip
        session.commit()
        return ok


def cancel_held_job(ctx: WorkerContext, job_id: uuid.UUID, token: str) -> bool:
    with ctx.session() as session:
        ok = _finish(session, job_id, token, db_now(session), state=JobState.CANCELLED.value)
        session.commit()
        return ok


def release_job(
    ctx: WorkerContext, job_id: uuid.UUID, token: str, *, refund_attempt: bool = False
) -> bool:
    """Give a job back to the queue after a transient failure. Its attempt still counts, unless
    ``refund_attempt`` (the database was unavailable: the job itself did nothing wrong)."""
    with ctx.session() as session:
        now = db_now(session)
        # (held under this lease, so the claim counted at least one attempt)
        refund = {"attempts": Job.attempts - 1} if refund_attempt else {}
        result = session.execute(
            update(Job)
            .where(Job.id == job_id, Job.lease_owner == token, Job.state == JobState.RUNNING.value)
            .values(
                state=JobState.QUEUED.value,
                lease_owner=None,
                lease_expires_at=None,
                updated_at=now,
                **refund,
            )
            .execution_options(synchronize_session=False)
        )
        session.commit()
        return result.rowcount == 1  # type: ignore[attr-defined]


def record_step(
    ctx: WorkerContext,
    job_id: uuid.UUID,
    token: str,
    step: dict[str, Any],
    *,
    progress: float,
    best_lambda: float | None,
) -> bool:
    """Upsert one lambda step (a replayed step after a resume is a no-op: the first write
    stays) and move the job's progress; False if the lease is gone."""
    with ctx.session() as session:
        insert_ignore(
            session, LambdaStep, [{"job_id": job_id, **step}], ("job_id", "repeat", "step")
        )
        result = session.execute(
            update(Job)
            .where(Job.id == job_id, Job.lease_owner == token, Job.state.in_(HELD))
            .values(
                progress=progress,
                current_lambda=step["lambda_"],
                best_lambda=best_lambda,
                updated_at=db_now(session),
            )
            .execution_options(synchronize_session=False)
        )
        session.commit()
        return result.rowcount == 1  # type: ignore[attr-defined]


def set_progress(ctx: WorkerContext, job_id: uuid.UUID, token: str, progress: float) -> bool:
    with ctx.session() as session:
        result = session.execute(
            update(Job)
            .where(Job.id == job_id, Job.lease_owner == token, Job.state.in_(HELD))
            .values(progress=progress, updated_at=db_now(session))
            .execution_options(synchronize_session=False)
        )
        session.commit()
        return result.rowcount == 1  # type: ignore[attr-defined]


def set_choices(
    ctx: WorkerContext,
    job_id: uuid.UUID,
    token: str,
    choices: list[dict[str, Any]],
    *,
    best_lambda: float | None,
) -> bool:
    """Record what the repeats' searches have chosen so far (and the delivered model's lambda
    once repeat 0 has chosen); False if the lease is gone."""
    with ctx.session() as session:
        result = session.execute(
            update(Job)
            .where(Job.id == job_id, Job.lease_owner == token, Job.state.in_(HELD))
            .values(choices=choices, best_lambda=best_lambda, updated_at=db_now(session))
            .execution_options(synchronize_session=False)
        )
        session.commit()
        return result.rowcount == 1  # type: ignore[attr-defined]


def succeed_job(
    ctx: WorkerContext,
    job_id: uuid.UUID,
    token: str,
    *,
    metric_rows: list[dict[str, Any]],
    model_row: dict[str, Any] | None,
    best_lambda: float | None,
    choices: list[dict[str, Any]] | None = None,
) -> str:
    """One transaction: the metric results, the model row and the final state. Returns the state
    the job ended in ("succeeded", or "cancelled" when a cancel arrived first), or "lost"."""
    with ctx.session() as session:
        job = session.scalar(
            select(Job)
            .where(Job.id == job_id, Job.lease_owner == token, Job.state.in_(HELD))
            .with_for_update()
        )
        if job is None:
            session.rollback()
            return "lost"
        now = db_now(session)
        if job.cancel_requested:
            _finish(session, job_id, token, now, state=JobState.CANCELLED.value)
            session.commit()
            return JobState.CANCELLED.value
        insert_ignore(
            session, MetricResult, [{"job_id": job_id, **r} for r in metric_rows],
            ("job_id", "method", "repeat", "split"),
        )  # fmt: skip
        if model_row is not None:
            insert_ignore(session, Model, [model_row], ("id",))
        _finish(
            session, job_id, token, now, state=JobState.SUCCEEDED.value, progress=1.0,
            best_lambda=best_lambda, failure_reason=None,
            **({} if choices is None else {"choices": choices}),
        )  # fmt: skip
        session.commit()
        return JobState.SUCCEEDED.value


def insert_ignore(
    session: Session, model: type[Any], rows: list[dict[str, Any]], keys: tuple[str, ...]
) -> None:
    """INSERT ... ON CONFLICT DO NOTHING on PostgreSQL and SQLite."""
    if not rows:
        return
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    elif dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert  # type: ignore[assignment]
    else:  # pragma: no cover - the service supports these two
        raise RuntimeError(f"unsupported database {dialect}")
    now_defaults = {"created_at": db_now(session)}
    if hasattr(model, "updated_at"):
        now_defaults["updated_at"] = now_defaults["created_at"]
    values = [{**now_defaults, **row} for row in rows]
    session.execute(insert(model).values(values).on_conflict_do_nothing(index_elements=list(keys)))


# -- fits -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FitRow:
    key: str
    repeat: int
    role: str
    shift: str
    lambdas: list[float]
    shareable: bool
    state: str
    lease_owner: str | None
    lease_expires_at: datetime | None
    artifact: str | None
    sha256: str | None
    surrogate_loss: list[float] | None


def _fit_row(f: JobFit) -> FitRow:
    losses = None if f.surrogate_loss is None else [_loss_in(v) for v in f.surrogate_loss]
    return FitRow(
        key=f.key, repeat=f.repeat, role=f.role, shift=f.shift, lambdas=list(f.lambdas),
        shareable=f.shareable, state=f.state, lease_owner=f.lease_owner,
        lease_expires_at=f.lease_expires_at, artifact=f.artifact, sha256=f.sha256,
        surrogate_loss=losses,
    )  # fmt: skip


# A diverged fit's loss is +inf (metro's convention); JSON has no infinity, so it is stored null.
def _loss_out(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _loss_in(value: float | None) -> float:
    return math.inf if value is None else float(value)


def ensure_fits(
    ctx: WorkerContext, job_id: uuid.UUID, rows: list[dict[str, Any]]
) -> dict[str, FitRow]:
    """Create the fits of one solve call unless they exist; return them all by key."""
    with ctx.session() as session:
        insert_ignore(
            session, JobFit,
            [{"job_id": job_id, "state": "pending", "attempts": 0, **r} for r in rows],
            ("job_id", "key"),
        )  # fmt: skip
        session.commit()
        found = session.scalars(
            select(JobFit).where(JobFit.job_id == job_id, JobFit.key.in_([r["key"] for r in rows]))
        ).all()
        return {f.key: _fit_row(f) for f in found}


def get_fit(ctx: WorkerContext, job_id: uuid.UUID, key: str) -> FitRow | None:
    with ctx.session() as session:
        f = session.scalar(select(JobFit).where(JobFit.job_id == job_id, JobFit.key == key))
        return None if f is None else _fit_row(f)


def open_shareable_fits(ctx: WorkerContext, job_id: uuid.UUID) -> list[FitRow]:
    """Grid shards nobody holds (pending, or running under an expired lease)."""
    with ctx.session() as session:
        now = db_now(session)
        found = session.scalars(
            select(JobFit)
            .where(
                JobFit.job_id == job_id,
                JobFit.shareable.is_(True),
                or_(
                    JobFit.state == "pending",
                    and_(JobFit.state == "running", JobFit.lease_expires_at < now),
                ),
            )
            .order_by(JobFit.id)
        ).all()
        return [_fit_row(f) for f in found]


def claim_fit(ctx: WorkerContext, job_id: uuid.UUID, key: str, token: str) -> bool:
    with ctx.session() as session:
        now = db_now(session)
        result = session.execute(
            update(JobFit)
            .where(
                JobFit.job_id == job_id,
                JobFit.key == key,
                or_(
                    JobFit.state == "pending",
                    and_(JobFit.state == "running", JobFit.lease_expires_at < now),
                ),
            )
            .values(
                state="running",
                lease_owner=token,
                lease_expires_at=_lease_until(now, ctx),
                attempts=JobFit.attempts + 1,
                updated_at=now,
            )
            .execution_options(synchronize_session=False)
        )
        session.commit()
        return result.rowcount == 1  # type: ignore[attr-defined]


def renew_fit_lease(ctx: WorkerContext, job_id: uuid.UUID, key: str, token: str) -> bool:
    with ctx.session() as session:
        now = db_now(session)
        result = session.execute(
            update(JobFit)
            .where(
                JobFit.job_id == job_id,
                JobFit.key == key,
                JobFit.lease_owner == token,
                JobFit.state == "running",
            )
            .values(lease_expires_at=_lease_until(now, ctx))
            .execution_options(synchronize_session=False)
        )
        session.commit()
        return result.rowcount == 1  # type: ignore[attr-defined]


def complete_fit(
    ctx: WorkerContext,
    job_id: uuid.UUID,
    key: str,
    *,
    artifact: str,
    sha256: str,
    surrogate_loss: list[float],
    seconds: float,
) -> bool:
    """Mark a fit done (whoever fitted it: the results of one fit are the same everywhere, so a
    fit finished twice after a lease takeover keeps the first)."""
    with ctx.session() as session:
        result = session.execute(
            update(JobFit)
            .where(JobFit.job_id == job_id, JobFit.key == key, JobFit.state != "done")
            .values(
                state="done",
                artifact=artifact,
                sha256=sha256,
                surrogate_loss=[_loss_out(v) for v in surrogate_loss],
                seconds=seconds,
                lease_owner=None,
                lease_expires_at=None,
                updated_at=db_now(session),
            )
            .execution_options(synchronize_session=False)
        )
        session.commit()
        return result.rowcount == 1  # type: ignore[attr-defined]
