"""worker.lease: the heartbeat thread that renews a job's lease and notices its cancel."""

from __future__ import annotations

import time
import uuid

import pytest

from core.db.models import Job
from metro.trainer import TrainingCancelled
from tests.worker.conftest import SMALL_JOB, wait_until
from tests.worker.test_pipeline import _insert_job, _solo_context
from worker.lease import CANCEL_POLL_SECONDS, Lease


def test_a_cancel_is_seen_within_a_poll_not_at_the_next_renewal(make_cluster):
    """The cancel flag was read only when the lease was renewed (METRO_HEARTBEAT_SECONDS, 10 s
    by default): a cancelled job trained on that long before its next check could stop it."""
    cluster = make_cluster(heartbeat_seconds=30.0, lease_seconds=60.0)
    ctx = _solo_context(cluster)
    job_id = uuid.UUID(_insert_job(cluster, SMALL_JOB))
    with Lease(ctx, job_id, "token", holds_job=True) as lease:
        time.sleep(CANCEL_POLL_SECONDS * 1.5)
        lease.check()  # nothing asked yet
        with cluster.app.state.sessionmaker() as session:
            job = session.get(Job, job_id)
            assert job is not None
            job.cancel_requested = True
            session.commit()
        wait_until(lease.cancelled.is_set, 10 * CANCEL_POLL_SECONDS, "the cancel to be seen", 0.05)
        with pytest.raises(TrainingCancelled):
            lease.check()


def test_the_refinement_step_stops_at_a_cancel_between_its_fits():
    """The refinement after the choice (folds x scales x temperatures of fits) never looked at
    the lease: a cancel waited for the whole step."""
    from types import SimpleNamespace

    from worker.fits import RecordedSolver

    refined: list[object] = []

    def stop() -> None:
        raise TrainingCancelled("job")

    inner = SimpleNamespace(spec=None, refine=lambda model, **_: refined.append(model) or model)
    ledger = SimpleNamespace(lease=SimpleNamespace(check=stop))
    solver = RecordedSolver(ledger, 0, "fold0", inner)  # type: ignore[arg-type]
    with pytest.raises(TrainingCancelled):
        solver.refine("model", offset=0.0, temperature=1.0)  # type: ignore[arg-type]
    assert refined == []
