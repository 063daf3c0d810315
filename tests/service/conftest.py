"""Fixtures for the service tests: a throw-away PostgreSQL database (migrated with Alembic), one
app and client for the whole session, and a fresh tenant per test so tests never see each
other's rows (which is itself the tenant scoping under test)."""

from __future__ import annotations

import os
import uuid
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlalchemy import select

from core.config import Settings
from core.db.migrate import upgrade
from core.db.models import Job, Tenant
from metro._testing import write_linear_artifact
from service.admin import create_api_key
from service.crud.models import register_model
from service.main import create_app

# Starlette now prefers the httpx2 package for its TestClient; plain httpx still works, and the
# service itself uses httpx (core.datasets.fetch), so the notice is noise here.
warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
from fastapi.testclient import TestClient  # noqa: E402

PG_ADMIN_DSN = os.environ.get("METRO_TEST_PG_DSN", "postgresql://postgres@127.0.0.1:5432/postgres")


def _pg_url(dbname: str) -> str:
    base = PG_ADMIN_DSN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://", 1)
    return f"{base}/{dbname}"


@pytest.fixture(scope="session")
def create_pg_database() -> Iterator[Callable[[], str]]:
    """Factory of empty databases named metro_test_<hex>, all dropped at the end."""
    created: list[str] = []

    def make() -> str:
        name = f"metro_test_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(PG_ADMIN_DSN, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        created.append(name)
        return _pg_url(name)

    yield make
    with psycopg.connect(PG_ADMIN_DSN, autocommit=True) as conn:
        for name in created:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def database_url(create_pg_database: Callable[[], str]) -> str:
    url = create_pg_database()
    upgrade(url)
    return url


@pytest.fixture(scope="session")
def service_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("service")
    dirs = {name: root / name for name in ("artifacts", "uploads", "data")}
    for d in dirs.values():
        d.mkdir()
    return dirs


@pytest.fixture(scope="session")
def settings(database_url: str, service_dirs: dict[str, Path]) -> Settings:
    return Settings(
        database_url=database_url,
        broker_url="redis://127.0.0.1:6379/0",
        artifacts_uri=str(service_dirs["artifacts"]),
        upload_dir=service_dirs["uploads"],
        data_roots=[service_dirs["data"]],
        max_upload_bytes=64 * 1024,
        max_request_body_bytes=512 * 1024,
        max_predict_rows=100,
        default_page_size=20,
        max_page_size=50,
        readiness_timeout_seconds=1.0,
        # Every request of the shared client comes from one address ("testclient"): the wrong
        # keys the suite sends on purpose would add up to a lockout of later tests. The
        # throttle's own tests (test_auth_throttle.py) build apps of their own.
        auth_failure_limit=0,
        _env_file=None,  # type: ignore[call-arg]
    )


FAKE_DNS: dict[str, list[str]] = {}


def fake_resolver(host: str, port: int) -> list[str]:
    """Tests never touch the real DNS: unknown names do not resolve."""
    from core.errors import UnsafeURLError

    if host not in FAKE_DNS:
        raise UnsafeURLError(f"the host {host!r} does not resolve")
    return FAKE_DNS[host]


class FakeJobQueue:
    """Stands in for the broker: records what the API sends (the worker tests use a real one),
    and checks that the job is committed before its message leaves."""

    def __init__(self, sessionmaker: Any) -> None:
        self.sessionmaker = sessionmaker
        self.sent: list[str] = []
        self.fail = False

    def enqueue(self, job_id: Any, spec: dict[str, Any]) -> None:
        if self.fail:
            raise ConnectionError("broker down")
        with self.sessionmaker() as session:  # another session: sees only committed rows
            assert session.get(Job, job_id) is not None, "enqueued before the commit"
        self.sent.append(str(job_id))


@pytest.fixture(scope="session")
def app(settings: Settings) -> Any:
    application = create_app(settings)
    application.state.resolver = fake_resolver
    application.state.job_queue = FakeJobQueue(application.state.sessionmaker)
    return application


