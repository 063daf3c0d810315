"""The job store: the one place that changes the state of a job or of a fit.

Every change is checked against the tables of :mod:`core.states` (an illegal one raises
:class:`~core.states.IllegalTransitionError` before anything is written) and made as a
compare-and-set: the UPDATE names the states it may start from, and a worker's writes also name
its lease (``lease_owner`` = this attempt's token), so a worker whose lease was taken over — it
stalled, the reconciler re-queued the job, another worker claimed it — can no longer change the
job; it only finds out and stops.

The API submits and cancels (in the request's session, committed by the caller); the workers'
functions take a :class:`StoreContext` and run one transaction each; the reconciler's take the
session it holds.
"""

from __future__ import annotations

import math
import numbers
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol, cast

from sqlalchemy import (
    ColumnElement,
    CursorResult,
    Result,
    and_,
    case,
    func,
    or_,
    select,
    update,
)
from sqlalchemy.orm import Session

from core.config import Settings
from core.db.base import db_now
from core.db.models import Job, JobFit, LambdaStep, MetricResult, Model
from core.job_spec import asks_for_gpu
from core.records import MetricRecord, RepeatChoice, StepRecord, choices_json
from core.states import (
    HELD_STATES,
    TERMINAL_STATES,
    FitState,
    JobState,
    check_fit_transition,
    check_job_transition,
)

HELD = tuple(s.value for s in HELD_STATES)
TERMINAL = tuple(s.value for s in TERMINAL_STATES)


class StoreContext(Protocol):
    """What the workers' functions need: the settings (lease length, shard size) and sessions."""

    @property
    def settings(self) -> Settings: ...

    def session(self) -> Session: ...


class NonFiniteValueError(ValueError):
    """A job's own number that is not finite (NaN, inf) on its way to the database. A JSON column
    cannot hold one (PostgreSQL refuses the whole statement, which would read as a database
    error and be retried), so the worker's writes check first and the job fails, naming it."""


def _non_finite(value: Any, path: str = "") -> tuple[str, float] | None:
    """The first number under ``value`` (dicts, lists, tuples) that is not finite, with its
    path (``lambdas[3]``, ``refinement.scores[0].score``); None if every number is."""
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral):
        number = float(value)
        return None if math.isfinite(number) else (path or "value", number)
    if isinstance(value, dict):
        items: Iterable[tuple[str, Any]] = (
            (f"{path}.{key}" if path else str(key), item) for key, item in value.items()
        )
    elif isinstance(value, list | tuple):
        items = ((f"{path}[{index}]", item) for index, item in enumerate(value))
    else:
        return None
    for where, item in items:
        found = _non_finite(item, where)
        if found is not None:
            return found
    return None


def require_finite(what: str, **values: Any) -> None:
    """Raise NonFiniteValueError if a number under ``values`` is not finite; ``what`` says whose
    numbers they are (``"trace step 3 of repeat 0"``)."""
    found = _non_finite(values)
    if found is not None:
        where, number = found
        raise NonFiniteValueError(
            f"the job produced a non-finite number ({number}) as {where} of {what}; nothing "
            "was recorded (a diverged fit, or a lambda range past what floats hold)"
        )


def _changed_one(result: Result[Any]) -> bool:
    # An UPDATE's result is a CursorResult, which counts the rows the statement matched.
    return cast("CursorResult[Any]", result).rowcount == 1


