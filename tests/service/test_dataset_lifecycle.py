"""The dataset lifecycle under concurrency: deleting a dataset while a job is submitted on it, and
while the same bytes are uploaded again, on PostgreSQL (row locks) and on the embedded SQLite.

Every pair of requests runs at once (the API's sync routes run in its thread pool, so the two
transactions overlap in the database). Whatever the interleaving: no 500, no job accepted on a
deleted dataset, and no dataset row whose bytes are gone."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy.exc

from core.config import Settings
from core.datasets.storage import UploadStore
from core.db.migrate import upgrade
from core.db.models import Dataset
from service.admin import create_api_key
from service.crud import datasets as crud_datasets
from service.main import create_app
from tests.service.conftest import FakeJobQueue, TestClient, fake_resolver, job_body

# Pairs per test; METRO_RACE_TRIES=200 for the operator's probe size.
TRIES = int(os.environ.get("METRO_RACE_TRIES", "40"))
AT_ONCE = 8  # pairs in flight together


@pytest.fixture(scope="module")
def sqlite_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    root = tmp_path_factory.mktemp("sqlite-lifecycle")
    url = f"sqlite:///{root / 'metro.db'}"
    upgrade(url)
    settings = Settings(
        database_url=url,
        broker_url="redis://127.0.0.1:6379/0",
        artifacts_uri=str(root / "artifacts"),
        upload_dir=root / "uploads",
        _env_file=None,  # type: ignore[call-arg]
    )
    application = create_app(settings)
    application.state.resolver = fake_resolver
    application.state.job_queue = FakeJobQueue(application.state.sessionmaker)
    with TestClient(application):  # runs the lifespan once
        yield application


@pytest.fixture(params=["postgresql", "sqlite"])
def backend(request: pytest.FixtureRequest, app: Any) -> Any:
    return app if request.param == "postgresql" else request.getfixturevalue("sqlite_app")


def _key(application: Any) -> dict[str, str]:
    with application.state.sessionmaker() as session:
        key = create_api_key(session, f"race-{uuid.uuid4().hex[:8]}")
    return {"Authorization": f"Bearer {key}"}


def _bytes_for(tag: str) -> bytes:
    # Distinct bytes per tag (so pairs do not share objects), all loadable with label y.
    seed = int.from_bytes(tag.encode()[-4:], "big") % 97
    rows = "".join(f"{i},{(i * seed) % 11},{i % 2}\n" for i in range(24))
    return f"a,b,y\n{rows}{seed},{seed},1\n".encode()


async def _upload(
    client: httpx.AsyncClient, headers: dict[str, str], content: bytes
) -> httpx.Response:
    return await client.post(
        "/v1/datasets",
        files={"file": ("train.csv", content, "text/csv")},
        data={"label_column": "y"},
        headers=headers,
    )


def _bytes_of(application: Any, dataset_id: str) -> bool:
    with application.state.sessionmaker() as session:
        row = session.get(Dataset, uuid.UUID(dataset_id))
        assert row is not None
        return UploadStore.exists(row.storage_path)


def _run(application: Any, pair: Any) -> list[tuple[int, int, str]]:
    """Run ``pair(client, headers, i)`` for TRIES values of i, AT_ONCE at a time."""

    async def main() -> list[tuple[int, int, str]]:
        transport = httpx.ASGITransport(app=application)
        headers = _key(application)
        results: list[tuple[int, int, str]] = []
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            for start in range(0, TRIES, AT_ONCE):
                batch = range(start, min(start + AT_ONCE, TRIES))
                results += await asyncio.gather(*(pair(client, headers, i) for i in batch))
        return results

    return asyncio.run(main())


def test_submit_and_delete_at_once(backend):
    tag = uuid.uuid4().hex

    async def pair(client: httpx.AsyncClient, headers: dict[str, str], i: int):
        up = await _upload(client, headers, _bytes_for(f"{tag}-{i}"))
        assert up.status_code == 201, up.text
        uri, ident = up.json()["uri"], up.json()["id"]
        body = job_body(dataset={"uri": uri, "label_column": "y"})
        submit, delete = await asyncio.gather(
            client.post("/v1/jobs", json=body, headers=headers),
            client.delete(f"/v1/datasets/{ident}", headers=headers),
        )
        return submit.status_code, delete.status_code, ident

    results = _run(backend, pair)
    outcomes = Counter((s, d) for s, d, _ in results)
    # Either the job came first (the delete is refused: a queued job reads the dataset) or the
    # delete did (the job is refused like any unknown dataset). Nothing else, never a 500.
    assert set(outcomes) <= {(201, 409), (422, 204)}, outcomes
    print(f"\n(submit, delete) outcomes over {TRIES} pairs: {dict(outcomes)}")
    for s, _, ident in results:
        if s == 201:
            assert _bytes_of(backend, ident)


def test_same_bytes_uploaded_while_the_only_holder_is_deleted(backend):
    tag = uuid.uuid4().hex

    async def pair(client: httpx.AsyncClient, headers: dict[str, str], i: int):
        content = _bytes_for(f"{tag}-{i}")
        first = await _upload(client, headers, content)
        assert first.status_code == 201, first.text
        again, delete = await asyncio.gather(
            _upload(client, headers, content),
            client.delete(f"/v1/datasets/{first.json()['id']}", headers=headers),
        )
        return again.status_code, delete.status_code, again.json().get("id", "")

    results = _run(backend, pair)
    assert Counter((u, d) for u, d, _ in results) == {(201, 204): TRIES}
    lost = [ident for _, _, ident in results if not _bytes_of(backend, ident)]
    assert lost == []  # every dataset the service said it stored has its bytes


def test_deleting_one_of_two_holders_keeps_the_bytes(client, tenant):
    content = _bytes_for(uuid.uuid4().hex)
    ids = []
    for _ in range(2):
        r = client.post(
            "/v1/datasets",
            files={"file": ("train.csv", content, "text/csv")},
            headers=tenant.headers,
        )
        assert r.status_code == 201, r.text
        ids.append(r.json()["id"])
    assert client.delete(f"/v1/datasets/{ids[0]}", headers=tenant.headers).status_code == 204
    app = client.app
    assert _bytes_of(app, ids[1])
    assert client.delete(f"/v1/datasets/{ids[1]}", headers=tenant.headers).status_code == 204
    location = Path(app.state.settings.upload_dir) / str(tenant.id)
    assert not any(location.glob("*.csv"))


def test_a_delete_that_cannot_remove_the_bytes_never_leaves_a_dataset_without_them(
    client, tenant, monkeypatch
):
    """The dataset's row goes in a transaction of its own, the bytes after it: the bytes were
    removed before the commit, and a commit that then failed (a dropped connection) left a
    dataset, answering 200 and accepting jobs, whose bytes were gone. Now a failure after the
    row's commit leaves only bytes no dataset names, which the next upload of them reuses."""
    content = _bytes_for(uuid.uuid4().hex)

    def upload() -> str:
        r = client.post(
            "/v1/datasets", files={"file": ("train.csv", content, "text/csv")},
            headers=tenant.headers,
        )  # fmt: skip
        assert r.status_code == 201, r.text
        return str(r.json()["id"])

    first = upload()
    with client.app.state.sessionmaker() as session:
        row = session.get(Dataset, uuid.UUID(first))
        assert row is not None
        location = row.storage_path

    def broken(location: str) -> None:
        raise OSError("the store is down")

    monkeypatch.setattr(UploadStore, "remove", staticmethod(broken))
    assert client.delete(f"/v1/datasets/{first}", headers=tenant.headers).status_code == 204
    assert client.get(f"/v1/datasets/{first}", headers=tenant.headers).status_code == 404
    assert UploadStore.exists(location)  # left over, not lost
    monkeypatch.undo()
    second = upload()  # the same bytes: stored under the same location, still whole
    assert _bytes_of(client.app, second)
    assert client.delete(f"/v1/datasets/{second}", headers=tenant.headers).status_code == 204
    assert not UploadStore.exists(location)


