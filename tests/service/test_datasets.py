"""POST/GET /v1/datasets, and jobs that use an uploaded dataset."""

from __future__ import annotations

import hashlib
import io
import json
import uuid
import zlib

import numpy as np
import pytest

from tests.service.conftest import job_body, upload

CSV = b"a,b,label\n1.0,2.0,yes\n3.0,4.0,no\n5.0,6.0,yes\n"


def _upload(client, tenant, content=CSV, filename="train.csv", **form):
    return upload(client, tenant, content, filename, **form)


def test_upload_records_sha256_shape_and_returns_uri(client, tenant, service_dirs):
    r = _upload(client, tenant)
    assert r.status_code == 201, r.text
    ds = r.json()
    assert ds["uri"] == f"dataset://{ds['id']}"
    assert ds["sha256"] == hashlib.sha256(CSV).hexdigest()
    assert ds["size_bytes"] == len(CSV)
    assert (ds["n_rows"], ds["n_columns"], ds["columns"]) == (3, 3, ["a", "b", "label"])
    assert ds["format"] == ".csv" and ds["filename"] == "train.csv"
    assert "storage_path" not in ds and str(service_dirs["uploads"]) not in r.text
    assert r.headers["location"].endswith(f"/v1/datasets/{ds['id']}")
    got = client.get(r.headers["location"], headers=tenant.headers)
    assert got.status_code == 200 and got.json() == ds


def test_upload_validated_with_metro_when_label_column_given(client, tenant):
    r = _upload(client, tenant, label_column="label", positive_label="yes")
    assert r.status_code == 201, r.text
    # The file's columns, the label's included: what "columns" lists (was 2 beside 3 names).
    assert r.json()["n_rows"] == 3 and r.json()["n_columns"] == 3 == len(r.json()["columns"])
    bad = _upload(client, tenant, label_column="nope")
    assert bad.status_code == 422
    # The name is at fault, not the file (the same mistake in a job is at dataset.label_column).
    assert bad.json()["errors"][0]["loc"] == ["body", "label_column"]
    assert "label column 'nope' not found" in bad.json()["errors"][0]["msg"]
    assert "/" not in bad.json()["errors"][0]["msg"].split("columns are")[0]  # no internal path


def test_upload_parquet_and_npz(client, tenant):
    import pandas as pd

    buf = io.BytesIO()
    pd.DataFrame({"x1": [1.0, 2.0], "y": [0, 1]}).to_parquet(buf)
    r = _upload(client, tenant, buf.getvalue(), "d.parquet")
    assert r.status_code == 201, r.text
    assert r.json()["n_rows"] == 2 and r.json()["columns"] == ["x1", "y"]
    buf = io.BytesIO()
    np.savez(buf, X=np.zeros((5, 4)), y=np.array([0, 1, 0, 1, 1]))
    r = _upload(client, tenant, buf.getvalue(), "d.npz")
    assert r.status_code == 201, r.text
    assert (r.json()["n_rows"], r.json()["n_columns"], r.json()["columns"]) == (5, 4, None)


@pytest.mark.parametrize(
    ("content", "filename", "status"),
    [
        (b"MZ\x90\x00", "evil.exe", 415),
        (b"", "empty.csv", 422),
        (b"\x00\x01not-a-parquet", "x.parquet", 422),
        (b"not a zip", "x.npz", 422),
    ],
)
def test_upload_refusals(client, tenant, content, filename, status):
    r = _upload(client, tenant, content, filename)
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    assert client.get("/v1/datasets", headers=tenant.headers).json()["items"] == []


