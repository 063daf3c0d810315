"""A job trains on one version of its data. The first load pins the digest of what was loaded
(``jobs.data_sha256``); an attempt that loads other data (the file changed since) fails the job
with a reason instead of mixing fits of two versions in one search, and a helper whose load
differs fits nothing."""

from __future__ import annotations

import uuid
from pathlib import Path

from core.db.models import Job, JobFit
from tests.worker.conftest import SMALL_JOB, Cluster
from tests.worker.test_pipeline import _solo_context
from worker import datasets as worker_datasets
from worker.helper import help_job
from worker.runner import run_job


def _csv(path: Path, flip: int | None = None) -> None:
    rows = [(i % 7, (i * 3) % 11, int(i % 3 == 0)) for i in range(120)]
    if flip is not None:  # one label changed: the same file name, other data
        a, b, y = rows[flip]
        rows[flip] = (a, b, 1 - y)
    path.write_text("a,b,y\n" + "".join(f"{a},{b},{y}\n" for a, b, y in rows))


def _job_on_file(cluster: Cluster, path: Path) -> str:
    body = {**SMALL_JOB, "dataset": {"uri": f"file://{path}"}, "search": {"n_lambdas": 3}}
    return cluster.submit(body)


def _pinned(cluster: Cluster, job_id: str) -> str | None:
    with cluster.app.state.sessionmaker() as session:
        job = session.get(Job, uuid.UUID(job_id))
        assert job is not None
        return job.data_sha256


def test_the_first_load_pins_the_data_and_a_changed_file_fails_the_next_attempt(make_cluster):
    cluster = make_cluster()
    ctx = _solo_context(cluster)
    path = cluster.data_dir / "churn.csv"
    _csv(path)
    done = _job_on_file(cluster, path)
    assert run_job(done, ctx) == "succeeded"
    pinned = _pinned(cluster, done)
    assert pinned is not None and len(pinned) == 64
    assert cluster.job(done)["data_sha256"] == pinned  # the job says what it trained on

    # A second job on the same file: its first attempt pinned the data as it was...
    job_id = _job_on_file(cluster, path)
    with cluster.app.state.sessionmaker() as session:
        job = session.get(Job, uuid.UUID(job_id))
        assert job is not None
        job.data_sha256 = pinned
        session.commit()
    # ...and the file changes (one label) before the next attempt loads it.
    _csv(path, flip=5)
    # (in the same process: its cached load of the file served the first job only)
    assert run_job(job_id, ctx) == "failed"
    failed = cluster.job(job_id)
    assert failed["attempts"] == 1  # final: retrying cannot bring the old data back
    assert "changed while the job ran" in failed["failure_reason"]
    assert f"file://{path}" in failed["failure_reason"]
    assert _pinned(cluster, job_id) == pinned  # the pin is never overwritten
    assert cluster.rows(JobFit, job_id) == []  # nothing was fitted on the new data


def test_a_helper_that_loads_other_data_claims_nothing(make_cluster, monkeypatch):
    from core import store

    cluster = make_cluster()
    ctx = _solo_context(cluster)
    path = cluster.data_dir / "churn.csv"
    _csv(path)
    job_id = _job_on_file(cluster, path)
    with cluster.app.state.sessionmaker() as session:
        job = session.get(Job, uuid.UUID(job_id))
        assert job is not None
        job.state = "running"
        session.commit()
    # An open shard to help with, and a record of every claim the helper makes.
    monkeypatch.setattr(store, "open_shareable_fits", lambda *_: ["an open shard"])
    claims: list[str] = []
    monkeypatch.setattr(store, "claim_fit", lambda *args: claims.append(args[2]) or False)
    worker_datasets._cache.clear()
    # No pin yet (its worker has not loaded the data): nothing to compare with, no help.
    assert help_job(job_id, ctx) == "skipped"
    with cluster.app.state.sessionmaker() as session:
        job = session.get(Job, uuid.UUID(job_id))
        assert job is not None
        job.data_sha256 = "0" * 64  # what the job's worker loaded was other data
        session.commit()
    assert help_job(job_id, ctx) == "skipped"
    assert claims == []
    assert cluster.rows(JobFit, job_id) == []


def test_a_new_job_on_an_edited_file_reads_the_edit_in_the_same_worker_process(make_cluster):
    """The process keeps what it loaded for the job that loaded it (its attempts and helpers);
    a later job on the same file:// URI reads the file again."""
    cluster = make_cluster()
    ctx = _solo_context(cluster)
    path = cluster.data_dir / "churn.csv"
    _csv(path)
    first = _job_on_file(cluster, path)
    assert run_job(first, ctx) == "succeeded"
    _csv(path, flip=5)
    second = _job_on_file(cluster, path)
    assert run_job(second, ctx) == "succeeded"
    before, after = _pinned(cluster, first), _pinned(cluster, second)
    assert before is not None and after is not None and before != after
    # An upload or a built-in cannot change: its load is shared across jobs.
    one = cluster.submit(SMALL_JOB)
    two = cluster.submit({**SMALL_JOB, "repeats": 2})
    assert run_job(one, ctx) == run_job(two, ctx) == "succeeded"
    assert _pinned(cluster, one) == _pinned(cluster, two)
    assert len(worker_datasets._cache) <= 2
