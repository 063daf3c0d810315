"""``metro serve`` on the embedded defaults (what ``make run`` starts): no METRO_* settings, so
SQLite and kombu's SQLAlchemy transport under ./var, the API and a worker in one process group,
and nothing else running. A job submitted over HTTP is trained and its model served."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import BinaryIO

import httpx

from tests.worker.conftest import SMALL_JOB, free_port, wait_until


def test_metro_serve_embedded_trains_a_job(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("METRO_")}
    env["PYTHONUNBUFFERED"] = "1"
    port = free_port()
    log = open(tmp_path / "serve.log", "wb")  # noqa: SIM115
    serve = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "serve", "--port", str(port)],
        cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:

        def healthy() -> bool:
            assert serve.poll() is None, (tmp_path / "serve.log").read_text()
            try:
                return httpx.get(f"{base}/healthz", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(healthy, 60, "metro serve to answer")
        key = subprocess.run(
            [sys.executable, "-m", "cli.main", "admin", "create-key", "--tenant", "me"],
            cwd=tmp_path, env=env, capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        headers = {"Authorization": f"Bearer {key}"}
        # A grid of several shards (8 lambdas each) searched on 2 repeats: the one worker
        # would ask for help at every grid it fits, though nobody else can help.
        job_body = {**SMALL_JOB, "search": {**SMALL_JOB["search"], "n_lambdas": 17},
                    "repeats": 2}  # fmt: skip
        r = httpx.post(f"{base}/v1/jobs", json=job_body, headers=headers, timeout=10)
        assert r.status_code == 201, r.text
        job_url = f"{base}/v1/jobs/{r.json()['id']}"

        def finished() -> dict | None:
            job = httpx.get(job_url, headers=headers, timeout=5).json()
            return job if job["state"] in ("succeeded", "failed", "cancelled") else None

        try:
            job = wait_until(finished, 120, "the job to finish", 0.2)
        except AssertionError:
            raise AssertionError((tmp_path / "serve.log").read_text()[-5000:]) from None
        assert job["state"] == "succeeded", job
        assert httpx.get(f"{base}/readyz", timeout=5).status_code == 200
        models = httpx.get(f"{base}/v1/models", headers=headers, timeout=5).json()["items"]
        assert [m["job_id"] for m in models] == [job["id"]]
        assert (tmp_path / "var" / "metro.db").exists() and (
            tmp_path / "var" / "broker.db"
        ).exists()
        assert (  # the model of the job's first attempt
            tmp_path / "var" / "artifacts" / "jobs" / job["id"] / "model" / "1" / "model.onnx"
        ).exists()
        # Requests for help nobody could answer (the one worker was busy with the job): only
        # as many as one grid has spare shards (17 lambdas = 3 shards), not that many per grid
        # fitted, each of which would log its "received" and "skipped" lines afterwards.
        sent = _help_requests_sent(tmp_path / "var" / "broker.db")
        assert 1 <= sent <= 2, f"{sent} help requests for a job on one worker"
        # The API's and the worker's lines in one format (core.logs), not uvicorn's "INFO:     "
        # beside Celery's "[time: INFO/MainProcess]", and no banner from the embedded worker.
        logged = (tmp_path / "serve.log").read_text()
        assert re.search(r"\n[\d-]+ [\d:,]+ INFO uvicorn\.access: .*POST /v1/jobs", logged)
        assert re.search(r"\n[\d-]+ [\d:,]+ INFO worker\.celery_app: PyTorch CPU threads", logged)
        assert "INFO:     " not in logged and "/MainProcess]" not in logged
        assert "[tasks]" not in logged
        # The worker's row in the roll call (core.workers): it serves the cpu queue only, so a
        # cuda job says it waits for a GPU worker instead of sitting in queued without a word.
        with contextlib.closing(sqlite3.connect(tmp_path / "var" / "metro.db")) as db:
            assert [row[0] for row in db.execute("SELECT queues FROM workers")] == ["cpu"]
        cuda = {**SMALL_JOB, "training": {"device": "cuda"}}
        r = httpx.post(f"{base}/v1/jobs", json=cuda, headers=headers, timeout=10)
        assert r.status_code == 201 and r.json()["state"] == "queued", r.text
        assert r.json()["waiting"].startswith("no worker serving the gpu queue"), r.json()
        httpx.post(f"{base}/v1/jobs/{r.json()['id']}/cancel", headers=headers, timeout=5)
    finally:
        if serve.poll() is None:
            serve.send_signal(signal.SIGINT)  # Ctrl-C: uvicorn stops, then its worker child
            with contextlib.suppress(subprocess.TimeoutExpired):
                serve.wait(timeout=30)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(serve.pid, signal.SIGKILL)  # whatever is left of the group
        serve.wait(timeout=10)
        log.close()
    time.sleep(0.2)
    # A worker that stops removes its row: the next reader does not wait out its window.
    with contextlib.closing(sqlite3.connect(tmp_path / "var" / "metro.db")) as db:
        assert list(db.execute("SELECT name FROM workers")) == []


def _help_requests_sent(broker_db) -> int:
    """Help messages the embedded broker (kombu's SQLAlchemy transport) was handed; it keeps
    delivered messages as invisible rows."""
    with contextlib.closing(sqlite3.connect(broker_db)) as db:
        payloads = [row[0] for row in db.execute("SELECT payload FROM kombu_message")]
    tasks = [json.loads(p).get("headers", {}).get("task") for p in payloads]
    return tasks.count("metro.help_job")


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _serve(tmp_path: Path) -> tuple[subprocess.Popen[bytes], int, BinaryIO]:
    """`metro serve` on the embedded defaults in ``tmp_path``, in a session of its own, its
    output in serve.log (closed by the caller)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("METRO_")}
    port = free_port()
    log = open(tmp_path / "serve.log", "wb")  # noqa: SIM115
    serve = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "serve", "--port", str(port)],
        cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    return serve, port, log


