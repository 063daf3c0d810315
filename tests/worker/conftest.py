"""Worker tests: a real PostgreSQL, a real Redis and real ``metro worker`` processes (Celery, not
eager mode).

Each :class:`Cluster` has its own database, its own queue/key prefix on the Redis (the machine's,
or a private ``redis-server`` on a free port), its own artifact directory and its own worker
processes, all removed at the end; so clusters, test runs and other users of the Redis never
see each other's messages. Timings are shortened (leases of 2 s, heartbeats of 0.25 s) so that
crashes are noticed within seconds.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import redis
from sqlalchemy import select

from core.config import Settings
from core.db.migrate import upgrade
from core.db.models import Job, JobFit, LambdaStep, MetricResult, Model
from service.admin import create_api_key
from service.main import create_app

warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
from fastapi.testclient import TestClient  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PG_ADMIN_DSN = os.environ.get("METRO_TEST_PG_DSN", "postgresql://postgres@127.0.0.1:5432/postgres")
REDIS_URL = os.environ.get("METRO_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
TERMINAL = ("succeeded", "failed", "cancelled")

# A small, fast job: breast cancer (569 rows), a linear model, a short L-BFGS.
SMALL_JOB: dict[str, Any] = {
    "metric": {"preset": "f1"},
    "dataset": {"uri": "builtin://breast_cancer"},
    "model": {"kind": "linear"},
    "search": {"strategy": "grid", "n_lambdas": 5, "shift": "minimal"},
    "training": {"max_iter": 30},
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def shards_helped(cluster: Cluster, job_id: str) -> int:
    """How many of ``job_id``'s shards the cluster's workers fitted as helpers (their logs'
    "helped job <id> with N shard(s)")."""
    return sum(
        int(line.rsplit("with ", 1)[1].split()[0])
        for w in cluster.workers
        for line in w.log().splitlines()
        if f"helped job {job_id} with" in line
    )


def wait_until(predicate: Callable[[], Any], timeout: float, what: str, every: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(every)


class WorkerProcess:
    """``metro worker`` in its own session (process group), so ``kill -9`` takes all of it."""

    def __init__(self, cluster: Cluster, name: str, *, beat: bool, queues: str = "cpu") -> None:
        self.name = name
        self.log_path = cluster.tmp / f"worker-{name}.log"
        env = {**os.environ, **cluster.env}
        args = [sys.executable, "-m", "cli.main", "worker", f"--name={name}@test",
                f"--queues={queues}"]  # fmt: skip
        if beat:
            args.append("--beat")
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            args, cwd=ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_ready(self, timeout: float = 60) -> WorkerProcess:
        def ready() -> bool:
            if self.proc.poll() is not None:
                raise AssertionError(f"worker {self.name} exited:\n{self.log()[-3000:]}")
            return " ready." in self.log()

        wait_until(ready, timeout, f"worker {self.name} to be ready")
        return self

    def kill9(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        # The test is over: no need for Celery's warm shutdown, and the whole group (with an
        # embedded beat) must go.
        self.kill9()
        self._log.close()


class Cluster:
    """A database, a broker namespace, an artifact store, an API client, and workers."""

    def __init__(
        self,
        tmp: Path,
        database_url: str,
        *,
        broker_url: str = REDIS_URL,
        artifacts_uri: str | None = None,
        extra_env: dict[str, str] | None = None,
        **overrides: Any,
    ) -> None:
        self.tmp = tmp
        self.prefix = f"metro-test-{uuid.uuid4().hex[:10]}."
        self.data_dir = tmp / "data"
        self.data_dir.mkdir(exist_ok=True)
        fields: dict[str, Any] = {
            "database_url": database_url,
            "broker_url": broker_url,
            "artifacts_uri": artifacts_uri or str(tmp / "artifacts"),
            "upload_dir": tmp / "uploads",
            "data_roots": [self.data_dir],
            "queue_prefix": self.prefix,
            # Several workers share this machine's cores (docs/operations.md, "Scaling workers").
            "worker_torch_threads": 1,
            "lease_seconds": 2.0,
            "heartbeat_seconds": 0.25,
            "reconcile_seconds": 1.0,
            "requeue_after_seconds": 1.5,
            "checkpoint_seconds": 0.0,
            "grid_shard_size": 8,
            **overrides,
        }
        self.settings = Settings(**fields, _env_file=None)  # type: ignore[call-arg]
        self.env = {
            f"METRO_{k.upper()}": (",".join(str(p) for p in v) if isinstance(v, list) else str(v))
            for k, v in fields.items()
        }
        self.env.update(extra_env or {})
        self.env["PYTHONUNBUFFERED"] = "1"
        # The test process runs one OpenMP thread (tests/conftest.py) and its children would
        # inherit it: the workers start with two, so their one thread is the setting's doing
        # (worker_torch_threads), as the thread test checks.
        self.env.setdefault("OMP_NUM_THREADS", "2")
        self.env.setdefault("MKL_NUM_THREADS", "2")
        self.app = create_app(self.settings)
        self.client = TestClient(self.app, raise_server_exceptions=False)
        with self.app.state.sessionmaker() as session:
            key = create_api_key(session, f"tenant-{uuid.uuid4().hex[:8]}")
        self.headers = {"Authorization": f"Bearer {key}"}
        self.workers: list[WorkerProcess] = []

    # -- processes ------------------------------------------------------------------------------
    def start_worker(self, name: str, *, beat: bool = False, wait: bool = True) -> WorkerProcess:
        proc = WorkerProcess(self, name, beat=beat)
        self.workers.append(proc)
        return proc.wait_ready() if wait else proc

    def close(self) -> None:
        for w in self.workers:
            w.stop()
        self.client.close()
        self.app.state.engine.dispose()
        self._purge_broker()

    def _purge_broker(self) -> None:
        if not self.settings.broker_url or not self.settings.broker_url.startswith("redis"):
            return
        try:
            client = redis.Redis.from_url(self.settings.broker_url, socket_timeout=2)
            keys = list(client.scan_iter(match=f"{self.prefix}*"))
            if keys:
                client.delete(*keys)
            client.close()
        except redis.RedisError:
            pass

    # -- the API --------------------------------------------------------------------------------
    def submit(self, body: dict[str, Any] | None = None, **headers: str) -> str:
        r = self.client.post(
            "/v1/jobs", json=body or SMALL_JOB, headers={**self.headers, **headers}
        )
        assert r.status_code == 201, r.text
        return str(r.json()["id"])

    def job(self, job_id: str) -> dict[str, Any]:
        r = self.client.get(f"/v1/jobs/{job_id}", headers=self.headers)
        assert r.status_code == 200, r.text
        return dict(r.json())

    def wait_state(
        self, job_id: str, states: tuple[str, ...] = TERMINAL, timeout: float = 60
    ) -> dict[str, Any]:
        def reached() -> dict[str, Any] | None:
            job = self.job(job_id)
            return job if job["state"] in states else None

        try:
            return dict(wait_until(reached, timeout, f"job {job_id} to reach {states}", 0.05))
        except AssertionError:
            logs = "\n".join(f"--- {w.name}\n{w.log()[-4000:]}" for w in self.workers)
            raise AssertionError(f"job {job_id}: {self.job(job_id)}\n{logs}") from None

    def trace(self, job_id: str) -> list[dict[str, Any]]:
        r = self.client.get(f"/v1/jobs/{job_id}/trace", params={"limit": 200}, headers=self.headers)
        assert r.status_code == 200, r.text
        return list(r.json()["items"])

    # -- the database ---------------------------------------------------------------------------
    def rows(self, model: type[Any], job_id: str) -> list[Any]:
        with self.app.state.sessionmaker() as session:
            column = model.id if model is Job else model.job_id
            return list(session.scalars(select(model).where(column == uuid.UUID(job_id))))

    def steps(self, job_id: str) -> list[tuple[Any, ...]]:
        return sorted(
            (s.repeat, s.step, s.lambda_, s.shift, s.surrogate_loss, s.train_metric,
             s.validation_metric)
            for s in self.rows(LambdaStep, job_id)
        )  # fmt: skip

    def results(self, job_id: str) -> list[tuple[Any, ...]]:
        return sorted(
            (r.method, r.repeat, r.split, r.metric_value, r.tp, r.fp, r.fn, r.tn, r.lambda_)
            for r in self.rows(MetricResult, job_id)
        )

    def models(self, job_id: str) -> list[Any]:
        return self.rows(Model, job_id)

    def fits(self, job_id: str) -> list[Any]:
        return self.rows(JobFit, job_id)


@pytest.fixture(scope="session")
def create_database() -> Iterator[Callable[[], str]]:
    created: list[str] = []

    def make() -> str:
        name = f"metro_wtest_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(PG_ADMIN_DSN, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        created.append(name)
        base = PG_ADMIN_DSN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://", 1)
        url = f"{base}/{name}"
        upgrade(url)
        return url

    yield make
    with psycopg.connect(PG_ADMIN_DSN, autocommit=True) as conn:
        for name in created:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def make_cluster(
    create_database: Callable[[], str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[..., Cluster]]:
    clusters: list[Cluster] = []

    def make(**kwargs: Any) -> Cluster:
        cluster = Cluster(tmp_path_factory.mktemp("cluster"), create_database(), **kwargs)
        clusters.append(cluster)
        return cluster

    yield make
    for c in clusters:
        c.close()


@pytest.fixture(scope="module")
def pair(
    create_database: Callable[[], str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    """Two workers (the first also runs beat), shared by the tests of a module; grid shards of
    3 lambdas so that a grid of a dozen is shared between them."""
    cluster = Cluster(tmp_path_factory.mktemp("pair"), create_database(), grid_shard_size=3)
    try:
        a = cluster.start_worker("a", beat=True, wait=False)
        b = cluster.start_worker("b", wait=False)
        a.wait_ready()
        b.wait_ready()
        yield cluster
    finally:
        cluster.close()
