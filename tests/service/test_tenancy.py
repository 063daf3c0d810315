"""Every route is scoped by tenant: another tenant's rows are 404, and a key is required."""

from __future__ import annotations

import pytest

from tests.service.conftest import job_body


@pytest.fixture
def victim(client, app, make_tenant, submit, add_model, set_job):
    """A tenant owning one of everything, including a succeeded job with a result."""
    owner = make_tenant()
    job = submit(owner)
    set_job(job["id"], state="succeeded")
    ds = client.post(
        "/v1/datasets", files={"file": ("t.csv", b"a,y\n1,0\n2,1\n")}, headers=owner.headers
    )
    assert ds.status_code == 201
    model = add_model(owner)
    return {"owner": owner, "job": job["id"], "dataset": ds.json()["id"], "model": model["id"]}


def _routes(v):
    return [
        ("GET", f"/v1/jobs/{v['job']}", None),
        ("POST", f"/v1/jobs/{v['job']}/cancel", None),
        ("GET", f"/v1/jobs/{v['job']}/trace", None),
        ("GET", f"/v1/jobs/{v['job']}/result", None),
        ("GET", f"/v1/datasets/{v['dataset']}", None),
        ("GET", f"/v1/models/{v['model']}", None),
        ("GET", f"/v1/models/{v['model']}/download", None),
        ("POST", f"/v1/models/{v['model']}/predict", {"instances": [[1.0, 2.0, 3.0]]}),
    ]


def test_owner_can_reach_everything(client, victim):
    for method, path, body in _routes(victim):
        if path.endswith("/cancel"):
            continue  # the job has succeeded; cancel is 409 for the owner
        r = client.request(method, path, json=body, headers=victim["owner"].headers)
        assert r.status_code == 200, (path, r.text)


def test_a_tenants_answers_are_no_shared_caches_to_keep(client, victim):
    """Without Cache-Control or Vary, a proxy that caches by URL alone could give a tenant's
    model file or manifest to the next request for that URL, with another key or none. The
    download keeps its ETag, for the tenant's own cache to revalidate."""
    paths = [path for method, path, _ in _routes(victim) if method == "GET"]
    for path in [*paths, "/v1/jobs", "/v1/datasets", "/v1/models"]:
        r = client.get(path, headers=victim["owner"].headers)
        assert r.status_code == 200, (path, r.text)
        assert r.headers["cache-control"] == "private, no-cache", path
        assert "Authorization" in r.headers["vary"], path
    download = client.get(f"/v1/models/{victim['model']}/download", headers=victim["owner"].headers)
    again = client.get(
        f"/v1/models/{victim['model']}/download",
        headers={**victim["owner"].headers, "If-None-Match": download.headers["etag"]},
    )
    assert again.status_code == 304 and again.headers["cache-control"] == "private, no-cache"


def test_other_tenant_gets_404_on_every_route(client, victim, other_tenant):
    for method, path, body in _routes(victim):
        r = client.request(method, path, json=body, headers=other_tenant.headers)
        assert r.status_code == 404, (method, path, r.status_code)
        assert r.json()["type"].endswith("/not-found")


def test_other_tenant_lists_are_empty(client, victim, other_tenant):
    for path in ("/v1/jobs", "/v1/datasets", "/v1/models"):
        assert client.get(path, headers=other_tenant.headers).json()["items"] == []


def test_other_tenants_dataset_uri_is_refused(client, victim, other_tenant):
    body = job_body(dataset={"uri": f"dataset://{victim['dataset']}"})
    r = client.post("/v1/jobs", json=body, headers=other_tenant.headers)
    assert r.status_code == 422
    assert r.json()["errors"][0]["loc"] == ["body", "dataset", "uri"]