def test_sigterm_stops_metro_serve_and_its_worker(tmp_path):
    """What a process manager sends (systemd, docker stop): the API and its embedded worker both
    exit; no worker is left running as an orphan."""
    serve, port, log = _serve(tmp_path)
    try:

        def worker_up() -> bool:
            assert serve.poll() is None, (tmp_path / "serve.log").read_text()
            children = subprocess.run(
                ["pgrep", "-P", str(serve.pid), "-f", "cli.main worker"],
                capture_output=True, text=True,
            ).stdout.split()  # fmt: skip
            try:
                healthy = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).is_success
            except httpx.HTTPError:
                healthy = False
            return healthy and bool(children)

        wait_until(worker_up, 60, "metro serve and its worker")
        serve.send_signal(signal.SIGTERM)  # to the API process only, not the group
        serve.wait(timeout=40)
        assert serve.returncode in (143, -signal.SIGTERM), serve.returncode
        wait_until(lambda: not _group_alive(serve.pid), 30, "the worker to exit with the API")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(serve.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            serve.wait(timeout=10)
        log.close()


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has exited
    except FileNotFoundError:
        return False


def test_a_metro_serve_killed_outright_takes_its_worker_with_it(tmp_path):
    """SIGKILL gives `metro serve` no chance to stop its worker: the worker (in a session of
    its own) went on training as an orphan, and a restart started a second one beside it."""
    serve, _, log = _serve(tmp_path)
    workers: list[int] = []
    try:

        def worker_up() -> bool:
            assert serve.poll() is None, (tmp_path / "serve.log").read_text()
            found = subprocess.run(
                ["pgrep", "-P", str(serve.pid), "-f", "cli.main worker"],
                capture_output=True, text=True,
            ).stdout.split()  # fmt: skip
            workers[:] = [int(pid) for pid in found]
            return bool(workers)

        wait_until(worker_up, 60, "metro serve's worker")
        serve.kill()
        serve.wait(timeout=10)
        wait_until(lambda: not any(_running(pid) for pid in workers), 60, "the orphaned worker")
    finally:
        for pid in workers:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(serve.pid, signal.SIGKILL)
        log.close()
