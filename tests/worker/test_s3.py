"""The artifact store on S3 (``METRO_ARTIFACTS_URI=s3://...``), against a real S3-compatible
server started here: moto in server mode on a free port."""

from __future__ import annotations

import subprocess
import sys
import urllib.request
import uuid

# s3fs is a runtime dependency and moto a test one: both are installed by `make test`.
import moto  # noqa: F401
import pytest
import s3fs

from tests.worker.conftest import SMALL_JOB, free_port, wait_until


@pytest.fixture
def s3_server(monkeypatch, tmp_path):
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    endpoint = f"http://127.0.0.1:{port}"

    def up() -> bool:
        try:
            urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1)
            return True
        except OSError:
            return False

    try:
        wait_until(up, 30, "the S3 server")
        env = {
            "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": endpoint,
        }  # fmt: skip
        for key, value in env.items():  # this process (the API) reads models from S3 too
            monkeypatch.setenv(key, value)
        # fsspec keeps one filesystem per set of arguments, with the endpoint it was made with;
        # each test has a server of its own on another port.
        s3fs.S3FileSystem.clear_instance_cache()
        import fsspec

        fs = fsspec.filesystem("s3", skip_instance_cache=True)
        fs.mkdir("metro-models")
        yield env, fs
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_models_and_fits_go_to_s3(make_cluster, s3_server):
    env, fs = s3_server
    cluster = make_cluster(artifacts_uri="s3://metro-models/prod", extra_env=env)
    cluster.start_worker("s3")
    job_id = cluster.submit(
        {**SMALL_JOB, "search": {"strategy": "grid", "n_lambdas": 4, "shift": "minimal"}}
    )
    job = cluster.wait_state(job_id)
    assert job["state"] == "succeeded", job

    (model,) = cluster.models(job_id)
    assert model.artifact_uri == f"jobs/{job_id}/model/1"  # its first attempt's folder
    fs.invalidate_cache()
    files = sorted(p.rsplit("/", 1)[1] for p in fs.ls(f"metro-models/prod/{model.artifact_uri}"))
    assert files == ["manifest.json", "model.onnx", "model.safetensors"]

    def fits_removed() -> bool:  # the search's intermediate fits go once the job has succeeded
        fs.invalidate_cache()
        return not fs.exists(f"metro-models/prod/jobs/{job_id}/fits")

    wait_until(fits_removed, 15, "the fits to be cleaned up")

    # The API reads the model back from S3: manifest, download, prediction.
    r = cluster.client.get(f"/v1/models/{model.id}/download", headers=cluster.headers)
    assert r.status_code == 200 and r.headers["etag"] == f'"{model.sha256}"'
    from metro.datasets import load_dataset

    X = load_dataset("builtin://breast_cancer").X[:5].tolist()
    r = cluster.client.post(
        f"/v1/models/{model.id}/predict", json={"instances": X}, headers=cluster.headers
    )
    assert r.status_code == 200, r.text
    assert len(r.json()["margins"]) == 5


def test_api_and_worker_share_no_disk(make_cluster, s3_server, tmp_path):
    """Uploads go to the object store with the models: the API's upload directory is gone and the
    worker has a directory of its own, and a job on the upload still runs."""
    import shutil

    env, fs = s3_server
    worker_dir = tmp_path / "worker-uploads"
    cluster = make_cluster(
        artifacts_uri="s3://metro-models/prod",
        extra_env={**env, "METRO_UPLOAD_DIR": str(worker_dir)},
    )
    rows = "\n".join(f"{i / 10},{(i * 7) % 5 / 4},{int(i % 3 == 0)}" for i in range(120))
    content = f"a,b,y\n{rows}\n".encode()
    r = cluster.client.post(
        "/v1/datasets",
        files={"file": ("train.csv", content, "text/csv")},
        data={"label_column": "y"},
        headers=cluster.headers,
    )
    assert r.status_code == 201, r.text
    dataset = r.json()
    fs.invalidate_cache()
    stored = fs.find("metro-models/prod/uploads")
    assert [p.rsplit("/", 1)[1] for p in stored] == [f"{dataset['sha256']}.csv"]
    shutil.rmtree(cluster.settings.upload_dir)  # nothing of the API's disk is left to read

    cluster.start_worker("elsewhere")
    job_id = cluster.submit({**SMALL_JOB, "dataset": {"uri": dataset["uri"], "label_column": "y"}})
    job = cluster.wait_state(job_id, timeout=90)
    assert job["state"] == "succeeded", job
    assert not worker_dir.exists() or not any(p.is_file() for p in worker_dir.rglob("*"))


