"""worker.datasets: turning a job's dataset URI into data, and the reasons a job gets when that
fails."""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path
from types import SimpleNamespace

import fsspec
import pytest

from core.config import Settings
from metro.datasets import ClassCountError, DataError
from worker.datasets import _cache, load_job_dataset, load_job_multi_target


def test_s3_dataset_without_credentials_fails_with_a_clear_reason(monkeypatch, tmp_path):
    """Was "internal error (NoCredentialsError)": a reason that names what to set instead."""
    for name in (
        "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
    ):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance role to look for
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # never reached
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()  # not one made for another test's endpoint
    bucket = f"metro-{uuid.uuid4().hex[:12]}"
    settings = Settings(_env_file=None, data_uri_prefixes=[f"s3://{bucket}/"])  # type: ignore[call-arg]
    ctx = SimpleNamespace(settings=settings)
    uri = f"s3://{bucket}/train.csv"
    with pytest.raises(DataError, match="the workers have no S3 credentials") as info:
        load_job_dataset(ctx, uuid.uuid4(), {"uri": uri, "label_column": "y"})  # type: ignore[arg-type]
    assert uri in str(info.value)


def _stored_upload(
    tmp_path: Path, content: bytes, fmt: str, *, on: str = "disk"
) -> tuple[SimpleNamespace, uuid.UUID, str, str]:
    """An upload's bytes kept as the API keeps them (on the shared disk, or in an object store)
    and its dataset row: the worker's context, the tenant, the dataset's URI, where it is."""
    from core.db.migrate import upgrade
    from core.db.models import Dataset as DatasetRow
    from core.db.models import Tenant
    from core.db.session import make_engine, make_sessionmaker

    url = f"sqlite:///{tmp_path / 'metro.db'}"
    upgrade(url)
    sessions = make_sessionmaker(make_engine(url))
    tenant_id = uuid.uuid4()
    sha256 = hashlib.sha256(content).hexdigest()
    if on == "disk":
        location = str(tmp_path / "uploads" / str(tenant_id) / f"{sha256}{fmt}")
        Path(location).parent.mkdir(parents=True)
    else:
        location = f"memory://metro-{uuid.uuid4().hex}/{tenant_id}/{sha256}{fmt}"
    fs, path = fsspec.core.url_to_fs(location)
    fs.pipe_file(path, content)
    with sessions() as session:
        session.add(Tenant(id=tenant_id, name="t"))
        session.flush()
        row = DatasetRow(
            tenant_id=tenant_id, filename=f"d{fmt}", format=fmt, size_bytes=len(content),
            sha256=sha256, storage_path=location,
        )  # fmt: skip
        session.add(row)
        session.commit()
        uri = row.uri
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None, database_url=url, upload_dir=tmp_path / "uploads"
    )
    return SimpleNamespace(settings=settings, session=sessions), tenant_id, uri, location


def test_a_failure_names_the_dataset_uri_never_a_server_path(tmp_path):
    """Was "could not read /.../uploads/<tenant>/<sha>.npz as NPZ ...": the store's path, with
    the tenant's id, in a reason the tenant reads."""
    ctx, tenant_id, uri, _ = _stored_upload(tmp_path, b"PK\x03\x04 not really a zip", ".npz")
    with pytest.raises(DataError) as info:
        load_job_dataset(ctx, tenant_id, {"uri": uri, "label_column": "y"})  # type: ignore[arg-type]
    message = str(info.value)
    assert uri in message
    assert str(tmp_path) not in message and str(tenant_id) not in message, message


def test_a_binary_job_on_three_classes_fails_with_the_librarys_words(tmp_path):
    """The re-raise that names the URI built the error anew from its message alone, and
    ClassCountError needs its count: the job failed with the TypeError's words."""
    three = b"a,kind\n" + b"".join(f"{i},{'abc'[i % 3]}\n".encode() for i in range(30))
    ctx, tenant_id, uri, _ = _stored_upload(tmp_path, three, ".csv")
    with pytest.raises(ClassCountError) as info:
        load_job_dataset(ctx, tenant_id, {"uri": uri, "label_column": "kind"})  # type: ignore[arg-type]
    assert info.value.n_classes == 3
    assert str(info.value).startswith("labels must have exactly two classes; found 3 classes")
    assert str(tmp_path) not in str(info.value)


@pytest.mark.parametrize("averaged", [False, True])
def test_a_label_value_with_a_nul_fails_the_job_before_training(tmp_path, averaged):
    """The trace, the choices and the manifest store label values, which PostgreSQL cannot
    hold with a NUL: the job trained in full, then failed to record it three times over, "a
    database, network or storage error"."""
    labels = ("a\x00x", "b", "c") if averaged else ("a\x00x", "b")
    rows = "".join(f"{i},{i % 5},{labels[i % len(labels)]}\n" for i in range(30))
    ctx, tenant_id, uri, _ = _stored_upload(tmp_path, f"f1,f2,lab\n{rows}".encode(), ".csv")
    load = load_job_multi_target if averaged else load_job_dataset
    dataset = {"uri": uri, "label_column": "lab", **({} if averaged else {"positive_label": "b"})}
    with pytest.raises(DataError, match=r"^label value 'a\\x00x' has a NUL character; label "):
        load(ctx, tenant_id, dataset)  # type: ignore[arg-type]


CSV = b"a,b,y\n" + b"".join(f"{i},{i * 3 % 7},{i % 2}\n".encode() for i in range(40))


@pytest.mark.parametrize("where", ["disk", "object-store"])
@pytest.mark.parametrize(
    "damage", [CSV[: CSV.index(b"\n", len(CSV) // 2) + 1], CSV.replace(b"a,b", b"b,a")],
    ids=["truncated", "same-size"],
)  # fmt: skip
def test_a_job_never_trains_on_stored_bytes_other_than_the_upload(tmp_path, where, damage):
    """A stored upload cut short (a crash, a partial restore) was read as it was: the job
    trained on 21 of its dataset's 40 rows and succeeded. Now its size and SHA-256 are checked
    against the dataset's record first, on a shared disk and on an object store alike."""
    ctx, tenant_id, uri, location = _stored_upload(tmp_path, CSV, ".csv", on=where)
    fs, path = fsspec.core.url_to_fs(location)
    spec = {"uri": uri, "label_column": "y"}
    assert load_job_dataset(ctx, tenant_id, spec).n_samples == 40  # type: ignore[arg-type]
    _cache.clear()
    fs.pipe_file(path, damage)
    with pytest.raises(DataError, match=r"not the ones uploaded.*upload the file again") as info:
        load_job_dataset(ctx, tenant_id, spec)  # type: ignore[arg-type]
    assert uri in str(info.value) and str(tmp_path) not in str(info.value)
