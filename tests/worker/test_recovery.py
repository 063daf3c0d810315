"""Crashes: a worker killed with SIGKILL in the middle of a search, and a Redis restart that
loses every queued message. The database is the source of truth; nothing is lost or repeated."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest
import redis

from core.queue import JobQueue
from tests.worker.conftest import REDIS_URL, SMALL_JOB, WorkerProcess, free_port, wait_until
from tests.worker.test_pipeline import _assert_same_as_one_run_alone

# Sequential steps (bisection) with a fit long enough to be killed in the middle of.
BISECTION_JOB = {
    **SMALL_JOB,
    "model": {"kind": "mlp", "hidden": [16]},
    "search": {"strategy": "bisection", "max_steps": 6, "epsilon": 1e-6, "shift": "minimal"},
    "training": {"optimizer": "sgd", "epochs": 12, "batch_size": 256},
}


def test_kill_9_mid_search_then_a_new_worker_finishes_it(make_cluster):
    cluster = make_cluster(checkpoint_seconds=0.05)
    first = cluster.start_worker("first", beat=True)
    job_id = cluster.submit(BISECTION_JOB)
    wait_until(lambda: len(cluster.steps(job_id)) >= 3, 90, "three lambda steps", 0.02)
    first.kill9()
    killed_at = len(cluster.steps(job_id))
    assert cluster.job(job_id)["state"] == "running"  # the dead worker's lease has not expired
    # Its remote-control binding (unused) stayed in Redis for good, one more for every crash.
    keys = redis.Redis.from_url(REDIS_URL).keys(f"{cluster.prefix}*")
    assert not [k for k in keys if b"pidbox" in k], keys

    second = cluster.start_worker("second", beat=True)
    job = cluster.wait_state(job_id, timeout=120)
    assert job["state"] == "succeeded", job
    assert job["attempts"] == 2

    steps = cluster.steps(job_id)
    assert [s[1] for s in steps] == list(range(len(steps)))  # none missing, none twice
    assert len(steps) > killed_at
    # Finished fits were loaded, not recomputed: every fit was claimed once, except the one
    # in progress at the kill (resumed from its last trainer checkpoint).
    attempts = sorted(f.attempts for f in cluster.fits(job_id))
    assert attempts.count(2) <= 1 and set(attempts) <= {1, 2}
    assert _fits_reused(second, job_id) >= killed_at
    _assert_same_as_one_run_alone(cluster, BISECTION_JOB, job_id)


def test_sigterm_mid_search_gives_the_job_back_and_the_next_worker_resumes_it(make_cluster):
    """A deploy stops a worker with SIGTERM: Celery's warm shutdown waited for the job (until
    the process was killed), and the reconciler then re-queued it as a new attempt. The job now
    goes back to the queue at once, its attempt not counted."""
    import signal

    cluster = make_cluster(checkpoint_seconds=0.05)
    first = cluster.start_worker("first", beat=True)
    job_id = cluster.submit(BISECTION_JOB)
    wait_until(lambda: len(cluster.steps(job_id)) >= 3, 90, "three lambda steps", 0.02)
    first.proc.send_signal(signal.SIGTERM)  # the worker process itself, as a process manager
    first.proc.wait(timeout=60)
    job = cluster.job(job_id)
    assert (job["state"], job["attempts"]) == ("queued", 0), job
    assert "giving the job back" in first.log()

    cluster.start_worker("second", beat=True)
    job = cluster.wait_state(job_id, timeout=120)
    assert job["state"] == "succeeded" and job["attempts"] == 1, job
    steps = cluster.steps(job_id)
    assert [s[1] for s in steps] == list(range(len(steps)))  # none missing, none twice


def _fits_reused(worker: WorkerProcess, job_id: str) -> int:
    """The fits ``worker``'s attempt at ``job_id`` loaded instead of training (its log's
    "job <id>: N fits trained, M reused ...")."""
    lines = [
        line for line in worker.log().splitlines() if f"job {job_id}: " in line and "reused" in line
    ]
    assert lines, f"no line of the worker's log says what job {job_id} reused"
    return int(lines[0].split(", ")[1].split()[0])


@pytest.fixture
def private_redis(tmp_path):
    """A redis-server of this test's own (no persistence, like the machine's), restartable."""
    binary = shutil.which("redis-server")
    assert binary is not None, "redis-server must be installed (CI's machine has it)"
    port = free_port()

    def start() -> subprocess.Popen:
        proc = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(tmp_path)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        client = redis.Redis(port=port)
        wait_until(lambda: _pings(client), 10, "redis-server to start")
        return proc

    state = {"proc": start()}

    def restart() -> None:
        state["proc"].kill()
        state["proc"].wait(timeout=10)
        state["proc"] = start()

    yield f"redis://127.0.0.1:{port}/0", restart
    state["proc"].kill()
    state["proc"].wait(timeout=10)


def _pings(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False


def test_redis_restart_with_queued_jobs_loses_none(make_cluster, private_redis):
    url, restart_redis = private_redis
    cluster = make_cluster(broker_url=url)
    worker = cluster.start_worker("w", beat=True)
    # A long job keeps the worker busy while three more wait in Redis.
    busy = cluster.submit(
        {**SMALL_JOB, "model": {"kind": "mlp", "hidden": [16]},
         "training": {"optimizer": "sgd", "epochs": 10_000, "batch_size": 16}}
    )  # fmt: skip
    cluster.wait_state(busy, ("running",))
    queued = [cluster.submit() for _ in range(3)]
    broker = JobQueue(cluster.settings)
    assert broker.live_job_ids() == set(queued)  # waiting (the running job's was delivered)
    restart_redis()  # every message is gone
    assert broker.live_job_ids() == set()
    started = time.monotonic()
    # The running job goes on through the restart (its worker reconnects when it is done).
    assert cluster.job(busy)["state"] == "running"
    cancel = cluster.client.post(f"/v1/jobs/{busy}/cancel", headers=cluster.headers)
    assert cancel.status_code == 200
    assert cluster.wait_state(busy, timeout=30)["state"] == "cancelled"
    for job_id in queued:
        assert cluster.wait_state(job_id, timeout=90)["state"] == "succeeded"
    assert all(cluster.job(j)["attempts"] == 1 for j in queued)
    assert "resent" in worker.log()
    print(f"\nall jobs done {time.monotonic() - started:.1f}s after the restart")


# A job that would run for a long while (the most epochs a spec may ask for,
# metro.trainer.config.MAX_EPOCHS, of small batches): still running whenever the test looks.
ENDLESS_JOB = {
    **SMALL_JOB,
    "model": {"kind": "mlp", "hidden": [16]},
    "training": {"optimizer": "sgd", "epochs": 10_000, "batch_size": 16},
}


def test_a_dead_workers_job_is_recovered_without_any_beat(make_cluster):
    """No worker runs --beat: the surviving worker's own periodic reconciler re-queues the job
    once the dead worker's lease expires, and claims it."""
    cluster = make_cluster()
    first = cluster.start_worker("first")
    job_id = cluster.submit(ENDLESS_JOB)
    cluster.wait_state(job_id, ("running",))
    # Started while the first is alive: its reconcile at start finds nothing to recover.
    cluster.start_worker("second")
    first.kill9()

    def reclaimed() -> bool:
        job = cluster.job(job_id)
        return job["state"] == "running" and job["attempts"] == 2

    wait_until(reclaimed, 45, "the job to be re-queued and claimed again")
    cancel = cluster.client.post(f"/v1/jobs/{job_id}/cancel", headers=cluster.headers)
    assert cancel.status_code == 200
    assert cluster.wait_state(job_id, timeout=30)["state"] == "cancelled"