def test_no_tenant_reads_another_tenants_upload_or_models_through_s3(make_cluster, s3_server):
    """Even with the whole bucket allowed for datasets, the service's own prefixes (uploads,
    models, fits) are not readable through an s3:// URI, in any spelling, at submission and
    again on the worker; an allowed object is, and a refusal reads like a missing object."""
    from types import SimpleNamespace

    from sqlalchemy import select

    from core.datasets.locations import not_readable
    from core.db.models import Tenant
    from metro.datasets import DataError
    from service.admin import create_api_key
    from worker.datasets import load_job_dataset

    env, fs = s3_server
    cluster = make_cluster(
        artifacts_uri="s3://metro-models/prod",
        data_uri_prefixes=["s3://metro-models/"],
        extra_env=env,
    )
    rows = "\n".join(f"{i / 10},{(i * 7) % 5 / 4},{int(i % 3 == 0)}" for i in range(60))
    content = f"a,b,y\n{rows}\n".encode()
    r = cluster.client.post(
        "/v1/datasets",
        files={"file": ("train.csv", content, "text/csv")},
        data={"label_column": "y"},
        headers=cluster.headers,
    )
    assert r.status_code == 201, r.text
    (stored,) = fs.find("metro-models/prod/uploads")
    a_id = stored.split("/")[-2]
    name = stored.rsplit("/", 1)[1]
    with cluster.app.state.sessionmaker() as session:
        b_key = create_api_key(session, "tenant-b")
        b_id = session.scalars(select(Tenant.id).where(Tenant.name == "tenant-b")).one()
    b_headers = {"Authorization": f"Bearer {b_key}"}

    forms = [
        f"s3://metro-models/prod/uploads/{a_id}/{name}",
        f"S3://metro-models/prod/uploads/{a_id}/{name}",
        f"s3://METRO-MODELS/prod/uploads/{a_id}/{name}",
        f"s3://metro-models/PROD/uploads/{a_id}/{name}",
        f"s3://metro-models//prod/uploads/{a_id}/{name}",
        f"s3://metro-models/prod//uploads/{a_id}/{name}",
        f"s3://metro-models/x/../prod/uploads/{a_id}/{name}",
        f"s3://metro-models/%70rod/uploads/{a_id}/{name}",
        f"s3://metro-models/prod/uploads/{a_id}/{'0' * 64}.csv",  # a wrong digest: same answer
        "s3://metro-models/prod/jobs/00000000-0000-0000-0000-000000000000/model/model.onnx",
    ]
    messages = set()
    for uri in forms:
        body = {"metric": {"preset": "f1"}, "dataset": {"uri": uri, "label_column": "y"}}
        r = cluster.client.post("/v1/jobs", json=body, headers=b_headers)
        assert r.status_code == 422, (uri, r.text)
        (error,) = [e for e in r.json()["errors"] if e["loc"] == ["body", "dataset", "uri"]]
        messages.add(error["msg"].replace(uri, "URI"))
    assert messages == {not_readable("URI")}

    # The worker checks again, with its own settings (a spec stored before, or elsewhere).
    ctx = SimpleNamespace(settings=cluster.settings)
    upload = f"s3://metro-models/prod/uploads/{a_id}/{name}"
    for tenant in (b_id, uuid.UUID(a_id)):
        with pytest.raises(DataError) as info:
            load_job_dataset(ctx, tenant, {"uri": upload, "label_column": "y"})  # type: ignore[arg-type]
        assert str(info.value) == not_readable(upload)

    # An object under the allowed prefix is read; the bytes are the same as A's upload.
    fs.pipe("metro-models/shared/train.csv", content)
    shared = load_job_dataset(
        ctx,  # type: ignore[arg-type]
        b_id,
        {"uri": "s3://metro-models/shared/train.csv", "label_column": "y"},
    )
    assert shared.n_samples == 60
