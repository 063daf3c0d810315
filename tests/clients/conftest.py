"""A live service for the client and CLI tests: ``metro serve`` (uvicorn) on a free loopback port
and a real ``metro worker`` process, on a fresh PostgreSQL database and a private key prefix on
the Redis, both torn down at the end. One per session: the generated-client and CLI tests share
it (each test uses its own jobs, so they do not interfere).

The pieces come from the worker tests (:mod:`tests.worker.conftest`): a :class:`Cluster` holds the
database, the broker namespace, the directories and the settings as ``METRO_*`` variables; here
the API also runs as its own process, reached only over HTTP.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np
import pytest

from tests.worker.conftest import Cluster, create_database, free_port, wait_until

__all__ = ["create_database"]  # the session's database factory, shared with the worker tests

ROOT = Path(__file__).resolve().parents[2]

# Import the committed client from the source tree when it is not installed (``make test``
# installs it; a bare checkout still runs these tests).
if str(ROOT / "clients" / "python") not in sys.path:
    try:
        import metro_client  # noqa: F401
    except ImportError:
        sys.path.insert(0, str(ROOT / "clients" / "python"))


@dataclass
class Live:
    url: str
    api_key: str
    cluster: Cluster
    tmp: Path

    @property
    def data_dir(self) -> Path:
        """A directory jobs may read with file:// URIs (a METRO_DATA_ROOTS entry)."""
        return self.cluster.data_dir

    @property
    def env(self) -> dict[str, str]:
        """Environment for a ``metro`` CLI process pointed at this service."""
        return {
            **os.environ,
            "METRO_URL": self.url,
            "METRO_API_KEY": self.api_key,
            "COLUMNS": "200",  # rich tables on one line each
            "PYTHONUNBUFFERED": "1",
        }

    def client(self):  # type: ignore[no-untyped-def]
        from metro_client import AuthenticatedClient

        return AuthenticatedClient(base_url=self.url, token=self.api_key, timeout=httpx.Timeout(30))


class ServerProcess:
    """``metro serve --no-worker`` in its own process group."""

    def __init__(self, cluster: Cluster, port: int) -> None:
        self.log_path = cluster.tmp / "server.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "serve", "--host", "127.0.0.1",
             "--port", str(port), "--no-migrate", "--no-worker"],
            cwd=cluster.tmp, env={**os.environ, **cluster.env}, stdout=self._log,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        self.url = f"http://127.0.0.1:{port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_ready(self, timeout: float = 60) -> None:
        def ready() -> bool:
            if self.proc.poll() is not None:
                raise AssertionError(f"the API server exited:\n{self.log()[-3000:]}")
            try:
                return httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(ready, timeout, "the API server to be ready", every=0.2)

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        self._log.close()


@pytest.fixture(scope="session")
def live(create_database, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("live")
    cluster = Cluster(tmp, create_database())
    server = ServerProcess(cluster, free_port())
    try:
        worker = cluster.start_worker("live", beat=True, wait=False)  # both start at once
        server.wait_ready()
        worker.wait_ready()
        key = cluster.headers["Authorization"].removeprefix("Bearer ")
        yield Live(url=server.url, api_key=key, cluster=cluster, tmp=tmp)
    finally:
        server.stop()
        cluster.close()


def write_training_csv(path: Path, n: int = 240, seed: int = 0) -> Path:
    """A small, learnable binary problem: four numeric features a..d and a 0/1 label y."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).round(4)
    logits = 1.5 * x[:, 0] - x[:, 1] + 0.5 * x[:, 2] - 0.8
    y = (logits + rng.normal(scale=0.5, size=n) > 0).astype(int)
    lines = ["a,b,c,d,y"] + [
        ",".join([*map(str, row), str(label)]) for row, label in zip(x, y, strict=True)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path
