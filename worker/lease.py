"""The heartbeat: a thread that renews this attempt's leases and notices cancellation.

The training thread never waits on the database to learn about a cancel: it checks two events
(:meth:`Lease.check`) between lambda steps and between epochs, and the heartbeat sets them.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid

from core import store
from metro.trainer import TrainingCancelled
from worker.context import WorkerContext

logger = logging.getLogger(__name__)


class LeaseLost(Exception):  # noqa: N818 - it is a condition, not an error of the code
    """Another worker owns the job now (this one stalled past its lease), or it has ended."""


class WorkerStopping(Exception):  # noqa: N818 - a condition, as LeaseLost
    """This worker process is shutting down (SIGTERM: a deploy, a scale-down): the job goes
    back to the queue, its attempt not counted, and resumes from its recorded fits."""


# Set once when the worker starts its warm shutdown (worker.celery_app): every lease of this
# process then stops its training at the next check. Each restart used to cost the job one of
# its attempts (the lease expired, the reconciler counted it), so a long job failed after three.
SHUTTING_DOWN = threading.Event()

# How often a running job's cancel flag is read between two renewals of its lease.
CANCEL_POLL_SECONDS = 1.0


class Lease:
    """Renews the job lease (``holds_job``; helpers that only fit shards do not hold the job,
    they watch it) and the lease of the fit being trained (:meth:`hold_fit`)."""

    def __init__(
        self, ctx: WorkerContext, job_id: uuid.UUID, token: str, *, holds_job: bool
    ) -> None:
        self.ctx = ctx
        self.job_id = job_id
        self.token = token
        self.holds_job = holds_job
        self.cancelled = threading.Event()
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._fit_key: str | None = None
        self._fit_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"lease-{job_id}", daemon=True)

    def __enter__(self) -> Lease:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def hold_fit(self, key: str | None) -> None:
        with self._fit_lock:
            self._fit_key = key

    def check(self) -> None:
        """Raise if the job must stop: LeaseLost, TrainingCancelled for a cancel, or
        WorkerStopping when this worker is shutting down."""
        if self.lost.is_set():
            raise LeaseLost(str(self.job_id))
        if self.cancelled.is_set():
            raise TrainingCancelled(str(self.job_id))
        if SHUTTING_DOWN.is_set():
            raise WorkerStopping(str(self.job_id))

    def beat(self) -> None:
        if self.holds_job:
            held, cancel = store.renew_job_lease(self.ctx, self.job_id, self.token)
            if not held:
                self.lost.set()
        else:
            state, cancel = store.job_status(self.ctx, self.job_id)
            if state is None or state in store.TERMINAL:
                self.lost.set()
        if cancel:
            self.cancelled.set()
        with self._fit_lock:
            key = self._fit_key
        if key is not None and not store.renew_fit_lease(self.ctx, self.job_id, key, self.token):
            # Someone took the shard over (this worker stalled): harmless, a fit's result is
            # the same wherever it is computed; the first one recorded is kept.
            logger.info("lease of fit %s of job %s was taken over", key, self.job_id)

    def _run(self) -> None:
        interval = max(0.05, float(self.ctx.settings.heartbeat_seconds))
        # A cancel is looked for more often than the lease is renewed (one indexed read): it
        # waited for the next beat, 10 s by default, before the training thread could see it.
        poll = min(interval, CANCEL_POLL_SECONDS)
        next_beat = time.monotonic() + interval
        while not self._stop.wait(poll):
            try:
                if time.monotonic() >= next_beat:
                    next_beat = time.monotonic() + interval
                    self.beat()
                elif store.job_status(self.ctx, self.job_id)[1]:
                    self.cancelled.set()
            except Exception:
                # The database may be briefly unreachable: keep trying; if it stays away past
                # the lease, the compare-and-sets will tell this worker it lost the job.
                logger.warning("heartbeat of job %s failed", self.job_id, exc_info=True)