@pytest.fixture(scope="session")
def client(app: Any) -> Iterator[TestClient]:
    # raise_server_exceptions=False: see the 500 response a real client would get.
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


@dataclass
class TenantCtx:
    name: str
    key: str
    id: uuid.UUID

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


@pytest.fixture
def make_tenant(app: Any) -> Callable[[], TenantCtx]:
    def make() -> TenantCtx:
        name = f"tenant-{uuid.uuid4().hex[:8]}"
        with app.state.sessionmaker() as session:
            key = create_api_key(session, name)
            tenant_id = session.scalars(select(Tenant.id).where(Tenant.name == name)).one()
        return TenantCtx(name=name, key=key, id=tenant_id)

    return make


@pytest.fixture
def tenant(make_tenant: Callable[[], TenantCtx]) -> TenantCtx:
    return make_tenant()


@pytest.fixture
def other_tenant(make_tenant: Callable[[], TenantCtx]) -> TenantCtx:
    return make_tenant()


def upload(
    client: Any,
    tenant: TenantCtx,
    content: bytes,
    filename: str,
    content_type: str = "application/octet-stream",
    **form: Any,
) -> Any:
    """POST /v1/datasets with ``content`` as the file ``filename`` (and ``form`` fields)."""
    return client.post(
        "/v1/datasets",
        files={"file": (filename, content, content_type)},
        data=form,
        headers=tenant.headers,
    )


def job_body(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "metric": {"preset": "f1"},
        "dataset": {"uri": "builtin://breast_cancer"},
    }
    body.update(overrides)
    return body


@pytest.fixture
def submit(client: TestClient) -> Callable[..., dict[str, Any]]:
    def do(t: TenantCtx, **overrides: Any) -> dict[str, Any]:
        r = client.post("/v1/jobs", json=job_body(**overrides), headers=t.headers)
        assert r.status_code == 201, r.text
        return r.json()

    return do


@pytest.fixture
def set_job(app: Any) -> Callable[..., None]:
    """Stand in for a worker: change job columns directly."""

    def do(job_id: str, **fields: Any) -> None:
        with app.state.sessionmaker() as session:
            job = session.get(Job, uuid.UUID(job_id))
            assert job is not None
            for key, value in fields.items():
                setattr(job, key, value)
            session.commit()

    return do


@pytest.fixture
def add_model(app: Any, service_dirs: dict[str, Path]) -> Callable[..., dict[str, Any]]:
    """Write a linear model and register it for a tenant, as a worker would."""

    def do(
        t: TenantCtx, weight: list[float] | None = None, bias: float = 0.0, **kwargs: Any
    ) -> dict[str, Any]:
        rel = f"models/{uuid.uuid4().hex}"
        _, digest, manifest = write_linear_artifact(
            service_dirs["artifacts"] / rel, weight or [1.0, -1.0, 0.5], bias, **kwargs
        )
        with app.state.sessionmaker() as session:
            model = register_model(
                session,
                tenant_id=t.id,
                job_id=None,
                artifact_uri=rel,
                sha256=digest,
                manifest=manifest,
                has_onnx=bool(kwargs.get("onnx")),
            )
        return {"id": str(model.id), "sha256": digest, "dir": service_dirs["artifacts"] / rel}

    return do


def post_unread_upload(
    app: Any, headers: list[tuple[bytes, bytes]], content_length: int
) -> tuple[dict[str, Any], bytes, list[dict[str, Any]]]:
    """POST /v1/datasets straight to the ASGI app with a multipart body that never ends: the
    answer's start message, its body, and every body message the app asked for (none, where it
    answered before reading the body)."""
    import asyncio

    received: list[dict[str, Any]] = []
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        message = {"type": "http.request", "body": b"x" * 65536, "more_body": True}
        received.append(message)
        return message

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": "/v1/datasets", "raw_path": b"/v1/datasets", "query_string": b"",
        "root_path": "", "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80),
        "headers": [(b"content-type", b"multipart/form-data; boundary=x"),
                    (b"content-length", str(content_length).encode()), *headers],
    }  # fmt: skip
    asyncio.run(app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start, body, received
