"""The reconciler: the database says what should be running; make the broker agree.

* A running (or cancelling) job whose lease has expired lost its worker: it goes back to the
  queue with a new message while attempts remain, is failed with a reason when they are spent,
  and a cancelling one is simply cancelled.
* A queued job with no message in the broker (lost with a Redis restart, or the API could not
  send it) gets one, once it has waited ``METRO_REQUEUE_AFTER_SECONDS``.

Every change is a compare-and-set, so reconcilers running at once (every worker runs one at start,
beat runs one periodically) cannot undo each other's work; duplicate messages are harmless.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from sqlalchemy import func, or_, select, update

from service.db.models import Job
from service.job_states import JobState
from worker.context import WorkerContext, db_now, get_context
from worker.queue import JobQueue

logger = logging.getLogger(__name__)

_BATCH = 500


def reconcile(ctx: WorkerContext | None = None, queue: JobQueue | None = None) -> dict[str, int]:
    ctx = ctx or get_context()
    queue = queue or JobQueue(ctx.settings)
    counts = {"requeued": 0, "failed": 0, "cancelled": 0, "resent": 0}
    to_send: list[tuple[str, dict]] = []

    with ctx.session() as session:
        now = db_now(session)
        expired = session.execute(
            select(Job.id, Job.state, Job.attempts, Job.max_attempts, Job.lease_owner, Job.spec)
            .where(
                Job.state.in_((JobState.RUNNING.value, JobState.CANCELLING.value)),
                Job.lease_expires_at < now,
            )
            .limit(_BATCH)
        ).all()
        for job_id, state, attempts, max_attempts, owner, spec in expired:
            same_lease = (Job.id == job_id, Job.lease_owner == owner, Job.lease_expires_at < now)
            if state == JobState.CANCELLING.value:
                values = {"state": JobState.CANCELLED.value, "finished_at": now}
                counter = "cancelled"
            elif attempts >= max_attempts:
                values = {
                    "state": JobState.FAILED.value,
                    "finished_at": now,
                    "failure_reason": (
                        f"the worker running this job stopped responding ({attempts} attempts "
                        "of the job were lost); giving up"
                    ),
                }
                counter = "failed"
            else:
                values = {"state": JobState.QUEUED.value, "enqueued_at": now}
                counter = "requeued"
            result = session.execute(
                update(Job)
                .where(*same_lease)
                .values(lease_owner=None, lease_expires_at=None, updated_at=now, **values)
                .execution_options(synchronize_session=False)
            )
            if result.rowcount == 1:  # type: ignore[attr-defined]
                counts[counter] += 1
                if counter == "requeued":
                    to_send.append((str(job_id), spec))
        session.commit()

    live = queue.live_job_ids()
    with ctx.session() as session:
        now = db_now(session)
        cutoff = now - timedelta(seconds=ctx.settings.requeue_after_seconds)
        waiting = session.execute(
            select(Job.id, Job.spec)
            .where(
                Job.state == JobState.QUEUED.value,
                func.coalesce(Job.enqueued_at, Job.created_at) < cutoff,
            )
            .order_by(Job.created_at)
            .limit(_BATCH)
        ).all()
        for job_id, spec in waiting:
            if live is not None and str(job_id) in live:
                continue
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
            if result.rowcount == 1:  # type: ignore[attr-defined]
                counts["resent"] += 1
                to_send.append((str(job_id), spec))
        session.commit()

    for job_id, spec in to_send:
        try:
            queue.enqueue(job_id, spec)
        except Exception:
            # Still queued in the database: the next reconcile sends it.
            logger.warning("could not send job %s to the broker", job_id, exc_info=True)
    if any(counts.values()):
        logger.info("reconciler: %s", counts)
    return counts