def _update_held_job(session: Session, job_id: uuid.UUID, token: str, **values: Any) -> bool:
    """Set ``values`` on the job while ``token`` holds its lease; False if it no longer does."""
    result = session.execute(
        update(Job)
        .where(Job.id == job_id, Job.lease_owner == token, Job.state.in_(HELD))
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    return _changed_one(result)


# -- the state machine's writes -------------------------------------------------------------------
def move_job(
    session: Session,
    job_id: uuid.UUID,
    *,
    sources: Iterable[JobState],
    to: JobState,
    where: Iterable[ColumnElement[bool]] = (),
    **values: Any,
) -> bool:
    """Compare-and-set: move the job to ``to`` if it is in one of ``sources`` (and ``where``
    holds), writing ``values`` too. Raises IllegalTransitionError if the table forbids any of
    ``sources -> to``; False if the row did not match (someone else changed it first)."""
    sources = [JobState(s) for s in sources]
    for source in sources:
        check_job_transition(source, to)
    result = session.execute(
        update(Job)
        .where(Job.id == job_id, Job.state.in_([s.value for s in sources]), *where)
        .values(state=JobState(to).value, **values)
        .execution_options(synchronize_session=False)
    )
    return _changed_one(result)


def move_fit(
    session: Session,
    job_id: uuid.UUID,
    key: str,
    *,
    sources: Iterable[FitState],
    to: FitState,
    where: Iterable[ColumnElement[bool]] = (),
    **values: Any,
) -> bool:
    """:func:`move_job` for one fit of a job."""
    sources = [FitState(s) for s in sources]
    for source in sources:
        check_fit_transition(source, to)
    result = session.execute(
        update(JobFit)
        .where(
            JobFit.job_id == job_id,
            JobFit.key == key,
            JobFit.state.in_([s.value for s in sources]),
            *where,
        )
        .values(state=FitState(to).value, **values)
        .execution_options(synchronize_session=False)
    )
    return _changed_one(result)


# -- the API: submission and cancellation ------------------------------------------------------
def add_job(session: Session, **fields: Any) -> Job:
    """A new job, queued (added to the session; the caller commits)."""
    job = Job(state=JobState.QUEUED.value, **fields)
    session.add(job)
    return job


def request_cancel(session: Session, job_id: uuid.UUID, now: datetime) -> bool:
    """Cancel a queued job at once; ask a running one's worker to stop (``cancelling``). False
    when a cancel was asked already (cancelling, cancelled): nothing changes. A finished job
    raises IllegalTransitionError. A compare-and-set against the state it read, like every
    other move: SQLite takes no row lock, and a worker that finished (or claimed) the job
    between the read and the write was overwritten (a succeeded job left ``cancelling`` for
    ever); the state is read again and the decision made again. The caller commits."""
    while True:
        current = session.scalar(select(Job.state).where(Job.id == job_id))
        if current is None:
            raise LookupError(f"no job {job_id}")
        state = JobState(current)
        if state in (JobState.CANCELLING, JobState.CANCELLED):
            return False
        target = JobState.CANCELLED if state is JobState.QUEUED else JobState.CANCELLING
        values: dict[str, Any] = {"cancel_requested": True, "updated_at": now}
        if target is JobState.CANCELLED:
            values["finished_at"] = now
        if move_job(session, job_id, sources=(state,), to=target, **values):
            return True


def mark_enqueued(session: Session, job_id: uuid.UUID, now: datetime) -> None:
    """Record that a message for this job was handed to the broker just now."""
    session.execute(
        update(Job)
        .where(Job.id == job_id)
        .values(enqueued_at=now)
        .execution_options(synchronize_session=False)
    )


@dataclass(frozen=True)
class ClaimedJob:
    id: uuid.UUID
    tenant_id: uuid.UUID
    spec: dict[str, Any]
    dataset_uri: str
    attempts: int
    max_attempts: int
    shard_size: int


def _lease_until(now: datetime, ctx: StoreContext) -> datetime:
    return now + timedelta(seconds=ctx.settings.lease_seconds)


# -- jobs ---------------------------------------------------------------------------------------
def claim_job(ctx: StoreContext, job_id: uuid.UUID, token: str) -> ClaimedJob | None:
    """Take the job if it is queued, or running under an expired lease, with attempts left.
    None if another worker holds it, it is finished, or it does not exist (a duplicate or stale
    message): the caller then simply acknowledges the message."""
    with ctx.session() as session:
        now = db_now(session)
        claimed_row = move_job(
            session,
            job_id,
            # queued, or running under an expired lease (a takeover)
            sources=(JobState.QUEUED, JobState.RUNNING),
            to=JobState.RUNNING,
            where=(
                or_(Job.state == JobState.QUEUED.value, Job.lease_expires_at < now),
                Job.attempts < Job.max_attempts,
            ),
            lease_owner=token,
            lease_expires_at=_lease_until(now, ctx),
            heartbeat_at=now,
            attempts=Job.attempts + 1,
            started_at=func.coalesce(Job.started_at, now),
            updated_at=now,
        )
        if not claimed_row:
            session.rollback()
            return None
        job = session.get(Job, job_id)
        assert job is not None
        if job.shard_size is None:  # fixed at the first claim, for every later attempt
            job.shard_size = (
                ctx.settings.gpu_grid_shard_size
                if asks_for_gpu(job.spec)
                else ctx.settings.grid_shard_size
            )
        claimed = ClaimedJob(
            id=job.id, tenant_id=job.tenant_id, spec=dict(job.spec), dataset_uri=job.dataset_uri,
            attempts=job.attempts, max_attempts=job.max_attempts, shard_size=job.shard_size,
        )  # fmt: skip
        session.commit()
        return claimed


def renew_job_lease(ctx: StoreContext, job_id: uuid.UUID, token: str) -> tuple[bool, bool]:
    """(still held, cancel requested)."""
    with ctx.session() as session:
        now = db_now(session)
        held = _update_held_job(
            session, job_id, token, lease_expires_at=_lease_until(now, ctx), heartbeat_at=now
        )
        cancel = bool(session.scalar(select(Job.cancel_requested).where(Job.id == job_id)) or False)
        session.commit()
        return held, cancel


def job_status(ctx: StoreContext, job_id: uuid.UUID) -> tuple[str | None, bool]:
    with ctx.session() as session:
        row = session.execute(
            select(Job.state, Job.cancel_requested).where(Job.id == job_id)
        ).one_or_none()
        return (None, False) if row is None else (row[0], bool(row[1]))


def _finish(
    session: Session, job_id: uuid.UUID, token: str, now: datetime, to: JobState, **values: Any
) -> bool:
    return move_job(
        session, job_id, sources=HELD_STATES, to=to, where=(Job.lease_owner == token,),
        lease_owner=None, lease_expires_at=None, finished_at=now, updated_at=now, **values,
    )  # fmt: skip


def fail_job(ctx: StoreContext, job_id: uuid.UUID, token: str, reason: str) -> bool:
    with ctx.session() as session:
        ok = _finish(
            session, job_id, token, db_now(session),
            JobState.FAILED, failure_reason=reason[:2000],
        )  # fmt: skip
        session.commit()
        return ok


def cancel_held_job(ctx: StoreContext, job_id: uuid.UUID, token: str) -> bool:
    with ctx.session() as session:
        ok = _finish(session, job_id, token, db_now(session), JobState.CANCELLED)
        session.commit()
        return ok


def release_job(
    ctx: StoreContext, job_id: uuid.UUID, token: str, *, refund_attempt: bool = False
) -> bool:
    """Give a job back to the queue after a transient failure. Its attempt still counts, unless
    ``refund_attempt`` (the database was unavailable: the job itself did nothing wrong)."""
    with ctx.session() as session:
        now = db_now(session)
        # (held under this lease, so the claim counted at least one attempt)
        refund = {"attempts": Job.attempts - 1} if refund_attempt else {}
        released = move_job(
            session,
            job_id,
            sources=(JobState.RUNNING,),
            to=JobState.QUEUED,
            where=(Job.lease_owner == token,),
            lease_owner=None,
            lease_expires_at=None,
            updated_at=now,
            **refund,
        )
        if released:
            # The fit this attempt was training is let go too, so that the next attempt (on any
            # worker) takes it over at once instead of waiting for its lease to run out.
            session.execute(
                update(JobFit)
                .where(
                    JobFit.job_id == job_id,
                    JobFit.lease_owner == token,
                    JobFit.state == FitState.RUNNING.value,
                )
                .values(lease_expires_at=now)
                .execution_options(synchronize_session=False)
            )
        session.commit()
        return released


def record_step(
    ctx: StoreContext,
    job_id: uuid.UUID,
    token: str,
    record: StepRecord,
    *,
    progress: float,
    best_lambda: float | None,
) -> bool:
    """Upsert one lambda step (a replayed step after a resume is a no-op: the first write
    stays) and move the job's progress; False if the lease is gone. NonFiniteValueError for a
    non-finite number (runner.step_row stores a diverged fit's loss as null)."""
    step = record.model_dump()
    require_finite(
        f"trace step {record.step} of repeat {record.repeat}",
        step=step, progress=progress, best_lambda=best_lambda,
    )  # fmt: skip
    with ctx.session() as session:
        # The lease first: a writer that no longer holds the job (it ended, another attempt took
        # it) adds nothing to its trace.
        held = _update_held_job(
            session, job_id, token,
            progress=_not_back(progress), current_lambda=record.lambda_, best_lambda=best_lambda,
            updated_at=db_now(session),
        )  # fmt: skip
        if not held:
            session.rollback()
            return False
        insert_ignore(
            session, LambdaStep, [{"job_id": job_id, **step}], ("job_id", "repeat", "step")
        )
        session.commit()
        return True


def _not_back(progress: float) -> ColumnElement[float]:
    """The job's progress moved to ``progress`` but never back: a later attempt counts its
    work afresh (resumed steps come in as it reaches them), which read 0.063 then 0.048."""
    return case((Job.progress > progress, Job.progress), else_=progress)


def set_progress(ctx: StoreContext, job_id: uuid.UUID, token: str, progress: float) -> bool:
    require_finite("the job's progress", progress=progress)
    with ctx.session() as session:
        held = _update_held_job(
            session, job_id, token, progress=_not_back(progress), updated_at=db_now(session)
        )
        session.commit()
        return held


def pin_job_data(ctx: StoreContext, job_id: uuid.UUID, token: str, digest: str) -> str | None:
    """Pin the digest of the data the job's worker loaded, the first time it is loaded (one
    compare-and-set: never overwritten), and return the pinned one, which the caller compares
    with its own; None if the lease is gone."""
    with ctx.session() as session:
        held = _update_held_job(
            session, job_id, token, data_sha256=func.coalesce(Job.data_sha256, digest)
        )
        session.commit()
        if not held:
            return None
        return session.scalar(select(Job.data_sha256).where(Job.id == job_id))


def pinned_job_data(ctx: StoreContext, job_id: uuid.UUID) -> str | None:
    """The data digest a job's worker pinned (None: none yet)."""
    with ctx.session() as session:
        return session.scalar(select(Job.data_sha256).where(Job.id == job_id))


def set_choices(
    ctx: StoreContext,
    job_id: uuid.UUID,
    token: str,
    choices: list[RepeatChoice],
    *,
    best_lambda: float | None,
) -> bool:
    """Record what the repeats' searches have chosen so far (and the delivered model's lambda
    once repeat 0 has chosen); False if the lease is gone."""
    stored = choices_json(choices)
    require_finite("the repeats' choices", choices=stored, best_lambda=best_lambda)
    with ctx.session() as session:
        held = _update_held_job(
            session, job_id, token,
            choices=stored, best_lambda=best_lambda, updated_at=db_now(session),
        )  # fmt: skip
        session.commit()
        return held


def succeed_job(
    ctx: StoreContext,
    job_id: uuid.UUID,
    token: str,
    *,
    metric_records: list[MetricRecord],
    model_row: dict[str, Any] | None,
    best_lambda: float | None,
    choices: list[RepeatChoice] | None = None,
) -> str:
    """One transaction: the metric results, the model row and the final state. Returns the state
    the job ended in ("succeeded", or "cancelled" when a cancel arrived first), or "lost"."""
    stored = None if choices is None else choices_json(choices)
    metric_rows = [r.model_dump() for r in metric_records]
    require_finite(
        "the job's results",
        runs=metric_rows, model=model_row, best_lambda=best_lambda, choices=stored,
    )  # fmt: skip
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
            _finish(session, job_id, token, now, JobState.CANCELLED)
            session.commit()
            return JobState.CANCELLED.value
        insert_ignore(
            session, MetricResult, [{"job_id": job_id, **r} for r in metric_rows],
            ("job_id", "method", "repeat", "split", "class_index"),
        )  # fmt: skip
        if model_row is not None:
            insert_ignore(session, Model, [model_row], ("id",))
        _finish(
            session, job_id, token, now, JobState.SUCCEEDED, progress=1.0,
            best_lambda=best_lambda, failure_reason=None,
            **({} if stored is None else {"choices": stored}),
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
    # The constraints' multipliers, one row per lambda (None: an unconstrained fit).
    multipliers: list[list[float]] | None = None


def _fit_row(f: JobFit) -> FitRow:
    losses = None if f.surrogate_loss is None else [_loss_in(v) for v in f.surrogate_loss]
    return FitRow(
        key=f.key, repeat=f.repeat, role=f.role, shift=f.shift, lambdas=list(f.lambdas),
        shareable=f.shareable, state=f.state, lease_owner=f.lease_owner,
        lease_expires_at=f.lease_expires_at, artifact=f.artifact, sha256=f.sha256,
        surrogate_loss=losses,
        multipliers=None if f.multipliers is None else [list(row) for row in f.multipliers],
    )  # fmt: skip


# A diverged fit's loss is +inf (metro's convention); JSON has no infinity, so it is stored null.
def _loss_out(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _loss_in(value: float | None) -> float:
    return math.inf if value is None else float(value)


def ensure_fits(
    ctx: StoreContext, job_id: uuid.UUID, rows: list[dict[str, Any]]
) -> dict[str, FitRow]:
    """Create the fits of one solve call unless they exist; return them all by key."""
    for row in rows:
        require_finite(f"fit {row.get('key')}", **row)
    with ctx.session() as session:
        insert_ignore(
            session, JobFit,
            [{"job_id": job_id, "state": FitState.PENDING.value, "attempts": 0, **r} for r in rows],
            ("job_id", "key"),
        )  # fmt: skip
        session.commit()
        found = session.scalars(
            select(JobFit).where(JobFit.job_id == job_id, JobFit.key.in_([r["key"] for r in rows]))
        ).all()
        return {f.key: _fit_row(f) for f in found}


def get_fit(ctx: StoreContext, job_id: uuid.UUID, key: str) -> FitRow | None:
    with ctx.session() as session:
        f = session.scalar(select(JobFit).where(JobFit.job_id == job_id, JobFit.key == key))
        return None if f is None else _fit_row(f)


def open_shareable_fits(ctx: StoreContext, job_id: uuid.UUID) -> list[FitRow]:
    """Grid shards nobody holds (pending, or running under an expired lease)."""
    with ctx.session() as session:
        now = db_now(session)
        found = session.scalars(
            select(JobFit)
            .where(
                JobFit.job_id == job_id,
                JobFit.shareable.is_(True),
                or_(
                    JobFit.state == FitState.PENDING.value,
                    and_(JobFit.state == FitState.RUNNING.value, JobFit.lease_expires_at < now),
                ),
            )
            .order_by(JobFit.id)
        ).all()
        return [_fit_row(f) for f in found]


def claim_fit(ctx: StoreContext, job_id: uuid.UUID, key: str, token: str) -> bool:
    with ctx.session() as session:
        now = db_now(session)
        claimed = move_fit(
            session,
            job_id,
            key,
            # pending, or running under an expired lease (a takeover)
            sources=(FitState.PENDING, FitState.RUNNING),
            to=FitState.RUNNING,
            where=(or_(JobFit.state == FitState.PENDING.value, JobFit.lease_expires_at < now),),
            lease_owner=token,
            lease_expires_at=_lease_until(now, ctx),
            attempts=JobFit.attempts + 1,
            updated_at=now,
        )
        session.commit()
        return claimed


def renew_fit_lease(ctx: StoreContext, job_id: uuid.UUID, key: str, token: str) -> bool:
    with ctx.session() as session:
        now = db_now(session)
        result = session.execute(
            update(JobFit)
            .where(
                JobFit.job_id == job_id,
                JobFit.key == key,
                JobFit.lease_owner == token,
                JobFit.state == FitState.RUNNING.value,
            )
            .values(lease_expires_at=_lease_until(now, ctx))
            .execution_options(synchronize_session=False)
        )
        session.commit()
        return _changed_one(result)


def complete_fit(
    ctx: StoreContext,
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
        done = move_fit(
            session,
            job_id,
            key,
            sources=(FitState.PENDING, FitState.RUNNING),
            to=FitState.DONE,
            artifact=artifact,
            sha256=sha256,
            surrogate_loss=[_loss_out(v) for v in surrogate_loss],
            seconds=seconds,
            lease_owner=None,
            lease_expires_at=None,
            updated_at=db_now(session),
        )
        session.commit()
        return done


def reopen_fit(
    ctx: StoreContext, job_id: uuid.UUID, key: str, *, artifact: str | None, sha256: str | None
) -> bool:
    """Put a done fit whose stored weights (the file ``artifact``, its digest ``sha256``, as the
    row recorded them) are gone or damaged back to pending, to be fitted again. Compare-and-set
    on both: of several workers that found the same file damaged, one reopens the fit, and a
    fit recorded again meanwhile (another writer's file, whatever its digest) stays done."""
    with ctx.session() as session:
        reopened = move_fit(
            session,
            job_id,
            key,
            sources=(FitState.DONE,),
            to=FitState.PENDING,
            where=(JobFit.artifact == artifact, JobFit.sha256 == sha256),  # None: IS NULL
            artifact=None,
            sha256=None,
            surrogate_loss=None,
            seconds=None,
            updated_at=db_now(session),
        )
        session.commit()
        return reopened


# -- the reconciler ----------------------------------------------------------------------------
def recover_expired_job(
    session: Session,
    job_id: uuid.UUID,
    *,
    state: JobState,
    owner: str | None,
    attempts: int,
    max_attempts: int,
    now: datetime,
) -> JobState | None:
    """A held job whose lease expired lost its worker: a cancelling one is cancelled, one with
    no attempts left fails with a reason, any other goes back to the queue. Returns the state it
    moved to, or None when someone changed it first (same state, owner and expired lease)."""
    values: dict[str, Any]
    if state is JobState.CANCELLING:
        to, values = JobState.CANCELLED, {"finished_at": now}
    elif attempts >= max_attempts:
        to = JobState.FAILED
        values = {
            "finished_at": now,
            "failure_reason": (
                f"the worker running this job stopped responding ({attempts} attempts "
                "of the job were lost); giving up"
            ),
        }
    else:
        to, values = JobState.QUEUED, {"enqueued_at": now}
    moved = move_job(
        session,
        job_id,
        sources=(state,),
        to=to,
        where=(Job.lease_owner == owner, Job.lease_expires_at < now),
        lease_owner=None,
        lease_expires_at=None,
        updated_at=now,
        **values,
    )
    return to if moved else None


def unmark_resent(
    session: Session, job_id: uuid.UUID, *, sent_at: datetime, back_to: datetime | None
) -> None:
    """Undo :func:`mark_resent` after its message could not be sent: ``enqueued_at`` back to
    ``back_to``, unless another send was recorded since ``sent_at``."""
    session.execute(
        update(Job)
        .where(Job.id == job_id, Job.state == JobState.QUEUED.value, Job.enqueued_at == sent_at)
        .values(enqueued_at=back_to)
        .execution_options(synchronize_session=False)
    )


def mark_resent(session: Session, job_id: uuid.UUID, *, cutoff: datetime, now: datetime) -> bool:
    """Claim the resending of a queued job's lost message: False if it is no longer queued, or
    another reconciler sent one since ``cutoff``."""
    result = session.execute(
        update(Job)
        .where(
            Job.id == job_id,
            Job.state == JobState.QUEUED.value,
            or_(Job.enqueued_at.is_(None), Job.enqueued_at < cutoff),
        )
        .values(enqueued_at=now)
        .execution_options(synchronize_session=False)
    )
    return _changed_one(result)
