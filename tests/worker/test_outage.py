"""A database outage during a job gives the job back without using one of its attempts."""

from __future__ import annotations

import uuid

import psycopg
from sqlalchemy import exc

from core import store
from core.db.errors import is_database_outage
from tests.worker.conftest import SMALL_JOB
from tests.worker.test_pipeline import _insert_job, _solo_context
from tests.worker.test_reconcile import FakeQueue, _set
from worker import runner


class Queue(FakeQueue):
    def request_help(self, job_id, spec, n) -> None:
        pass


def _connection_refused() -> exc.OperationalError:
    # What SQLAlchemy raises when the pool cannot connect (no statement was running).
    return exc.OperationalError(None, None, psycopg.OperationalError("Connection refused"))


def test_outage_classification():
    assert is_database_outage(_connection_refused())
    dropped = exc.OperationalError("SELECT 1", {}, psycopg.OperationalError("server closed"))
    dropped.connection_invalidated = True
    assert is_database_outage(dropped)
    assert is_database_outage(exc.TimeoutError("QueuePool limit"))
    refused = exc.OperationalError("UPDATE jobs", {}, psycopg.OperationalError("lock timeout"))
    assert not is_database_outage(refused)  # a live database refused a statement
    assert not is_database_outage(exc.IntegrityError("INSERT", {}, Exception("dup")))
    assert not is_database_outage(ConnectionError("broker"))


def test_a_database_outage_does_not_use_up_an_attempt(make_cluster, monkeypatch):
    cluster = make_cluster()
    ctx = _solo_context(cluster)
    queue = Queue()
    monkeypatch.setattr(runner, "JobQueue", lambda settings: queue)
    job_id = _insert_job(cluster, SMALL_JOB)
    _set(cluster, job_id, max_attempts=1)  # the outage would be this job's last attempt

    real_record_step = store.record_step
    calls = {"n": 0}

    def record_step_during_outage(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:  # mid-search, the database goes away
            raise _connection_refused()
        return real_record_step(*args, **kwargs)

    monkeypatch.setattr(store, "record_step", record_step_during_outage)
    assert runner.run_job(job_id, ctx) == "retry"
    job = cluster.job(job_id)
    assert job["state"] == "queued" and job["attempts"] == 0, job
    assert queue.sent == [job_id]  # sent back to the workers

    monkeypatch.setattr(store, "record_step", real_record_step)
    assert runner.run_job(job_id, ctx) == "succeeded"
    assert cluster.job(job_id)["attempts"] == 1


def test_a_statement_error_still_counts_the_attempt(make_cluster, monkeypatch):
    cluster = make_cluster()
    ctx = _solo_context(cluster)
    monkeypatch.setattr(runner, "JobQueue", lambda settings: Queue())
    job_id = _insert_job(cluster, SMALL_JOB)
    _set(cluster, job_id, max_attempts=1)

    def refused(*args, **kwargs):
        raise exc.OperationalError("UPDATE jobs", {}, psycopg.OperationalError("lock timeout"))

    monkeypatch.setattr(store, "record_step", refused)
    assert runner.run_job(job_id, ctx) == "failed"
    job = cluster.job(job_id)
    assert job["attempts"] == 1 and "gave up after 1 attempts" in job["failure_reason"]


def test_a_full_store_names_its_error_not_its_path(make_cluster, monkeypatch):
    """A full artifact store failed the job with "the last one failed with OSError": nothing
    said the disk was full. The errno and its words now, never the server's path."""
    import errno

    cluster = make_cluster()
    ctx = _solo_context(cluster)
    monkeypatch.setattr(runner, "JobQueue", lambda settings: Queue())
    job_id = _insert_job(cluster, SMALL_JOB)
    _set(cluster, job_id, max_attempts=1)

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", "/srv/metro/artifacts/jobs/x")

    monkeypatch.setattr(store, "record_step", full)
    assert runner.run_job(job_id, ctx) == "failed"
    reason = cluster.job(job_id)["failure_reason"]
    assert "OSError: ENOSPC, No space left on device" in reason, reason
    assert "/srv" not in reason


def test_a_broker_outage_when_asking_for_help_leaves_the_job_to_fit_alone(
    make_cluster, monkeypatch
):
    """Redis down as a grid asked for helpers: kombu's OperationalError (neither SQLAlchemy's
    nor a ConnectionError) failed the job for good, on its first attempt, as an internal error.
    Help is optional: the job fits its shards alone."""
    from kombu.exceptions import OperationalError as BrokerUnreachable

    class Unreachable(FakeQueue):
        asked = 0

        def request_help(self, job_id, spec, n) -> None:
            Unreachable.asked += 1
            raise BrokerUnreachable("Error 111 connecting to 127.0.0.1:6390. Connection refused.")

    cluster = make_cluster()
    ctx = _solo_context(cluster)
    monkeypatch.setattr(runner, "JobQueue", lambda settings: Unreachable())
    job_id = _insert_job(cluster, {**SMALL_JOB, "search": {"n_lambdas": 24, "cv": 2}})
    assert runner.run_job(job_id, ctx) == "succeeded"
    assert Unreachable.asked >= 1
    assert cluster.job(job_id)["attempts"] == 1


def test_a_cancel_that_meets_a_database_outage_is_finished_by_the_job_s_worker(
    make_cluster, monkeypatch
):
    """The outage's release moves running jobs only: a job cancelled meanwhile was left
    "cancelling" until its lease expired and the reconciler ended it (up to about 2 minutes)."""
    from core.db.base import utcnow

    cluster = make_cluster()
    ctx = _solo_context(cluster)
    monkeypatch.setattr(runner, "JobQueue", lambda settings: Queue())
    job_id = _insert_job(cluster, SMALL_JOB)
    real_record_step = store.record_step
    calls = {"n": 0}

    def cancelled_then_outage(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            with ctx.session() as session:
                assert store.request_cancel(session, uuid.UUID(job_id), utcnow())
                session.commit()
            raise _connection_refused()
        return real_record_step(*args, **kwargs)

    monkeypatch.setattr(store, "record_step", cancelled_then_outage)
    assert runner.run_job(job_id, ctx) == "cancelled"
    assert cluster.job(job_id)["state"] == "cancelled"
