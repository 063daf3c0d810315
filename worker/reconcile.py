"""The reconciler: the database says what should be running; make the broker agree.

* A running (or cancelling) job whose lease has expired lost its worker: it goes back to the
  queue with a new message while attempts remain, is failed with a reason when they are spent,
  and a cancelling one is simply cancelled.
* A queued job with no message in the broker (lost with a Redis restart, or the API could not
  send it) gets one, once it has waited ``METRO_REQUEUE_AFTER_SECONDS``.

Both are sent oldest first and as *recovered* (:meth:`core.queue.JobQueue.enqueue`): on Redis
they are taken before the jobs that are simply waiting, most of which were queued after them.
The bounds this gives (how long until a job is back in the queue) are in docs/operations.md.

Every worker runs the reconciler when it starts and then every ``METRO_RECONCILE_SECONDS`` in a
background thread (:class:`PeriodicReconciler`), so recovery needs no special process. On
PostgreSQL a session advisory lock lets one worker at a time do it and the others skip that round;
on SQLite (the embedded, single-process mode) there is no one to share with. Every change is a
compare-and-set anyway, so reconcilers that did run at once could not undo each other's work, and
duplicate messages are harmless.
"""

from __future__ import annotations

import logging
import random
import threading
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, select, text

from core import store
from core.db.base import db_now
from core.db.models import Job, Model
from core.queue import JobQueue
from core.states import JobState
from core.workers import announce, forget
from worker import artifacts
from worker.context import WorkerContext, get_context

logger = logging.getLogger(__name__)

_BATCH = 500
# The advisory lock's key: any fixed 64-bit number, the same in every worker of a deployment
# (advisory locks are per database, so deployments on other databases do not contend).
RECONCILE_LOCK_KEY = 0x6D6574726F_7263  # "metro", "rc"
_COUNTER = {JobState.QUEUED: "requeued", JobState.FAILED: "failed", JobState.CANCELLED: "cancelled"}


def reconcile(ctx: WorkerContext | None = None, queue: JobQueue | None = None) -> dict[str, int]:
    ctx = ctx or get_context()
    queue = queue or JobQueue(ctx.settings)
    counts = {"requeued": 0, "failed": 0, "cancelled": 0, "resent": 0}
    # (job, spec, when it was last sent before, the time its send is recorded at)
    to_send: list[tuple[uuid.UUID, dict, datetime | None, datetime]] = []
    finished: list[uuid.UUID] = []  # failed or cancelled here: their worker is gone

    with ctx.session() as session:
        now = db_now(session)
        expired = session.execute(
            select(Job.id, Job.state, Job.attempts, Job.max_attempts, Job.lease_owner, Job.spec)
            .where(
                Job.state.in_((JobState.RUNNING.value, JobState.CANCELLING.value)),
                Job.lease_expires_at < now,
            )
            .order_by(Job.created_at)
            .limit(_BATCH)
        ).all()
        for job_id, state, attempts, max_attempts, owner, spec in expired:
            moved_to = store.recover_expired_job(
                session,
                job_id,
                state=JobState(state),
                owner=owner,
                attempts=attempts,
                max_attempts=max_attempts,
                now=now,
            )
            if moved_to is not None:
                counts[_COUNTER[moved_to]] += 1
                if moved_to is JobState.QUEUED:
                    # never sent since: if its send fails, due again at the next round
                    due = now - timedelta(seconds=ctx.settings.requeue_after_seconds + 1)
                    to_send.append((job_id, spec, due, now))
                else:
                    finished.append(job_id)
        session.commit()
        # Of those, the jobs a model row names (none should: a job that registers one has
        # succeeded), whose model files stay.
        query = select(Model.job_id).where(Model.job_id.in_(finished))
        with_models = set(session.scalars(query)) if finished else set()
    # What the job's worker would have removed had it written the end itself (JobRun._drop_fits
    # and _fail): its recorded fits and checkpoints serve resuming only, and a finished job never
    # resumes; the model files an attempt saved, or half wrote when it was killed, belong to no
    # model row and stayed as long as the job did.
    for job_id in finished:
        artifacts.remove_tree(ctx.settings.artifacts_uri, artifacts.fits_dir(job_id))
        if job_id not in with_models:
            artifacts.remove_tree(ctx.settings.artifacts_uri, artifacts.models_dir(job_id))

    live = queue.live_job_ids()
    with ctx.session() as session:
        now = db_now(session)
        cutoff = now - timedelta(seconds=ctx.settings.requeue_after_seconds)
        waiting = session.execute(
            select(Job.id, Job.spec, Job.enqueued_at)
            .where(
                Job.state == JobState.QUEUED.value,
                func.coalesce(Job.enqueued_at, Job.created_at) < cutoff,
            )
            .order_by(Job.created_at)
            .limit(_BATCH)
        ).all()
        for job_id, spec, sent_before in waiting:
            if live is not None and str(job_id) in live:
                continue
            if store.mark_resent(session, job_id, cutoff=cutoff, now=now):
                counts["resent"] += 1
                to_send.append((job_id, spec, sent_before, now))
        session.commit()

    unsent = []
    for job_id, spec, sent_before, stamped in to_send:
        try:
            queue.enqueue(str(job_id), spec, recovered=True)
        except Exception:
            logger.warning("could not send job %s to the broker", job_id, exc_info=True)
            unsent.append((job_id, sent_before, stamped))
    if unsent:
        # Still queued in the database, and marked as sent: put back when it last was, so that
        # the next round sends it (a failed send during a broker outage made the job wait
        # another METRO_REQUEUE_AFTER_SECONDS once the broker was back).
        try:
            with ctx.session() as session:
                for job_id, sent_before, stamped in unsent:
                    store.unmark_resent(session, job_id, sent_at=stamped, back_to=sent_before)
                session.commit()
        except Exception:
            logger.warning("could not record the unsent messages", exc_info=True)
    if any(counts.values()):
        logger.info("reconciler: %s", counts)
    # The embedded broker keeps what it delivered (only a Redis broker removes it itself).
    queue.forget_delivered()
    return counts