def _lost_answer(session: Any, dataset: Dataset) -> Dataset:
    """crud.add_dataset whose COMMIT reached the database but whose answer did not."""
    session.add(dataset)
    session.commit()
    raise sqlalchemy.exc.OperationalError("COMMIT", {}, Exception("connection closed"))


def _refused(session: Any, dataset: Dataset) -> Dataset:
    """crud.add_dataset whose transaction failed before any commit."""
    session.add(dataset)
    session.flush()
    raise sqlalchemy.exc.OperationalError("INSERT", {}, Exception("connection closed"))


@pytest.mark.parametrize("add", [_lost_answer, _refused], ids=["committed", "not-committed"])
def test_an_upload_whose_row_fails_removes_only_bytes_no_dataset_holds(
    client, tenant, monkeypatch, add
):
    """The upload's new bytes were removed whenever adding its row raised, even where the row
    had been committed and only the answer was lost: that dataset then listed, counted against
    the quota and accepted jobs, with its bytes gone. They are now removed only where no
    dataset holds them."""
    content = _bytes_for(uuid.uuid4().hex)
    monkeypatch.setattr(crud_datasets, "add_dataset", add)
    r = client.post(
        "/v1/datasets", files={"file": ("train.csv", content, "text/csv")},
        data={"label_column": "y"}, headers=tenant.headers,
    )  # fmt: skip
    assert r.status_code == 503, r.text
    monkeypatch.undo()
    items = client.get("/v1/datasets", headers=tenant.headers).json()["items"]
    stored = Path(client.app.state.settings.upload_dir) / str(tenant.id)
    if add is _lost_answer:
        assert len(items) == 1 and _bytes_of(client.app, items[0]["id"])
    else:
        assert items == [] and not any(stored.glob("*.csv"))  # no row, no bytes left behind