def test_one_reconciler_at_a_time(make_cluster):
    """While another process holds the advisory lock, a reconcile round is skipped."""
    from sqlalchemy import text

    from worker.context import WorkerContext
    from worker.reconcile import RECONCILE_LOCK_KEY, reconcile_exclusively

    cluster = make_cluster()
    engine = cluster.app.state.engine
    ctx = WorkerContext(cluster.settings, engine, cluster.app.state.sessionmaker)
    queue = JobQueue(cluster.settings)
    with engine.connect() as holder:
        holder.execute(text("SELECT pg_advisory_lock(:k)"), {"k": RECONCILE_LOCK_KEY})
        assert reconcile_exclusively(ctx, queue) is None
        holder.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": RECONCILE_LOCK_KEY})
        holder.commit()
    assert reconcile_exclusively(ctx, queue) == {
        "requeued": 0, "failed": 0, "cancelled": 0, "resent": 0,
    }  # fmt: skip


def test_kill_9_mid_averaged_job_then_a_new_worker_resumes_it(make_cluster):
    """An averaged (macro-F1) job records each class's fits as a binary job does: killed in the
    middle of a class's search, the next attempt loads the fits that were finished (the first
    class's among them), trains only the rest, and delivers what an uninterrupted run of the
    same job delivers."""
    from tests.worker.test_averaged import iris_mlp_job

    cluster = make_cluster(checkpoint_seconds=0.05)
    body = iris_mlp_job(cluster, hidden=16, search={"n_lambdas": 4, "cv": 3}, epochs=16,
                        batch_size=8)  # fmt: skip
    first = cluster.start_worker("first", beat=True)
    job_id = cluster.submit(body)
    # Past the first class's grid (4 steps), into the second's.
    wait_until(lambda: len(cluster.steps(job_id)) >= 5, 120, "five lambda steps", 0.02)
    first.kill9()
    killed_at = len(cluster.steps(job_id))
    finished = {f.key for f in cluster.fits(job_id) if f.state == "done"}
    assert any(key.startswith("r0/class0.fold") for key in finished), finished
    assert all("/class" in f.key for f in cluster.fits(job_id))

    second = cluster.start_worker("second", beat=True)
    job = cluster.wait_state(job_id, timeout=180)
    assert job["state"] == "succeeded", job
    assert job["attempts"] == 2
    steps = cluster.steps(job_id)
    assert [s[1] for s in steps] == list(range(len(steps))) and len(steps) > killed_at
    # Every fit finished before the kill was loaded, not trained again: claimed once, except
    # the one in progress at the kill.
    fits = cluster.fits(job_id)
    assert all(f.attempts == 1 for f in fits if f.key in finished)
    assert sorted(f.attempts for f in fits).count(2) <= 1
    assert _fits_reused(second, job_id) >= len(finished)
    assert any("reused from earlier attempts" in line for line in second.log().splitlines())
    # Recorded for resuming and sharing only: removed once the job has succeeded (just after
    # the success is written, so a reader may see the job done a moment before).
    fits_dir = Path(cluster.settings.artifacts_uri) / "jobs" / job_id / "fits"
    wait_until(lambda: not fits_dir.exists(), 30, "the job's fits removed", 0.05)

    # The same result as an uninterrupted run.
    _assert_same_as_one_run_alone(cluster, body, job_id)