def reconcile_exclusively(
    ctx: WorkerContext | None = None, queue: JobQueue | None = None
) -> dict[str, int] | None:
    """:func:`reconcile`, unless another process is reconciling this database right now (then
    None: this round is theirs). The lock is held by a connection of its own for the whole run,
    and PostgreSQL drops it with the connection if this process dies mid-run."""
    ctx = ctx or get_context()
    if ctx.engine.dialect.name != "postgresql":
        return reconcile(ctx, queue)
    with ctx.engine.connect() as lock_conn:
        got = lock_conn.execute(
            text("SELECT pg_try_advisory_lock(:key)"), {"key": RECONCILE_LOCK_KEY}
        ).scalar()
        lock_conn.commit()  # not idle in a transaction while the reconciler runs
        if not got:
            return None
        try:
            return reconcile(ctx, queue)
        finally:
            lock_conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": RECONCILE_LOCK_KEY})
            lock_conn.commit()


class PeriodicReconciler:
    """A daemon thread that runs :func:`reconcile_exclusively` every ``reconcile_seconds``
    (with up to 10% jitter, so that workers started together do not all ask at once)."""

    def __init__(
        self,
        ctx: WorkerContext | None = None,
        *,
        interval: float | None = None,
        roll_call: RollCall | None = None,
    ) -> None:
        self._ctx = ctx
        self._interval = interval
        self._roll_call = roll_call
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="metro-reconciler", daemon=True)

    def start(self) -> PeriodicReconciler:
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        ctx = self._ctx or get_context()
        interval = self._interval or ctx.settings.reconcile_seconds
        queue = JobQueue(ctx.settings)
        while not self._stop.wait(interval * (1 + 0.1 * random.random())):
            if self._roll_call is not None:
                self._roll_call.announce(ctx)
            try:
                reconcile_exclusively(ctx, queue)
            except Exception:  # a database or broker outage: try again next round
                logger.warning("periodic reconcile failed", exc_info=True)


@dataclass(frozen=True)
class RollCall:
    """This worker's row in the roll call (core.workers): its name and the kinds of queue it
    consumes, written at start and each round, removed when it stops."""

    name: str
    kinds: tuple[str, ...]

    def announce(self, ctx: WorkerContext) -> None:
        try:
            with ctx.session() as session:
                announce(session, self.name, list(self.kinds))
                session.commit()
        except Exception:  # a database outage: said again next round
            logger.warning("could not renew this worker's row in the roll call", exc_info=True)

    def forget(self, ctx: WorkerContext) -> None:
        try:
            with ctx.session() as session:
                forget(session, self.name)
                session.commit()
        except Exception:  # its row then ages out of the window
            logger.warning("could not remove this worker's row from the roll call", exc_info=True)