def test_no_file_uri_reaches_another_tenants_upload(
    client, victim, other_tenant, settings, service_dirs, monkeypatch, tmp_path
):
    """A data root that contains the upload and artifact directories (here: their common
    parent) opens neither, by any spelling; a refused path reads like a missing one."""
    from core.datasets.locations import not_readable

    root = service_dirs["uploads"].parent
    monkeypatch.setattr(settings, "data_roots", [root])
    owner = victim["owner"]
    (stored,) = (service_dirs["uploads"] / str(owner.id)).glob("*.csv")
    rel = stored.relative_to(root)
    (service_dirs["data"] / f"link-{owner.id}.csv").symlink_to(stored)
    forms = [
        f"file://{stored}",
        str(stored),
        f"file://localhost{stored}",
        f"file://{root}//{rel}",
        f"file://{root}/data/../{rel}",
        f"file://{root}/%75ploads/{rel.relative_to('uploads')}",
        f"file://{service_dirs['data']}/link-{owner.id}.csv",
        f"file://{root}/uploads/{owner.id}/{'0' * 64}.csv",
        f"file://{root}/data/no-such-file.csv",
        f"file://{root}/artifacts/x.csv",
    ]
    for tenant in (other_tenant, owner):
        for uri in forms:
            body = job_body(dataset={"uri": uri, "label_column": "y"})
            r = client.post("/v1/jobs", json=body, headers=tenant.headers)
            assert r.status_code == 422, (uri, r.text)
            (error,) = r.json()["errors"]
            assert error["loc"] == ["body", "dataset", "uri"]
            assert error["msg"] == not_readable(uri), uri


@pytest.mark.parametrize(
    "auth", [None, "Bearer", "Bearer wrong-key", "Basic dXNlcjpwYXNz", "metro_x"]
)
def test_every_v1_route_needs_a_valid_key(client, victim, auth):
    headers = {"Authorization": auth} if auth else {}
    routes = [
        *_routes(victim),
        ("GET", "/v1/jobs", None),
        ("GET", "/v1/datasets", None),
        ("GET", "/v1/models", None),
        ("POST", "/v1/jobs", job_body()),
        ("POST", "/v1/datasets", None),
    ]
    for method, path, body in routes:
        r = client.request(method, path, json=body, headers=headers)
        assert r.status_code == 401, (method, path, r.status_code)
        assert r.headers["www-authenticate"] == "Bearer"
        assert r.headers["content-type"].startswith("application/problem+json")


def test_revoked_key_is_refused_once_its_cache_entry_expires(client, app, make_tenant):
    """A verified key is trusted for api_key_cache_seconds without asking the database; a
    revoked key is refused as soon as that has passed (a fake clock stands in for the wait)."""
    from datetime import UTC, datetime

    from sqlalchemy import update

    from core.db.models import ApiKey
    from service.api.caches import PrincipalCache

    now = [0.0]
    ttl = app.state.settings.api_key_cache_seconds
    cache = PrincipalCache(maxsize=100, ttl_seconds=ttl, timer=lambda: now[0])
    shared, app.state.principal_cache = app.state.principal_cache, cache
    try:
        t = make_tenant()
        assert client.get("/v1/jobs", headers=t.headers).status_code == 200
        with app.state.sessionmaker() as session:
            session.execute(
                update(ApiKey).where(ApiKey.tenant_id == t.id).values(revoked_at=datetime.now(UTC))
            )
            session.commit()
        now[0] += ttl * 0.5
        assert client.get("/v1/jobs", headers=t.headers).status_code == 200  # bounded staleness
        now[0] += ttl * 0.6
        assert client.get("/v1/jobs", headers=t.headers).status_code == 401
        assert client.get("/v1/jobs", headers=t.headers).status_code == 401  # refusals: uncached
    finally:
        app.state.principal_cache = shared


def test_api_key_cache_holds_hashes_not_keys(client, app, make_tenant):
    t = make_tenant()
    assert client.get("/v1/jobs", headers=t.headers).status_code == 200
    cached = list(app.state.principal_cache._entries)
    assert cached and all(t.key not in entry for entry in cached)


def test_concurrent_requests_with_an_uncached_key_share_one_lookup(app, make_tenant, monkeypatch):
    """When a key is not cached (first use, or its entry just expired) and many requests carry it
    at once, one database lookup answers them all, rather than one thread and one pooled
    connection per request for the same row."""
    import asyncio
    import time

    import httpx

    from service.api import deps

    t = make_tenant()
    looked_up = []
    authenticate = deps.authenticate_hash

    def slow_lookup(session, key_hash):
        looked_up.append(key_hash)
        time.sleep(0.2)  # long enough for every request of the burst to arrive meanwhile
        return authenticate(session, key_hash)

    monkeypatch.setattr(deps, "authenticate_hash", slow_lookup)

    async def burst() -> list[int]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://api") as c:
            answers = await asyncio.gather(
                *(c.get("/v1/jobs", headers=t.headers) for _ in range(16))
            )
        return [r.status_code for r in answers]

    assert asyncio.run(burst()) == [200] * 16
    assert len(looked_up) == 1
    assert asyncio.run(burst()) == [200] * 16  # now cached
    assert len(looked_up) == 1


