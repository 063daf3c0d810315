"""DELETE /v1/jobs/{id} and DELETE /v1/models/{id}: a tenant removes what it trained, rows and
files, and reaches nothing of another tenant's (a forbidden delete answers as a missing one).
Before, neither existed: a tenant could delete its uploads but never its jobs or models."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import func, select

from core.db.models import Job, LambdaStep, Model
from metro._testing import write_linear_artifact
from service.api.caches import ModelRefCache
from service.crud.jobs import record_lambda_step
from service.crud.models import register_model


def _finished_job_with_a_model(app, service_dirs, submit, set_job, tenant) -> tuple[str, str]:
    """A succeeded job with a trace step and a model whose files lie where a worker puts them."""
    job = submit(tenant)
    set_job(job["id"], state="succeeded", progress=1.0)
    rel = f"jobs/{job['id']}/model/1"
    _, digest, manifest = write_linear_artifact(service_dirs["artifacts"] / rel, [1.0, 2.0], 0.0)
    (service_dirs["artifacts"] / f"jobs/{job['id']}/fits").mkdir(parents=True)
    with app.state.sessionmaker() as session:
        assert record_lambda_step(session, uuid.UUID(job["id"]), repeat=0, step=0, lambda_=0.5)
        session.commit()
        model = register_model(
            session, tenant_id=tenant.id, job_id=uuid.UUID(job["id"]), artifact_uri=rel,
            sha256=digest, manifest=manifest,
        )  # fmt: skip
    return job["id"], str(model.id)


def _count(app, table: Any, job_id: str) -> int:
    with app.state.sessionmaker() as session:
        return session.scalar(
            select(func.count()).select_from(table).where(table.job_id == uuid.UUID(job_id))
        )


def test_a_model_is_deleted_rows_files_and_predictions(client, tenant, other_tenant, add_model):
    model = add_model(tenant, weight=[1.0, 1.0])
    url = f"/v1/models/{model['id']}"
    predict = {"instances": [[1.0, 2.0]]}
    assert client.post(f"{url}/predict", json=predict, headers=tenant.headers).status_code == 200
    # Another tenant: answered as for a model that does not exist, and nothing is removed.
    other = client.delete(url, headers=other_tenant.headers)
    missing = client.delete(f"/v1/models/{uuid.uuid4()}", headers=other_tenant.headers)
    assert other.status_code == missing.status_code == 404
    assert other.json()["detail"].replace(model["id"], "X") == missing.json()["detail"].replace(
        missing.json()["detail"].split()[1], "X"
    )
    assert client.get(url, headers=tenant.headers).status_code == 200
    assert client.delete(url, headers=tenant.headers).status_code == 204
    assert not model["dir"].exists()
    for r in (
        client.get(url, headers=tenant.headers),
        client.get(f"{url}/download", headers=tenant.headers),
        client.post(f"{url}/predict", json=predict, headers=tenant.headers),  # cached before
        client.delete(url, headers=tenant.headers),
    ):
        assert r.status_code == 404, r.text


def test_a_finished_job_is_deleted_with_all_it_produced(
    app, client, tenant, other_tenant, submit, set_job, service_dirs
):
    job_id, model_id = _finished_job_with_a_model(app, service_dirs, submit, set_job, tenant)
    folder = service_dirs["artifacts"] / f"jobs/{job_id}"
    assert client.delete(f"/v1/jobs/{job_id}", headers=other_tenant.headers).status_code == 404
    assert _count(app, LambdaStep, job_id) == 1 and folder.exists()
    assert client.delete(f"/v1/jobs/{job_id}", headers=tenant.headers).status_code == 204
    assert client.get(f"/v1/jobs/{job_id}", headers=tenant.headers).status_code == 404
    assert client.get(f"/v1/jobs/{job_id}/trace", headers=tenant.headers).status_code == 404
    assert client.get(f"/v1/models/{model_id}", headers=tenant.headers).status_code == 404
    assert _count(app, LambdaStep, job_id) == _count(app, Model, job_id) == 0
    assert not folder.exists()  # its models and its fits
    assert client.delete(f"/v1/jobs/{job_id}", headers=tenant.headers).status_code == 404


def test_a_job_not_finished_is_409_until_cancelled(app, client, tenant, submit, set_job):
    queued = submit(tenant)
    url = f"/v1/jobs/{queued['id']}"
    r = client.delete(url, headers=tenant.headers)
    assert r.status_code == 409
    assert r.json()["detail"].startswith(f"job {queued['id']} is queued: cancel it first")
    running = submit(tenant)
    set_job(running["id"], state="running")
    assert client.delete(f"/v1/jobs/{running['id']}", headers=tenant.headers).status_code == 409
    with app.state.sessionmaker() as session:
        assert session.get(Job, uuid.UUID(queued["id"])) is not None
    assert client.post(f"{url}/cancel", headers=tenant.headers).json()["state"] == "cancelled"
    assert client.delete(url, headers=tenant.headers).status_code == 204


def test_the_model_row_cache_forgets_after_its_ttl():
    """Another API process's cache: a deleted model answers there this long at most."""
    from service.api.caches import ModelRef

    now = [0.0]
    cache = ModelRefCache(8, ttl_seconds=5.0, timer=lambda: now[0])
    tenant, ref = (
        uuid.uuid4(),
        ModelRef(id=uuid.uuid4(), sha256="0" * 64, artifact_uri="m", manifest={}),
    )
    cache.put(tenant, ref)
    assert cache.get(tenant, ref.id) == ref
    now[0] = 5.1
    assert cache.get(tenant, ref.id) is None
    off = ModelRefCache(8, ttl_seconds=0)
    off.put(tenant, ref)
    assert off.get(tenant, ref.id) is None
