"""/healthz, /readyz and /metrics."""

from __future__ import annotations

import logging
import socket
import time

from fastapi.testclient import TestClient

from core.config import Settings
from service.main import create_app


def _redis_up() -> bool:
    try:
        socket.create_connection(("127.0.0.1", 6379), timeout=0.5).close()
    except OSError:
        return False
    return True


def test_healthz(client):
    r = client.get("/healthz")
    assert r.status_code == 200 and r.json() == {"status": "ok"}


def test_readyz_with_postgres_and_redis(settings, caplog):
    assert _redis_up(), "Redis must listen on 127.0.0.1:6379 (.ci/run starts it)"
    # This test reads the checks' answers, not their speed (the next ones time them): on a
    # loaded machine, 1 s was too little for both (CI, 2026-11-29: "timed out" twice).
    with caplog.at_level(logging.INFO), _app_with(settings, readiness_timeout_seconds=10.0) as c:
        r = c.get("/readyz")
    assert r.status_code == 200, r.text
    assert r.json() == {"status": "ready", "checks": {"database": "ok", "broker": "ok"}}
    # A probe every few seconds logged alembic's two INFO lines each time.
    assert [rec.name for rec in caplog.records if rec.name.startswith("alembic")] == []


def _app_with(settings: Settings, **changes) -> TestClient:
    return TestClient(create_app(settings.model_copy(update=changes)))


def test_the_checks_one_time_costs_are_paid_at_start_up(settings, monkeypatch):
    """Reading the migrations took 0.43 s on a quiet machine, in the first probe, inside its
    timeout: a fresh replica's first probes could answer "timed out" for a database that was
    there. The app reads them as it starts, so a probe after that does not."""
    from alembic.script import ScriptDirectory

    from core.db import migrate

    migrate._scripts.cache_clear()
    with _app_with(settings, readiness_timeout_seconds=10.0) as c:

        def unread(*args, **kwargs):
            raise AssertionError("the probe read the migrations")

        monkeypatch.setattr(ScriptDirectory, "from_config", unread)
        r = c.get("/readyz")
    assert r.status_code == 200, r.text
    assert r.json()["checks"] == {"database": "ok", "broker": "ok"}


def test_readyz_with_the_embedded_sqla_broker(settings, tmp_path):
    with _app_with(settings, broker_url=f"sqla+sqlite:///{tmp_path / 'broker.db'}") as c:
        r = c.get("/readyz")
    assert r.status_code == 200 and r.json()["checks"]["broker"] == "ok"


def test_readyz_reports_an_unreachable_broker_and_database(settings):
    with _app_with(
        settings,
        broker_url="redis://127.0.0.1:1/0",
        database_url="postgresql+psycopg://postgres@127.0.0.1:1/none",
    ) as c:
        r = c.get("/readyz")
    assert r.status_code == 503
    assert r.json() == {
        "status": "not ready",
        "checks": {"database": "unreachable", "broker": "unreachable"},
    }
    assert "127.0.0.1" not in r.text


def test_an_unreachable_broker_alone_is_reported_but_leaves_the_api_ready(settings):
    """Every replica answered 503 while Redis was away, so an orchestrator took the whole API
    out of service, predictions and reads included, though it serves every request without the
    broker (a job waits in the database until the reconciler can send it)."""
    with _app_with(settings, broker_url="redis://127.0.0.1:1/0") as c:
        r = c.get("/readyz")
    assert r.status_code == 200, r.text
    assert r.json() == {"status": "ready", "checks": {"database": "ok", "broker": "unreachable"}}


def test_readyz_is_not_ready_on_a_database_not_at_this_codes_schema(settings, tmp_path):
    """A deploy that skipped `metro migrate` passed its readiness checks while every API call
    answered 500."""
    from sqlalchemy import create_engine, text

    from core.db.migrate import head, upgrade

    url = f"sqlite:///{tmp_path / 'metro.db'}"
    create_engine(url).connect().close()  # an empty database
    with _app_with(settings, database_url=url) as c:
        r = c.get("/readyz")
        assert r.status_code == 503 and r.json()["checks"]["database"] == (
            "not migrated: run `metro migrate`"
        )
        upgrade(url)
        assert c.get("/readyz").json()["checks"]["database"] == "ok"
        with create_engine(url).begin() as conn:
            conn.execute(text("UPDATE alembic_version SET version_num = '0001'"))
        r = c.get("/readyz")
        assert r.status_code == 503
        assert r.json()["checks"]["database"] == (
            f"schema at revision 0001, this code's is {head()}: run `metro migrate`"
        )
        # A newer version's migration (a rolling deploy runs `metro migrate` first): the
        # running processes stay ready until they are replaced.
        with create_engine(url).begin() as conn:
            conn.execute(text("UPDATE alembic_version SET version_num = 'f00d0099'"))
        assert c.get("/readyz").status_code == 200


