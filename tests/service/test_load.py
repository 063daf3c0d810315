"""The API under concurrent load, as deployed: `metro serve` in its own process on Postgres, with
the default thread pool (40) and connection pool (15), and more concurrent clients than both
together. Every request must be answered, /healthz must answer during and right after the load,
and SIGTERM must stop the server.

The size (64 clients x 4 requests on three routes) is what locked the server up before: the key
check held a pooled connection while the request waited for a second thread, so all threads
waited for connections held by requests waiting for threads.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from core.db.migrate import upgrade
from core.db.models import ApiKey
from core.db.session import make_engine, make_sessionmaker
from metro._testing import write_linear_artifact
from service.admin import create_api_key
from service.crud.models import register_model

CLIENTS = 64
REQUESTS_PER_CLIENT = 4
SHUTDOWN_TIMEOUT_SECONDS = 3


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def served(
    create_pg_database: Callable[[], str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    url = create_pg_database()
    upgrade(url)
    root = tmp_path_factory.mktemp("load")
    rel = "models/load"
    _, digest, manifest = write_linear_artifact(
        root / rel, [1.0, -1.0, 0.5], 0.1, feature_names=["a", "b", "c"]
    )
    engine = make_engine(url)
    with make_sessionmaker(engine)() as session:
        key = create_api_key(session, "load")
        tenant_id = session.scalars(select(ApiKey.tenant_id)).one()
        model = register_model(
            session, tenant_id=tenant_id, job_id=None, artifact_uri=rel, sha256=digest,
            manifest=manifest, has_onnx=False,
        )  # fmt: skip
    engine.dispose()
    port = _free_port()
    env = {
        **os.environ,
        "METRO_DATABASE_URL": url,
        "METRO_BROKER_URL": "redis://127.0.0.1:6379/0",
        "METRO_QUEUE_PREFIX": f"load-{port}-",
        "METRO_ARTIFACTS_URI": str(root),
        "METRO_UPLOAD_DIR": str(root / "uploads"),
        "METRO_SHUTDOWN_TIMEOUT_SECONDS": str(SHUTDOWN_TIMEOUT_SECONDS),
    }
    log = root / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "serve", "--port", str(port),
             "--no-worker", "--no-migrate"],
            env=env, stdout=out, stderr=subprocess.STDOUT, cwd=root,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, f"the server exited:\n{log.read_text()[-3000:]}"
            try:
                if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.2)
        yield {"base": base, "key": key, "model_id": str(model.id), "proc": proc, "log": log}
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


async def _load(base: str, key: str, model_id: str) -> tuple[Counter[str], list[float]]:
    headers = {"Authorization": f"Bearer {key}"}
    outcomes: Counter[str] = Counter()
    health_latencies: list[float] = []
    limits = httpx.Limits(max_connections=CLIENTS + 1)
    # A deadlocked server holds requests until its pool timeout: 20 s is "no answer".
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=20) as http:

        async def client(i: int) -> None:
            for j in range(REQUESTS_PER_CLIENT):
                kind = (i + j) % 3
                try:
                    if kind == 0:
                        r = await http.get("/v1/jobs", headers=headers)
                    elif kind == 1:
                        r = await http.get(f"/v1/models/{model_id}", headers=headers)
                    else:
                        r = await http.post(
                            f"/v1/models/{model_id}/predict",
                            headers=headers,
                            json={"instances": [[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]},
                        )
                    outcomes[str(r.status_code)] += 1
                except httpx.HTTPError as exc:
                    outcomes[type(exc).__name__] += 1

        async def probe_health() -> None:
            await asyncio.sleep(0.3)  # in the thick of it
            start = time.monotonic()
            try:
                r = await http.get("/healthz", timeout=5)
                assert r.status_code == 200
                health_latencies.append(time.monotonic() - start)
            except httpx.HTTPError:
                health_latencies.append(float("inf"))

        await asyncio.gather(probe_health(), *(client(i) for i in range(CLIENTS)))
    return outcomes, health_latencies


def test_more_clients_than_threads_and_connections_are_all_answered(served):
    outcomes, during = asyncio.run(_load(served["base"], served["key"], served["model_id"]))
    total = CLIENTS * REQUESTS_PER_CLIENT
    assert outcomes == Counter({"200": total}), outcomes
    assert during[0] < 5, "/healthz did not answer during the load"
    start = time.monotonic()
    assert httpx.get(served["base"] + "/healthz", timeout=5).status_code == 200
    assert time.monotonic() - start < 5
    assert "QueuePool limit" not in Path(served["log"]).read_text()


def test_sigterm_stops_the_server_even_with_requests_in_flight(served):
    proc = served["proc"]

    async def burst_then_term() -> None:
        headers = {"Authorization": f"Bearer {served['key']}"}
        async with httpx.AsyncClient(base_url=served["base"], timeout=20) as http:
            requests = [
                asyncio.ensure_future(http.get("/v1/jobs", headers=headers)) for _ in range(CLIENTS)
            ]
            await asyncio.sleep(0.05)
            proc.send_signal(signal.SIGTERM)
            await asyncio.gather(*requests, return_exceptions=True)

    asyncio.run(burst_then_term())
    try:
        proc.wait(timeout=SHUTDOWN_TIMEOUT_SECONDS + 10)
    except subprocess.TimeoutExpired:
        pytest.fail("the server was still running after SIGTERM")