@pytest.fixture
def wire(app):
    """The statements the API's engine sends, each with the connection's transaction status
    right after it (psycopg's: IDLE outside a transaction, INTRANS inside one)."""
    from sqlalchemy import event

    sent: list[tuple[str, str]] = []

    def record(conn, cursor, statement, parameters, context, executemany):
        status = conn.connection.dbapi_connection.info.transaction_status
        sent.append((statement.split()[0].upper(), status.name))

    event.listen(app.state.engine, "after_cursor_execute", record)
    yield sent
    event.remove(app.state.engine, "after_cursor_execute", record)


@pytest.mark.parametrize("kind", ["jobs", "models"])
def test_reading_one_row_is_one_select_outside_a_transaction(
    client, tenant, submit, add_model, wire, kind
):
    """GET /v1/jobs/{id} and GET /v1/models/{id} (key cached) cost one SELECT and no
    transaction: no BEGIN before it, no ROLLBACK after it, no ORM session."""
    row_id = submit(tenant)["id"] if kind == "jobs" else add_model(tenant)["id"]
    assert client.get(f"/v1/{kind}/{row_id}", headers=tenant.headers).status_code == 200
    wire.clear()
    r = client.get(f"/v1/{kind}/{row_id}", headers=tenant.headers)
    assert r.status_code == 200, r.text
    assert r.json()["id"] == row_id
    assert wire == [("SELECT", "IDLE")]


def test_concurrent_reads_reuse_pooled_connections(settings, make_tenant):
    """Bursts of concurrent reads, with the default pool settings, open connections only up to
    the pool and close none of them: an overflow connection, closed whenever it is returned to a
    full pool, made a busy API open and close Postgres connections continually."""
    import asyncio

    import httpx
    from sqlalchemy import event

    from service.main import create_app

    app = create_app(settings)
    t = make_tenant()
    opened, closed = [], []
    event.listen(app.state.engine, "connect", lambda *a: opened.append(1))
    event.listen(app.state.engine.pool, "close", lambda *a: closed.append(1))

    async def bursts(job_id: str) -> list[int]:
        transport = httpx.ASGITransport(app=app)
        codes = []
        async with httpx.AsyncClient(transport=transport, base_url="http://api") as c:
            for _ in range(3):
                answers = await asyncio.gather(
                    *(c.get(f"/v1/jobs/{job_id}", headers=t.headers) for _ in range(24))
                )
                codes += [r.status_code for r in answers]
        return codes

    try:
        with app.state.sessionmaker() as session:
            from service.crud.jobs import submit_job as create_job
            from tests.service.conftest import job_body

            job, _ = create_job(
                session, tenant_id=t.id, spec=job_body(), dataset_uri="builtin://breast_cancer",
                dataset_id=None, idempotency_key=None, max_active_jobs=0,
            )  # fmt: skip
        assert asyncio.run(bursts(str(job.id))) == [200] * 72
        assert 0 < len(opened) <= settings.database_pool_size + settings.database_max_overflow
        assert closed == []
    finally:
        app.state.engine.dispose()


def test_a_model_cached_for_its_owner_is_not_served_to_another_tenant(
    client, make_tenant, add_model
):
    """The predict route caches a model's row; a cache keyed on the model alone would serve it
    to any tenant who knows its id once its owner had used it."""
    owner, other = make_tenant(), make_tenant()
    model = add_model(owner)
    body = {"instances": [[1.0, 2.0, 3.0]]}
    path = f"/v1/models/{model['id']}/predict"
    assert client.post(path, json=body, headers=owner.headers).status_code == 200  # now cached
    r = client.post(path, json=body, headers=other.headers)
    assert r.status_code == 404, r.text
    assert r.json()["type"].endswith("/not-found")
