"""Alembic migrations on an empty PostgreSQL database (up and down), and the embedded SQLite
default end to end."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, inspect

from core.config import Settings
from core.db import migrate
from core.db.base import Base
from service.admin import create_api_key
from service.main import create_app
from tests.service.conftest import job_body

TABLES = {
    "tenants", "api_keys", "datasets", "jobs", "lambda_steps", "metric_results", "models",
    "job_fits", "stored_objects", "workers", "admin_records",
}  # fmt: skip


def _tables(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        return set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_postgres_upgrade_from_empty_and_downgrade_to_base(create_pg_database):
    url = create_pg_database()
    assert _tables(url) == set()
    assert migrate.current(url) is None
    migrate.upgrade(url)
    assert _tables(url) == TABLES | {"alembic_version"}
    assert migrate.current(url) == "0011"
    migrate.downgrade(url, "base")
    assert _tables(url) == {"alembic_version"}
    assert migrate.current(url) is None
    migrate.upgrade(url)  # and back up again
    assert _tables(url) >= TABLES


def test_migrated_schema_matches_the_models(database_url):
    """Autogenerate finds nothing to do: the migration and the models agree."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    engine = create_engine(database_url)
    try:
        with engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    finally:
        engine.dispose()
    assert diff == []


def test_sqlite_embedded_default_end_to_end(tmp_path, recwarn):
    url = f"sqlite:///{tmp_path / 'var' / 'metro.db'}"
    migrate.upgrade(url)
    assert _tables(url) >= TABLES
    settings = Settings(
        database_url=url,
        broker_url=None,
        artifacts_uri=str(tmp_path / "artifacts"),
        upload_dir=tmp_path / "uploads",
        _env_file=None,  # type: ignore[call-arg]
    )
    app = create_app(settings)
    with app.state.sessionmaker() as session:
        key = create_api_key(session, "embedded")
    headers = {"Authorization": f"Bearer {key}", "Idempotency-Key": "one"}
    with TestClient(app) as c:
        r = c.post("/v1/jobs", json=job_body(), headers=headers)
        assert r.status_code == 201, r.text
        assert c.post("/v1/jobs", json=job_body(), headers=headers).status_code == 200
        for _ in range(4):
            c.post("/v1/jobs", json=job_body(), headers={"Authorization": f"Bearer {key}"})
        ids, cursor = [], None
        while True:
            page = c.get(
                "/v1/jobs",
                params={"limit": 2, **({"cursor": cursor} if cursor else {})},
                headers=headers,
            ).json()
            ids += [j["id"] for j in page["items"]]
            cursor = page["next_cursor"]
            if not cursor:
                break
        assert len(ids) == len(set(ids)) == 5
        # The embedded broker (kombu's SQLAlchemy transport) published them without showing
        # its users SQLAlchemy's deprecation of kombu's own mapping (core.broker).
        assert not [w for w in recwarn if "noload" in str(w.message)]
        got = c.get(f"/v1/jobs/{r.json()['id']}", headers=headers).json()
        assert got["created_at"] == r.json()["created_at"]
        assert (
            c.post(f"/v1/jobs/{r.json()['id']}/cancel", headers=headers).json()["state"]
            == "cancelled"
        )
        upload = c.post(
            "/v1/datasets", files={"file": ("t.csv", b"a,y\n1,0\n2,1\n")}, headers=headers
        )
        assert upload.status_code == 201
    migrate.downgrade(url, "base")
    assert _tables(url) == {"alembic_version"}


@pytest.mark.parametrize("backend", ["postgresql", "sqlite"])
def test_stored_objects_are_backfilled_from_existing_datasets(
    backend, create_pg_database, tmp_path
):
    """0005: one stored_objects row per distinct stored location, so the lifecycle's lock exists
    for datasets uploaded before it."""
    import uuid

    from sqlalchemy import text

    url = create_pg_database() if backend == "postgresql" else f"sqlite:///{tmp_path / 'm.db'}"
    migrate.upgrade(url, "0004")
    engine = create_engine(url)
    tenant = uuid.uuid4()
    hexid = lambda u: str(u) if backend == "postgresql" else u.hex  # noqa: E731
    try:
        with engine.begin() as conn:
            conn.execute(
                text("INSERT INTO tenants (id, name, created_at) VALUES (:i, 't', :c)"),
                {"i": hexid(tenant), "c": "2026-01-01 00:00:00"},
            )
            for n, location in enumerate(["/u/a.csv", "/u/a.csv", "/u/b.csv"]):
                conn.execute(
                    text(
                        "INSERT INTO datasets (id, tenant_id, filename, format, size_bytes, "
                        "sha256, storage_path, created_at) VALUES (:i, :t, 'f.csv', '.csv', "
                        ":s, :h, :p, :c)"
                    ),
                    {
                        "i": hexid(uuid.uuid4()), "t": hexid(tenant), "s": 10 + n,
                        "h": location[-5] * 64, "p": location, "c": "2026-01-01 00:00:00",
                    },
                )  # fmt: skip
        migrate.upgrade(url)
        with engine.connect() as conn:
            rows = conn.execute(
                text("SELECT location, size_bytes FROM stored_objects ORDER BY location")
            ).fetchall()
    finally:
        engine.dispose()
    assert [tuple(r) for r in rows] == [("/u/a.csv", 11), ("/u/b.csv", 12)]