# -- tenant-wide limits: counted one request at a time --------------------------------------------


def _at_once(application: Any, headers: dict[str, str], requests: list[Any]) -> list[int]:
    """The status codes of ``requests`` (each ``client -> awaitable response``), all at once."""

    async def main() -> list[int]:
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            answers = await asyncio.gather(*(request(client) for request in requests))
        return [a.status_code for a in answers]

    return asyncio.run(main())


def test_uploads_at_once_stay_within_the_storage_quota(backend, monkeypatch):
    # Each upload counted the tenant's bytes before any of them was recorded, so all of them
    # fit in the room left: six different files were stored against a quota for one.
    headers = _key(backend)
    tag = uuid.uuid4().hex
    bodies = [_bytes_for(f"{tag}-{i}") for i in range(AT_ONCE)]
    quota = max(map(len, bodies)) + 10  # room for any one of them, not two
    monkeypatch.setattr(backend.state.settings, "max_storage_bytes_per_tenant", quota)
    codes = _at_once(backend, headers, [lambda c, b=b: _upload(c, headers, b) for b in bodies])
    assert sorted(codes) == [201] + [413] * (AT_ONCE - 1), codes
    listing: list[Any] = []

    async def listed(client: httpx.AsyncClient) -> httpx.Response:
        listing.append(await client.get("/v1/datasets", headers=headers))
        return listing[-1]

    _at_once(backend, headers, [listed])
    items = listing[0].json()["items"]
    assert len(items) == 1 and items[0]["size_bytes"] <= quota


def test_submissions_at_once_stay_within_the_active_job_limit(backend, monkeypatch):
    # On the embedded SQLite the count ran before the transaction took the write lock: with a
    # limit of 1, half of eight submissions at once were accepted.
    headers = _key(backend)
    monkeypatch.setattr(backend.state.settings, "max_active_jobs_per_tenant", 1)

    def submit(client: httpx.AsyncClient) -> Any:
        return client.post("/v1/jobs", json=job_body(), headers=headers)

    codes = _at_once(backend, headers, [submit] * AT_ONCE)
    assert sorted(codes) == [201] + [429] * (AT_ONCE - 1), codes


def test_the_tenant_lock_holds_off_a_second_request_until_commit(backend):
    """What makes the two tests above hold by construction rather than by timing: while one
    transaction holds a tenant's lock, another cannot take it (on SQLite: the write lock, which
    a read under FOR UPDATE never took there)."""
    from sqlalchemy import text
    from sqlalchemy.exc import OperationalError

    from service.crud.datasets import lock_stored_object
    from service.crud.tenants import authenticate_hash, lock_tenant
    from service.security import hash_api_key

    key = _key(backend)["Authorization"].removeprefix("Bearer ")
    make = backend.state.sessionmaker
    with make() as first, make() as second:
        principal = authenticate_hash(first, hash_api_key(key))
        assert principal is not None
        lock_tenant(first, principal.tenant_id)
        sqlite = second.get_bind().dialect.name == "sqlite"
        # Wait 0.2 s, not the default 5 s (SET LOCAL ends with the transaction; the pragma is
        # the pooled connection's, so it is put back).
        second.execute(
            text("PRAGMA busy_timeout = 200" if sqlite else "SET LOCAL lock_timeout = 200")
        )
        try:
            with pytest.raises(OperationalError):
                lock_tenant(second, principal.tenant_id)
        finally:
            second.rollback()
            if sqlite:
                second.execute(text("PRAGMA busy_timeout = 5000"))
        if not sqlite:
            # A row inserted meanwhile for the tenant checks its foreign key (FOR KEY SHARE on
            # the tenant) without waiting: FOR UPDATE made it wait, and a delete of a dataset
            # then deadlocked with an upload of the same bytes (a 503, once in 40 races).
            second.execute(text("SET LOCAL lock_timeout = 200"))
            lock_stored_object(
                second, tenant_id=principal.tenant_id, location=f"/nowhere/{uuid.uuid4()}",
                sha256="0" * 64, size_bytes=1,
            )  # fmt: skip
            second.rollback()
        first.commit()
        lock_tenant(second, principal.tenant_id)  # free once the first has committed
        second.rollback()