def test_readyz_answers_promptly_when_every_pooled_connection_is_busy(settings):
    """With the connection pool exhausted, readiness says so (503) within its own timeout,
    not after the pool's timeout (which a request waiting for a connection would sit out)."""
    app = create_app(
        settings.model_copy(
            update={
                "database_pool_size": 1,
                "database_max_overflow": 0,
                "database_pool_timeout_seconds": 8.0,
                "readiness_timeout_seconds": 1.0,
            }
        )
    )
    with TestClient(app) as c:
        # Once with the pool free: ready, before its only connection is taken.
        assert c.get("/readyz").status_code == 200
        with app.state.engine.connect():  # the pool's only connection
            started = time.monotonic()
            r = c.get("/readyz")
            elapsed = time.monotonic() - started
    assert r.status_code == 503
    assert r.json()["checks"]["database"] == "timed out"
    assert r.json()["checks"]["broker"] == "ok"
    assert elapsed < 3.0


def test_metrics_count_requests_by_route_template(client, tenant):
    client.get(f"/v1/jobs/{'0' * 8}-0000-0000-0000-{'0' * 12}", headers=tenant.headers)
    r = client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    text = r.text
    assert "metro_http_requests_total" in text
    assert 'route="/v1/jobs/{job_id}"' in text and "00000000-0000" not in text


def _assert_unavailable(r) -> None:
    assert r.status_code == 503, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    assert r.headers["retry-after"] == "5"
    body = r.json()
    assert body["status"] == 503 and body["type"].endswith("/unavailable")
    assert "127.0.0.1" not in r.text and "psycopg" not in r.text


def test_database_down_is_a_503_with_retry_after(settings, tenant):
    with _app_with(settings, database_url="postgresql+psycopg://postgres@127.0.0.1:1/none") as c:
        _assert_unavailable(c.get("/v1/jobs", headers=tenant.headers))  # the key check
        assert c.get("/healthz").status_code == 200  # liveness does not need the database


def test_database_down_after_the_key_check_is_a_503(settings, tenant):
    app = create_app(settings)
    with TestClient(app, raise_server_exceptions=False) as c:
        assert c.get("/v1/jobs", headers=tenant.headers).status_code == 200  # key now cached
        app.state.engine.dispose()
        app.state.sessionmaker.configure(
            bind=create_app(
                settings.model_copy(
                    update={"database_url": "postgresql+psycopg://postgres@127.0.0.1:1/none"}
                )
            ).state.engine
        )
        _assert_unavailable(c.get("/v1/jobs", headers=tenant.headers))


def test_no_free_connection_in_time_is_a_503(settings, tenant):
    app = create_app(
        settings.model_copy(
            update={
                "database_pool_size": 1,
                "database_max_overflow": 0,
                "database_pool_timeout_seconds": 0.1,
            }
        )
    )
    with TestClient(app, raise_server_exceptions=False) as c:
        assert c.get("/v1/jobs", headers=tenant.headers).status_code == 200
        with app.state.engine.connect():  # the pool's only connection, held elsewhere
            _assert_unavailable(c.get("/v1/jobs", headers=tenant.headers))
        assert c.get("/v1/jobs", headers=tenant.headers).status_code == 200


def test_a_request_refused_before_routing_is_counted_under_its_route(client):
    """A 401 is answered before the router runs, so it was counted as route="<unmatched>":
    an attack on /v1/datasets did not show on that route's series."""
    assert client.get(f"/v1/datasets/{'1' * 8}-0000-0000-0000-{'0' * 12}").status_code == 401
    assert client.get("/no/such/path").status_code in (401, 404)
    text = client.get("/metrics").text
    counted = [line for line in text.splitlines() if line.startswith("metro_http_requests_total{")]
    assert any('route="/v1/datasets/{dataset_id}"' in c and 'status="401"' in c for c in counted), (
        counted
    )
    assert "11111111-0000" not in text


def test_made_up_methods_are_counted_as_one_series(client):
    """The method label took any method a request named: each made-up one a new series, never
    freed, from clients with no key (a 405 needs none)."""
    for n in range(20):
        assert client.request(f"X{n}Y", "/healthz").status_code == 405
    text = client.get("/metrics").text
    assert "X3Y" not in text
    counted = [line for line in text.splitlines() if line.startswith("metro_http_requests_total{")]
    assert any('method="OTHER"' in c and c.endswith(" 20.0") for c in counted), counted


def test_metrics_can_ask_for_an_operators_token(settings, tenant):
    """/metrics counts every tenant's requests together: where it cannot be kept off the
    network, METRO_METRICS_TOKEN asks for a bearer token, which no tenant's API key is."""
    from pydantic import SecretStr

    with _app_with(settings, metrics_token=SecretStr("scrape-me")) as c:
        for headers in ({}, tenant.headers, {"Authorization": "Bearer scrape-m"}):
            r = c.get("/metrics", headers=headers)
            assert r.status_code == 401, headers
            assert r.headers["www-authenticate"] == "Bearer"
            assert "METRO_METRICS_TOKEN" in r.json()["detail"]
        r = c.get("/metrics", headers={"Authorization": "Bearer scrape-me"})
        assert r.status_code == 200 and "metro_http_requests_total" in r.text