def test_upload_over_the_cap_is_413_and_leaves_nothing(client, tenant, settings, service_dirs):
    big = b"a,y\n" + b"1,0\n" * (settings.max_upload_bytes // 4 + 10)
    r = _upload(client, tenant, big)
    assert r.status_code == 413
    assert r.json()["status"] == 413
    tenant_dir = service_dirs["uploads"] / str(tenant.id)
    assert not tenant_dir.exists() or list(tenant_dir.iterdir()) == []


@pytest.mark.parametrize("where", ["spool", "inodes", "staging", "store"])
def test_an_upload_to_a_full_disk_is_507_and_leaves_nothing(
    client, tenant, service_dirs, monkeypatch, where
):
    """A full upload disk answered 500 "an unexpected error occurred", which a client cannot
    tell from a bug: a 507 saying the server's storage is full, and nothing kept. A full
    temporary directory, where the body spools as it is read, answered 400 "error parsing the
    body"; a file system without a free inode for the staged file, a 500."""
    import errno
    import tempfile

    from starlette import formparsers

    from core.datasets import storage, uploads

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    class FullSpool(tempfile.SpooledTemporaryFile):
        write = full

    if where == "spool":  # the body spooled to TMPDIR as the form is parsed
        monkeypatch.setattr(formparsers, "SpooledTemporaryFile", FullSpool)
    elif where == "inodes":  # the staged file cannot be made
        monkeypatch.setattr(uploads.tempfile, "mkstemp", full)
    elif where == "staging":  # writing the bytes as they arrive
        monkeypatch.setattr(uploads, "fsync_file", full)
    else:  # moving them into the store
        monkeypatch.setattr(storage.UploadStore, "keep", full)
    before = {f for f in service_dirs["uploads"].rglob("*") if f.is_file()}
    listed = client.get("/v1/datasets", headers=tenant.headers).json()["items"]
    r = _upload(client, tenant, b"a,y\n1,0\n2,1\n")
    assert r.status_code == 507, r.text
    body = r.json()
    assert body["type"].endswith("/insufficient-storage") and "storage is full" in body["detail"]
    assert "/" not in body["detail"].split("(")[0]  # no server path
    assert client.get("/v1/datasets", headers=tenant.headers).json()["items"] == listed
    after = {f for f in service_dirs["uploads"].rglob("*") if f.is_file()}
    assert after == before  # no staged or stored bytes left


def test_upload_without_file_is_422(client, tenant):
    r = client.post("/v1/datasets", data={"label_column": "y"}, headers=tenant.headers)
    assert r.status_code == 422
    assert r.json()["title"] == "Invalid dataset"


def test_list_and_get(client, tenant):
    ids = [_upload(client, tenant).json()["id"] for _ in range(3)]
    page = client.get("/v1/datasets", params={"limit": 2}, headers=tenant.headers).json()
    assert [d["id"] for d in page["items"]] == ids[::-1][:2]
    rest = client.get(
        "/v1/datasets", params={"cursor": page["next_cursor"]}, headers=tenant.headers
    ).json()
    assert [d["id"] for d in rest["items"]] == [ids[0]] and rest["next_cursor"] is None
    assert client.get(f"/v1/datasets/{uuid.uuid4()}", headers=tenant.headers).status_code == 404


def test_job_on_an_uploaded_dataset(client, tenant):
    ds = _upload(client, tenant).json()
    r = client.post(
        "/v1/jobs",
        json=job_body(dataset={"uri": ds["uri"], "label_column": "label", "positive_label": "yes"}),
        headers=tenant.headers,
    )
    assert r.status_code == 201, r.text
    assert r.json()["dataset_uri"] == ds["uri"]
    assert r.json()["spec"]["dataset"]["positive_label"] == "yes"
    # A label column the upload does not have is refused at submission.
    r = client.post(
        "/v1/jobs",
        json=job_body(dataset={"uri": ds["uri"], "label_column": "nope"}),
        headers=tenant.headers,
    )
    assert r.status_code == 422
    assert r.json()["errors"][0]["loc"] == ["body", "dataset", "label_column"]


def test_upload_with_numeric_labels_and_a_string_positive_label(client, tenant):
    r = _upload(client, tenant, b"x,y\n0.5,1\n0.1,0\n0.9,1\n", label_column="y", positive_label="1")
    assert r.status_code == 201, r.text
    assert r.json()["columns"] == ["x", "y"]


# -- hostile uploads -------------------------------------------------------------------------


def _gzip_rows(n_pairs: int) -> bytes:
    """A small gzip CSV (a few KB) of ``2 * n_pairs`` rows: a decompression bomb in miniature."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"1,0\n0,1\n" * 10_000
    body = [packer.compress(b"a,y\n")]
    body += [packer.compress(block) for _ in range(n_pairs // 10_000)]
    return b"".join([*body, packer.flush()])


@pytest.mark.parametrize("label_column", [None, "y"])
def test_gzip_bomb_is_refused_at_the_row_limit(client, tenant, settings, monkeypatch, label_column):
    bomb = _gzip_rows(1_000_000)  # 2 million rows, 8 MB of text
    assert len(bomb) < settings.max_upload_bytes
    monkeypatch.setattr(settings, "max_dataset_rows", 10_000)
    form = {"label_column": label_column} if label_column else {}
    r = _upload(client, tenant, bomb, "bomb.csv.gz", **form)
    assert r.status_code == 413, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["detail"] == "dataset has at least 10001 rows, more than the limit 10000"
    assert client.get("/v1/datasets", headers=tenant.headers).json()["items"] == []


def test_gzip_bomb_is_refused_at_the_decompressed_size_limit(client, tenant, settings, monkeypatch):
    monkeypatch.setattr(settings, "max_decompressed_bytes", 1_000_000)
    r = _upload(client, tenant, _gzip_rows(1_000_000), "bomb.csv.gz", label_column="y")
    assert r.status_code == 413, r.text
    assert r.json()["detail"] == "dataset expands to more than the limit 1000000 bytes"


def test_compressed_npz_and_parquet_past_the_limits_are_413(client, tenant, settings, monkeypatch):
    import pandas as pd

    monkeypatch.setattr(settings, "max_decompressed_bytes", 1_000_000)
    monkeypatch.setattr(settings, "max_dataset_rows", 10_000)
    buf = io.BytesIO()
    np.savez_compressed(buf, X=np.zeros((200_000, 10)), y=np.arange(200_000) % 2)
    r = _upload(client, tenant, buf.getvalue(), "zeros.npz")
    assert r.status_code == 413, r.text
    assert "more than the limit 1000000 bytes" in r.json()["detail"]
    buf = io.BytesIO()
    pd.DataFrame({"a": np.zeros(50_000), "y": np.arange(50_000) % 2}).to_parquet(buf)
    r = _upload(client, tenant, buf.getvalue(), "zeros.parquet", label_column="y")
    assert r.status_code == 413, r.text
    assert r.json()["detail"] == "dataset has 50000 rows, more than the limit 10000"


def test_too_many_columns_is_413(client, tenant, settings, monkeypatch):
    monkeypatch.setattr(settings, "max_dataset_columns", 50)
    header = ",".join(f"c{i}" for i in range(100))
    r = _upload(client, tenant, f"{header}\n".encode() + b"0," * 99 + b"1\n", "wide.csv")
    assert r.status_code == 413, r.text
    assert r.json()["detail"] == "dataset has 100 columns, more than the limit 50"


@pytest.mark.parametrize("label_column", [None, "y"])
def test_duplicate_column_names_are_422_naming_them(client, tenant, label_column):
    """pandas would rename the second y to y.1, and a model trained on it sees the label."""
    content = b"a,y,y\n" + b"0.5,0,0\n1.5,1,1\n2.5,0,0\n3.5,1,1\n"
    form = {"label_column": label_column} if label_column else {}
    r = _upload(client, tenant, content, **form)
    assert r.status_code == 422, r.text
    assert r.json()["errors"] == [
        {
            "loc": ["body", "file"],
            "msg": "column names must be unique; 'y' appears more than once",
            "type": "value_error",
        }
    ]


@pytest.mark.parametrize("label_column", [None, "y"])
def test_an_index_written_with_the_table_is_422_with_or_without_a_label(
    client, tenant, label_column
):
    """Refused at upload either way: without label_column the upload was stored and every job
    on it failed in the worker."""
    content = b",a,y\n" + b"".join(f"{i},{i * 0.5},{i % 2}\n".encode() for i in range(6))
    form = {"label_column": label_column} if label_column else {}
    r = _upload(client, tenant, content, **form)
    assert r.status_code == 422, r.text
    [error] = r.json()["errors"]
    assert error["loc"] == ["body", "file"]
    assert error["msg"].startswith("column 1 has no name and holds the row numbers 0 to 5")


def test_a_column_float32_cannot_hold_apart_is_422_naming_it(client, tenant):
    """A Unix time over a few minutes: float32 (what the models compute in) rounds it to
    128-second steps, so every row read the same value and the job trained on nothing."""
    rows = [f"{1_700_000_000 + 7 * i},{i % 5},{int(i % 7 < 3)}" for i in range(40)]
    content = ("t,k,y\n" + "\n".join(rows) + "\n").encode()
    r = _upload(client, tenant, content, label_column="y")
    assert r.status_code == 422, r.text
    [error] = r.json()["errors"]
    assert error["loc"] == ["body", "file"]
    assert error["msg"].startswith("column 't' cannot be held in float32"), error["msg"]
    assert "subtract a constant near its values (its mean, 1700000136.5, say)" in error["msg"]
    shifted = "t,k,y\n" + "\n".join(f"{7 * i},{i % 5},{int(i % 7 < 3)}" for i in range(40))
    assert _upload(client, tenant, shifted.encode(), label_column="y").status_code == 201


def test_uploads_are_listed_by_their_bytes(client, tenant, other_tenant):
    """What `metro submit --idempotency-key` asks before it uploads a file again."""
    first = _upload(client, tenant).json()
    again = _upload(client, tenant, filename="again.csv").json()
    other = _upload(client, tenant, CSV + b"7,8,1\n").json()
    _upload(client, other_tenant)  # the same bytes, another tenant's
    sha = hashlib.sha256(CSV).hexdigest()
    r = client.get("/v1/datasets", params={"sha256": sha}, headers=tenant.headers)
    assert r.status_code == 200, r.text
    assert [d["id"] for d in r.json()["items"]] == [again["id"], first["id"]]
    assert other["sha256"] != sha
    r = client.get("/v1/datasets", params={"sha256": "abc"}, headers=tenant.headers)
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["query", "sha256"]


def test_nul_in_a_csv_header_is_422(client, tenant):
    r = _upload(client, tenant, b"a\x00b,y\n1,0\n2,1\n")
    assert r.status_code == 422, r.text
    assert r.json()["errors"][0]["loc"] == ["body", "file"]
    assert "NUL" in r.json()["errors"][0]["msg"]


@pytest.mark.parametrize("fields", [{}, {"label_column": "y"}])
def test_a_column_name_past_255_characters_is_422(client, tenant, fields):
    """As the upload's own fields take a name: every listing carries every column's name, and
    1,000 names of 2,540 characters made one listing of 30 datasets 76 MB."""
    long = "c" * 256
    r = _upload(client, tenant, f"{long},ok,y\n1,2,0\n2,1,1\n3,3,0\n4,0,1\n".encode(), **fields)
    assert r.status_code == 422, r.text
    [error] = r.json()["errors"]
    assert error["loc"] == ["body", "file"]
    assert error["msg"].startswith("column 0's name is 256 characters, more than 255")
    assert client.get("/v1/datasets", headers=tenant.headers).json()["items"] == []
    fine = _upload(client, tenant, f"{long[:255]},ok,y\n1,2,0\n2,1,1\n".encode())
    assert fine.status_code == 201, fine.text


@pytest.mark.parametrize("fields", [{}, {"positive_label": "b"}])
def test_nul_in_a_label_value_is_422(client, tenant, fields):
    """The upload's label values are stored with it, as text PostgreSQL cannot hold with a
    NUL: it was a 500."""
    labels = ("a\x00x", "b", "c") if not fields else ("a\x00x", "b")
    rows = "".join(f"{i},{i % 5},{labels[i % len(labels)]}\n" for i in range(30))
    r = _upload(client, tenant, f"f1,f2,lab\n{rows}".encode(), label_column="lab", **fields)
    assert r.status_code == 422, r.text
    [error] = r.json()["errors"]
    assert error["loc"] == ["body", "file"]
    assert error["msg"].startswith("label value 'a\\x00x' has a NUL character"), error["msg"]
    assert client.get("/v1/datasets", headers=tenant.headers).json()["items"] == []


@pytest.mark.parametrize("field", ["label_column", "positive_label"])
def test_nul_in_an_upload_form_field_is_422(client, tenant, field):
    r = _upload(client, tenant, **{field: "y\x00"})
    assert r.status_code == 422, r.text
    assert r.json()["errors"] == [
        {"loc": ["body", field], "msg": "must not contain a NUL character", "type": "value_error"}
    ]


def test_nul_in_a_job_is_422_naming_the_field(client, tenant, service_dirs):
    cases = [
        ({"uri": "file:///data/a%00.csv"}, ["body", "dataset", "uri"]),
        ({"uri": f"file://{service_dirs['data']}/a\x00.csv"}, ["body", "dataset", "uri"]),
        ({"uri": "builtin://breast_cancer", "label_column": "y\x00"},
         ["body", "dataset", "label_column"]),
    ]  # fmt: skip
    for dataset, loc in cases:
        r = client.post("/v1/jobs", json=job_body(dataset=dataset), headers=tenant.headers)
        assert r.status_code == 422, (dataset, r.text)
        assert r.json()["errors"][0]["loc"] == loc, r.text
    r = client.post(
        "/v1/jobs",
        json=job_body(dataset={"uri": "builtin://breast_cancer"}, search={"x\x00": 1}),
        headers=tenant.headers,
    )
    assert r.status_code == 422, r.text
    # an unknown search setting: refused as parsed, naming the key itself
    assert r.json()["errors"][0]["loc"] == ["body", "search", "x\x00"]


# -- storage: identical bytes once, deletion, quota -----------------------------------------------


def _stored_files(service_dirs, tenant) -> list[str]:
    directory = service_dirs["uploads"] / str(tenant.id)
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


def test_identical_uploads_are_stored_once_per_tenant(client, tenant, other_tenant, service_dirs):
    first = _upload(client, tenant, filename="a.csv").json()
    second = _upload(client, tenant, filename="b.csv", label_column="label", positive_label="yes")
    second = second.json()
    assert first["id"] != second["id"] and first["sha256"] == second["sha256"]
    assert second["filename"] == "b.csv" and second["n_columns"] == 3 == first["n_columns"]
    assert _stored_files(service_dirs, tenant) == [f"{first['sha256']}.csv"]
    _upload(client, other_tenant)  # another tenant's copy is its own
    assert _stored_files(service_dirs, other_tenant) == [f"{first['sha256']}.csv"]


def test_an_upload_of_the_same_bytes_repairs_a_damaged_stored_file(client, tenant, service_dirs):
    # A crash can leave a renamed file short of its bytes; the next upload of them used to be
    # answered 201 and pointed to the damaged file, as every earlier dataset kept doing.
    first = _upload(client, tenant).json()
    stored = service_dirs["uploads"] / str(tenant.id) / f"{first['sha256']}.csv"
    stored.write_bytes(CSV[:10])
    again = _upload(client, tenant, filename="again.csv")
    assert again.status_code == 201, again.text
    assert stored.read_bytes() == CSV  # for both datasets, which point to the same file


def test_delete_a_dataset(client, tenant, other_tenant, service_dirs):
    a = _upload(client, tenant).json()
    b = _upload(client, tenant).json()  # the same bytes
    assert client.delete(f"/v1/datasets/{a['id']}", headers=other_tenant.headers).status_code == 404
    r = client.delete(f"/v1/datasets/{a['id']}", headers=tenant.headers)
    assert r.status_code == 204, r.text
    assert client.get(f"/v1/datasets/{a['id']}", headers=tenant.headers).status_code == 404
    assert _stored_files(service_dirs, tenant) != []  # b still points to the bytes
    assert client.delete(f"/v1/datasets/{b['id']}", headers=tenant.headers).status_code == 204
    assert _stored_files(service_dirs, tenant) == []
    assert client.delete(f"/v1/datasets/{b['id']}", headers=tenant.headers).status_code == 404


def test_a_dataset_a_queued_job_uses_cannot_be_deleted(client, tenant):
    ds = _upload(client, tenant).json()
    body = job_body(dataset={"uri": ds["uri"], "label_column": "label", "positive_label": "yes"})
    job = client.post("/v1/jobs", json=body, headers=tenant.headers)
    assert job.status_code == 201, job.text
    r = client.delete(f"/v1/datasets/{ds['id']}", headers=tenant.headers)
    assert r.status_code == 409, r.text
    assert "used by 1 queued or running job" in r.json()["detail"]
    client.post(f"/v1/jobs/{job.json()['id']}/cancel", headers=tenant.headers)
    assert client.delete(f"/v1/datasets/{ds['id']}", headers=tenant.headers).status_code == 204
    assert (
        client.get(f"/v1/jobs/{job.json()['id']}", headers=tenant.headers).json()["dataset_uri"]
        == ds["uri"]
    )


def test_storage_quota_per_tenant(client, tenant, settings, monkeypatch):
    monkeypatch.setattr(settings, "max_storage_bytes_per_tenant", len(CSV) + 10)
    assert _upload(client, tenant).status_code == 201
    assert _upload(client, tenant).status_code == 201  # the same bytes take no more room
    other = CSV + b"7.0,8.0,no\n"
    r = _upload(client, tenant, other)
    assert r.status_code == 413, r.text
    assert r.json()["type"].endswith("/storage-quota-exceeded")
    assert f"more than its quota of {len(CSV) + 10} bytes" in r.json()["detail"]


def test_an_upload_of_a_tenant_at_its_quota_is_refused_before_its_body_is_read(
    app, make_tenant, client, settings, monkeypatch
):
    """FastAPI takes in a whole multipart body before the route runs: the route's "refused
    before the body is taken in" received all 33 MB of an upload for its 413."""
    from tests.service.conftest import post_unread_upload

    tenant = make_tenant()
    monkeypatch.setattr(settings, "max_storage_bytes_per_tenant", len(CSV))
    assert _upload(client, tenant).status_code == 201  # the quota, to the byte
    key = [(b"authorization", tenant.headers["Authorization"].encode())]
    start, body, received = post_unread_upload(app, key, 33_000_000)
    assert start["status"] == 413, body
    problem = json.loads(body)
    assert problem["type"].endswith("/storage-quota-exceeded")
    assert (
        f"already take {len(CSV)} bytes, its whole quota of {len(CSV)} bytes" in (problem["detail"])
    )
    assert dict(start["headers"])[b"connection"] == b"close"
    assert received == []
    # Another request of the tenant is not the upload's: its datasets are still listed.
    assert client.get("/v1/datasets", headers=tenant.headers).status_code == 200


def test_an_upload_that_fills_the_quota_exactly_is_taken(
    client, make_tenant, settings, monkeypatch
):
    """The quota is the most a tenant may store: an upload reaching it exactly is within it."""
    tenant = make_tenant()
    other = CSV + b"7.0,8.0,no\n"
    monkeypatch.setattr(settings, "max_storage_bytes_per_tenant", len(CSV) + len(other))
    assert _upload(client, tenant).status_code == 201
    assert _upload(client, tenant, other).status_code == 201, "the quota, to the byte"
    assert _upload(client, tenant, other + b"9.0,1.0,yes\n").status_code == 413


ZERO_ONE = b"a,b,y\n1.0,2.0,0\n3.0,4.0,1\n5.0,6.0,0\n7.0,8.0,1\n"


@pytest.mark.parametrize(
    ("content", "positive", "status"),
    [
        (ZERO_ONE, "yes", 422),  # was accepted, then failed on the worker
        (ZERO_ONE, 2, 422),
        (ZERO_ONE, 1, 201),
        (ZERO_ONE, "1", 201),  # typed differently from the labels: matched as the worker does
        (ZERO_ONE, None, 201),  # 0/1 says which class is positive
        (CSV.replace(b"label", b"y"), None, 422),  # yes/no does not: positive_label is required
        (CSV.replace(b"label", b"y"), "yes", 201),
        (CSV.replace(b"label", b"y"), "maybe", 422),
    ],
)
def test_a_positive_label_the_upload_does_not_hold_is_refused_at_submission(
    client, tenant, content, positive, status
):
    # Uploaded with its label column (and, for yes/no, which one is positive: the upload's own
    # check needs it), so the upload records the column's two classes.
    form = (
        {"label_column": "y"}
        if content == ZERO_ONE
        else {"label_column": "y", "positive_label": "yes"}
    )
    up = _upload(client, tenant, content, **form)
    assert up.status_code == 201, up.text
    dataset: dict = {"uri": up.json()["uri"], "label_column": "y"}
    if positive is not None:
        dataset["positive_label"] = positive
    r = client.post("/v1/jobs", json=job_body(dataset=dataset), headers=tenant.headers)
    assert r.status_code == status, r.text
    if status == 422:
        (error,) = r.json()["errors"]
        assert error["loc"] == ["body", "dataset", "positive_label"]
        assert "the labels" in error["msg"]


@pytest.mark.parametrize("given", [None, "target"])
def test_a_label_column_the_upload_lacks_is_refused_naming_its_columns(client, tenant, given):
    up = _upload(client, tenant)  # columns a, b, label
    dataset: dict = {"uri": up.json()["uri"]}
    if given is not None:
        dataset["label_column"] = given
    r = client.post("/v1/jobs", json=job_body(dataset=dataset), headers=tenant.headers)
    assert r.status_code == 422, r.text
    (error,) = r.json()["errors"]
    assert error["loc"] == ["body", "dataset", "label_column"]
    assert "its columns are ['a', 'b', 'label']" in error["msg"]
    # Left out, the column is the default's: say so, since the user never wrote 'y'.
    assert ("'y' is its default" in error["msg"]) is (given is None)


def test_a_binary_job_on_a_column_of_three_classes_is_pointed_to_an_average(client, tenant):
    three = b"a,y\n" + b"".join(f"{i},{'abc'[i % 3]}\n".encode() for i in range(12))
    up = _upload(client, tenant, three, label_column="y")
    assert up.status_code == 201 and up.json()["labels"] == ["a", "b", "c"], up.text
    r = client.post(
        "/v1/jobs",
        json=job_body(dataset={"uri": up.json()["uri"], "label_column": "y"}),
        headers=tenant.headers,
    )
    assert r.status_code == 422, r.text
    (error,) = r.json()["errors"]
    # Not at dataset.positive_label, which the user never set and which would not help.
    assert error["loc"] == ["body", "metric", "average"]
    assert "found 3 classes: ['a', 'b', 'c']" in error["msg"]
    assert "takes an average (macro, weighted or micro)" in error["msg"]


def test_the_upload_records_its_label_column_and_classes(client, tenant):
    r = _upload(client, tenant, ZERO_ONE, label_column="y")
    assert r.status_code == 201, r.text
    assert (r.json()["label_column"], r.json()["labels"]) == ("y", [0, 1])
    r = _upload(client, tenant, CSV, label_column="label", positive_label="yes")
    assert (r.json()["label_column"], r.json()["labels"]) == ("label", ["no", "yes"])
    bare = _upload(client, tenant, ZERO_ONE + b"9,9,0\n")
    assert (bare.json()["label_column"], bare.json()["labels"]) == (None, None)
    # A job on another column of the upload is not judged by these labels.
    body = job_body(dataset={"uri": r.json()["uri"], "label_column": "b", "positive_label": 2.0})
    assert client.post("/v1/jobs", json=body, headers=tenant.headers).status_code == 201


# Label columns of each kind a file holds, uploaded with their label column (and, where the
# labels do not say which class is positive, the upload's own positive_label), and positive
# labels a job may name, typed as JSON types them.
LABEL_FILES = {
    "ints 0/1": (b"a,y\n1,0\n2,1\n3,0\n4,1\n", None),
    "ints -1/1": (b"a,y\n1,-1\n2,1\n3,-1\n4,1\n", None),
    "floats 1.0/2.0": (b"a,y\n1,1.0\n2,2.0\n3,1.0\n4,2.0\n", "2"),
    "booleans": (b"a,y\n1,True\n2,False\n3,True\n4,False\n", None),
    "strings yes/no": (b"a,y\n1,yes\n2,no\n3,yes\n4,no\n", "yes"),
}
CANDIDATES = [None, 0, 1, "1", 1.0, "1.0", -1, "-1", 2, "2", 2.0, "2.0", True, False, "true",
              "True", "FALSE", "yes", "no", "YES", "maybe"]  # fmt: skip


@pytest.mark.parametrize("name", sorted(LABEL_FILES))
def test_the_positive_label_check_at_submission_agrees_with_the_worker(
    client, tenant, tmp_path, name
):
    """A job is refused at submission exactly when the worker's loading of its data would fail
    on its positive_label (metro.datasets.load_dataset on the same file), at its field."""
    from metro.datasets import DataError, load_dataset

    content, upload_positive = LABEL_FILES[name]
    form = {"label_column": "y"}
    if upload_positive is not None:
        form["positive_label"] = upload_positive
    up = _upload(client, tenant, content, **form)
    assert up.status_code == 201, up.text
    (tmp_path / "train.csv").write_bytes(content)
    accepted = []
    for positive in CANDIDATES:
        try:
            load_dataset(str(tmp_path / "train.csv"), label_column="y", positive_label=positive)
            worker_error = None
        except DataError as exc:
            worker_error = str(exc)
        dataset = {"uri": up.json()["uri"], "label_column": "y", "positive_label": positive}
        r = client.post("/v1/jobs", json=job_body(dataset=dataset), headers=tenant.headers)
        if worker_error is None:
            assert r.status_code == 201, (positive, r.text)
            accepted.append(positive)
        else:
            assert r.status_code == 422, (positive, worker_error)
            (error,) = r.json()["errors"]
            assert error["loc"] == ["body", "dataset", "positive_label"], positive
            # The worker's message, naming the labels found (listed in another order).
            assert error["msg"].split(" [")[0] == worker_error.split(" [")[0]
            labels = up.json()["labels"]
            assert all(repr(label) in error["msg"] for label in labels), error["msg"]
    # The cases that matter: numbers given as strings or booleans, booleans given as strings.
    expected = {
        "ints 0/1": [None, 0, 1, "1", 1.0, "1.0", True, False],
        "ints -1/1": [None, 1, "1", 1.0, "1.0", -1, "-1", True],
        "floats 1.0/2.0": [1, "1", 1.0, "1.0", 2, "2", 2.0, "2.0", True],
        "booleans": [None, 0, 1, "1", 1.0, "1.0", True, False, "true", "True", "FALSE"],
        "strings yes/no": ["yes", "no"],
    }[name]
    assert accepted == expected


_B = "metroBoundary7"


def _part(name: str, value: bytes, filename: str | None = None) -> bytes:
    disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
    return f"--{_B}\r\nContent-Disposition: {disposition}\r\n\r\n".encode() + value + b"\r\n"


def test_a_multipart_body_cut_before_its_closing_boundary_is_refused(client, tenant):
    """The form parser ends quietly at the last part it finished: a body cut inside its
    label_column part was stored, 201, with no label check, where the whole body is refused
    (this file's label column has a third value)."""
    rows = b"".join(f"{i},{i % 7},{i % 2}\n".encode() for i in range(40))
    whole = (
        _part("file", b"a,b,y\n" + rows + b"1,2,3\n", "d.csv")
        + _part("label_column", b"y")
        + f"--{_B}--\r\n".encode()
    )
    headers = {**tenant.headers, "Content-Type": f"multipart/form-data; boundary={_B}"}
    refused = client.post("/v1/datasets", content=whole, headers=headers)
    assert refused.status_code == 422, refused.text
    for cut in (whole.index(b'name="label_column"') + 25, len(whole) - 4, len(whole) // 2):
        r = client.post("/v1/datasets", content=whole[:cut], headers=headers)
        assert r.status_code == 400, (cut, r.text)
        assert r.json()["type"].endswith("/bad-request")
        assert "ended before its closing boundary" in r.json()["detail"]
    assert client.get("/v1/datasets", headers=tenant.headers).json()["items"] == []
    # The close delimiter split across two chunks of the stream is still seen.
    good = _part("file", b"a,b,y\n" + rows, "d.csv") + f"--{_B}--\r\n".encode()

    def chunks():
        yield good[:-8]
        yield good[-8:]

    r = client.post("/v1/datasets", content=chunks(), headers=headers)
    assert r.status_code == 201, r.text


def test_a_positive_label_needs_its_label_column_and_names_its_field(client, tenant):
    """positive_label without label_column was dropped without a word (201); a label column
    whose positive class cannot be told was blamed on the file, not on positive_label."""
    r = _upload(client, tenant, ZERO_ONE, positive_label="1")
    assert r.status_code == 422, r.text
    [error] = r.json()["errors"]
    assert error["loc"] == ["body", "positive_label"] and "give label_column too" in error["msg"]
    r = _upload(client, tenant, CSV.replace(b"label", b"y"), label_column="y")
    assert r.status_code == 422, r.text
    [error] = r.json()["errors"]
    assert error["loc"] == ["body", "positive_label"]
    assert error["msg"].startswith("positive_label is required: the labels are ['no', 'yes']")
    # ... or, for an averaged job over the two classes, which takes no positive_label:
    assert error["msg"].endswith(
        "; for an averaged job (metric.average) over these classes, upload without label_column"
    )


def test_columns_that_are_not_features_are_left_out_at_upload_and_in_jobs(client, tenant):
    """An id and a text column: the upload's check with label_column refused the file ("not
    numeric"), and a job had no way to leave them out of its features."""
    content = b"id,name,x1,x2,y\n" + b"".join(
        f"{i},n{i},{i % 7},{(i * 3) % 5},{i % 2}\n".encode() for i in range(40)
    )
    refused = _upload(client, tenant, content, label_column="y")
    assert refused.status_code == 422 and "ignore_columns" in refused.text
    alone = _upload(client, tenant, content, ignore_columns=["name"])
    assert alone.status_code == 422, alone.text
    assert alone.json()["errors"][0]["loc"] == ["body", "ignore_columns"]
    unknown = _upload(client, tenant, content, label_column="y", ignore_columns=["nope"])
    assert unknown.status_code == 422
    assert unknown.json()["errors"][0]["loc"] == ["body", "ignore_columns"], unknown.text
    r = _upload(client, tenant, content, label_column="y", ignore_columns=["id", "name"])
    assert r.status_code == 201, r.text
    uri = r.json()["uri"]
    assert sorted(r.json()["columns"]) == ["id", "name", "x1", "x2", "y"]

    def job(dataset):
        return client.post(
            "/v1/jobs", json=job_body(dataset={"uri": uri, "label_column": "y", **dataset}),
            headers=tenant.headers,
        )  # fmt: skip

    ok = job({"ignore_columns": ["id", "name"]})
    assert ok.status_code == 201, ok.text
    assert ok.json()["spec"]["dataset"]["ignore_columns"] == ["id", "name"]
    for ignored, loc, said in [
        (["id", "zip"], ["body", "dataset", "ignore_columns", 1], "not a column of dataset"),
        (["y"], ["body", "dataset", "ignore_columns", 0], "is the label column"),
        (["id", "id"], ["body", "dataset", "ignore_columns"], "more than once"),
    ]:
        r = job({"ignore_columns": ignored})
        assert r.status_code == 422, r.text
        [error] = r.json()["errors"]
        assert error["loc"] == loc and said in error["msg"], error
    builtin = client.post(
        "/v1/jobs", json=job_body(dataset={"uri": "builtin://breast_cancer",
                                           "ignore_columns": ["a"]}),
        headers=tenant.headers,
    )  # fmt: skip
    assert builtin.status_code == 422 and "no named columns" in builtin.text
    # a job without them keeps its spec: no ignore_columns key
    plain = job({})
    assert plain.status_code == 201 and "ignore_columns" not in plain.json()["spec"]["dataset"]


def _multilabel_csv(n=60, red=None):
    rows = [
        f"{i % 7},{(i * 3) % 5},{red(i) if red else i % 2},{(i // 2) % 2},{i % 3 == 0}\n".encode()
        for i in range(n)
    ]
    return b"x1,x2,red,blue,green\n" + b"".join(rows)


def test_an_upload_is_checked_as_a_multi_label_job_reads_it(client, tenant):
    """Several 0/1 label columns: the upload could only be checked with one label column, so a
    column holding anything else passed the upload and the job, and failed on a worker."""
    r = _upload(client, tenant, _multilabel_csv(), label_columns=["red", "blue", "green"])
    assert r.status_code == 201, r.text
    ds = r.json()
    assert ds["label_columns"] == ["red", "blue", "green"] and ds["label_column"] is None
    assert ds["n_columns"] == 5 and sorted(ds["columns"]) == ["blue", "green", "red", "x1", "x2"]
    assert ds["labels"] is None and ds["warnings"] == [] and ds["ignore_columns"] is None
    job = client.post(
        "/v1/jobs",
        json=job_body(
            metric={"preset": "f1", "average": "macro"},
            dataset={"uri": ds["uri"], "label_columns": ["red", "blue", "green"]},
        ),
        headers=tenant.headers,
    )
    assert job.status_code == 201, job.text
    spelled = _multilabel_csv(red=lambda i: "yes" if i % 2 else "no")
    bad = _upload(client, tenant, spelled, label_columns=["red", "blue"])
    assert bad.status_code == 422, bad.text
    [error] = bad.json()["errors"]
    assert error["loc"] == ["body", "label_columns"]
    assert "label column 'red' must hold 0 and 1" in error["msg"] and "'no', 'yes'" in error["msg"]
    missing = _upload(client, tenant, _multilabel_csv(), label_columns=["red", "pink"])
    assert missing.status_code == 422
    assert missing.json()["errors"][0]["loc"] == ["body", "label_columns"], missing.text
    assert "pink" in missing.json()["errors"][0]["msg"]
    for form, loc, said in [
        ({"label_columns": ["red"]}, ["body", "label_columns"], "names one column"),
        ({"label_columns": ["red", "red"]}, ["body", "label_columns"], "more than once"),
        ({"label_columns": ["red", "blue"], "label_column": "green"}, ["body", "label_columns"],
         "not both"),
        ({"label_columns": ["red", "blue"], "positive_label": "1"}, ["body", "positive_label"],
         "each of label_columns is a 0/1 column"),
    ]:  # fmt: skip
        r = _upload(client, tenant, _multilabel_csv(), **form)
        assert r.status_code == 422, (form, r.text)
        [error] = r.json()["errors"]
        assert error["loc"] == loc and said in error["msg"], (form, error)
    listed = client.get("/v1/datasets", headers=tenant.headers).json()["items"]
    assert [d["label_columns"] for d in listed] == [["red", "blue", "green"]]  # no refused one


def test_an_upload_records_its_ignored_columns_and_warns_of_an_id(client, tenant):
    """The upload's answer said nothing of the columns its check left out, nor of a feature
    that looks like an id (which a job on the file warned of only after training)."""
    content = b"customer,name,x1,y\n" + b"".join(
        f"{1000 + i},n{i},{(i * 7) % 5},{i % 2}\n".encode() for i in range(80)
    )
    r = _upload(client, tenant, content, label_column="y", ignore_columns=["name"])
    assert r.status_code == 201, r.text
    assert r.json()["ignore_columns"] == ["name"]
    [warning] = r.json()["warnings"]
    assert warning["code"] == "id_like_feature" and "'customer'" in warning["message"]
    got = client.get(f"/v1/datasets/{r.json()['id']}", headers=tenant.headers).json()
    assert got["warnings"] == r.json()["warnings"] and got["ignore_columns"] == ["name"]
    clean = _upload(client, tenant, content, label_column="y", ignore_columns=["name", "customer"])
    assert clean.status_code == 201 and clean.json()["warnings"] == [], clean.text
    unchecked = _upload(client, tenant, content)  # the shape only: nothing to say
    assert unchecked.json()["warnings"] == [] and unchecked.json()["ignore_columns"] is None
    # Transaction ids sampled from a wide range fill none, but are named as ids.
    sampled = b"txn_id,x1,y\n" + b"".join(
        f"{100_000 + 37 * i},{(i * 7) % 5},{i % 2}\n".encode() for i in range(80)
    )
    r = _upload(client, tenant, sampled, label_column="y")
    assert [w["code"] for w in r.json()["warnings"]] == ["id_like_feature"], r.text
    assert "'txn_id'" in r.json()["warnings"][0]["message"]


def test_a_file_part_without_a_file_name_is_told_to_send_one(client, tenant):
    """A part named file without a file name is a form's text field: the 422 said "Value error,
    Expected UploadFile, received: <class 'str'>"."""
    r = client.post("/v1/datasets", files={"file": (None, CSV)}, headers=tenant.headers)
    assert r.status_code == 422, r.text
    [error] = r.json()["errors"]
    assert error["loc"] == ["body", "file"]
    assert error["msg"].startswith("expected a file: send the data as a multipart file part")
    assert "UploadFile" not in r.text


def test_a_dataset_a_cancelling_job_still_reads_cannot_be_deleted(client, tenant, set_job):
    """A job asked to cancel whose worker has not stopped yet still reads its data."""
    ds = _upload(client, tenant).json()
    body = job_body(dataset={"uri": ds["uri"], "label_column": "label", "positive_label": "yes"})
    job = client.post("/v1/jobs", json=body, headers=tenant.headers).json()
    set_job(job["id"], state="cancelling")
    r = client.delete(f"/v1/datasets/{ds['id']}", headers=tenant.headers)
    assert r.status_code == 409, r.text
    set_job(job["id"], state="cancelled")
    assert client.delete(f"/v1/datasets/{ds['id']}", headers=tenant.headers).status_code == 204


def test_a_label_column_in_other_case_is_named_where_the_columns_shown_stop(client, tenant):
    """The job's 422 lists a dataset's first columns only: the seventh, 'plan', asked as 'Plan',
    was not among them."""
    header = ["age", "income", "visits", "tenure", "spend", "region", "plan"]
    rows = "".join(f"{i},{i},{i},{i},{i},{i},{'ab'[i % 2]}\n" for i in range(8))
    ds = _upload(client, tenant, (",".join(header) + "\n" + rows).encode()).json()
    body = job_body(dataset={"uri": ds["uri"], "label_column": "Plan"})
    r = client.post("/v1/jobs", json=body, headers=tenant.headers)
    assert r.status_code == 422, r.text
    assert "label column 'Plan' is not a column of dataset" in r.text
    assert "(did you mean 'plan'?)" in r.text


def test_the_api_removes_what_killed_uploads_left_when_it_starts(settings, tmp_path):
    """A staged upload of an API process killed mid-upload stayed on the uploads disk for good
    (a whole upload each, counted against no quota)."""
    from fastapi.testclient import TestClient

    from core.datasets.uploads import STALE_STAGED_SECONDS, staging_dir
    from service.main import create_app
    from tests.core.datasets.test_uploads import staged_file

    mine = settings.model_copy(update={"upload_dir": tmp_path})
    staging = staging_dir(mine)
    staging.mkdir(parents=True)
    stale = staged_file(staging, ".upload-left.parquet", STALE_STAGED_SECONDS * 2)
    fresh = staged_file(staging, ".upload-now.csv", 1)
    with TestClient(create_app(mine)) as client:
        assert client.get("/healthz").status_code == 200
    assert not stale.exists() and fresh.exists()
