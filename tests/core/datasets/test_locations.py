"""core.datasets.locations: which file:// paths and s3:// objects a tenant's job may read.

Tenant B must not reach tenant A's upload, nor A's model artifacts, by any spelling of their
location; and a refused location must read exactly like a missing one."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from core.config import Settings
from core.datasets.locations import (
    LocationPolicy,
    UnreadableLocationError,
    canonical_object_uri,
    local_path_of,
    not_readable,
)

A = uuid.UUID("aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa")
B = uuid.UUID("bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb")
SHA = "ab" * 32


def _settings(**kw: object) -> Settings:
    return Settings(_env_file=None, **kw)  # type: ignore[arg-type]


# -- file:// ----------------------------------------------------------------------------------


@pytest.fixture
def local(tmp_path: Path) -> tuple[LocationPolicy, Path, Path]:
    """A data root that contains the service's upload and artifact directories (an operator's
    easy mistake), with tenant A's upload in it and a shared file beside them."""
    root = tmp_path / "srv"
    uploads = root / "uploads"
    (uploads / str(A)).mkdir(parents=True)
    (uploads / str(A) / f"{SHA}.csv").write_text("a,y\n1,0\n2,1\n")
    (root / "artifacts" / "jobs" / "j1" / "model").mkdir(parents=True)
    (root / "artifacts" / "jobs" / "j1" / "model" / "model.safetensors").write_bytes(b"x")
    (root / "shared").mkdir()
    (root / "shared" / "train.csv").write_text("a,y\n1,0\n2,1\n")
    policy = LocationPolicy.from_settings(
        _settings(upload_dir=uploads, artifacts_uri=str(root / "artifacts"), data_roots=[root])
    )
    return policy, root, uploads / str(A) / f"{SHA}.csv"


def _refused(policy: LocationPolicy, tenant: uuid.UUID, uri: str) -> str:
    path = local_path_of(uri)
    with pytest.raises(UnreadableLocationError) as info:
        policy.local_file(tenant, uri, path or "")
    return str(info.value)


def test_a_file_in_an_allowed_root_is_readable(local):
    policy, root, _ = local
    real, found_root = policy.local_file(B, "u", str(root / "shared" / "train.csv"))
    assert real == os.path.realpath(root / "shared" / "train.csv")
    assert found_root == os.path.realpath(root)


def test_no_spelling_reaches_another_tenants_upload(local, tmp_path):
    policy, root, upload = local
    rel = upload.relative_to(root)
    (root / "shared" / "link.csv").symlink_to(upload)  # a symlink inside the root
    (root / "shared" / "uploads-dir").symlink_to(root / "uploads", target_is_directory=True)
    forms = [
        f"file://{upload}",
        str(upload),
        f"file://localhost{upload}",
        f"file://{root}//{rel}",
        f"file://{root}/shared/../{rel}",
        f"file://{root}/./uploads/./{A}/{SHA}.csv",
        f"file://{root}/%75ploads/{A}/{SHA}.csv",  # percent-encoded 'u'
        f"file://{root}/uploads/{A}/{SHA}%2ecsv",
        f"file://{root}/shared/link.csv",
        f"file://{root}/shared/uploads-dir/{A}/{SHA}.csv",
        f"file://{root}/artifacts/jobs/j1/model/model.safetensors",
        f"file://{root}/uploads/.staging/x.csv",
    ]
    for uri in forms:
        assert _refused(policy, B, uri) == not_readable(uri), uri
        # The upload store is the service's, not A's to read this way either.
        assert _refused(policy, A, uri) == not_readable(uri), uri


def test_a_refused_file_reads_like_a_missing_one(local):
    policy, root, upload = local
    missing = f"file://{root}/shared/nothing-here.csv"
    outside = "file:///etc/passwd"
    reserved = f"file://{upload}"
    messages = {_refused(policy, B, u).replace(u, "URI") for u in (missing, outside, reserved)}
    assert len(messages) == 1


def test_case_variants_of_the_upload_dir_are_not_found(local):
    policy, root, _ = local
    uri = f"file://{root}/Uploads/{A}/{SHA}.csv"  # case-sensitive file system: no such file
    assert _refused(policy, B, uri) == not_readable(uri)


def test_per_tenant_data_roots(tmp_path):
    for t in (A, B):
        (tmp_path / "tenants" / str(t)).mkdir(parents=True)
        (tmp_path / "tenants" / str(t) / "mine.csv").write_text("a,y\n1,0\n")
    policy = LocationPolicy.from_settings(
        _settings(
            upload_dir=tmp_path / "uploads",
            artifacts_uri=str(tmp_path / "artifacts"),
            data_roots=[str(tmp_path / "tenants" / "{tenant}")],
        )
    )
    policy.local_file(A, "u", str(tmp_path / "tenants" / str(A) / "mine.csv"))
    uri = f"file://{tmp_path}/tenants/{A}/mine.csv"
    assert _refused(policy, B, uri) == not_readable(uri)
    uri = f"file://{tmp_path}/tenants/{B}/../{A}/mine.csv"
    assert _refused(policy, B, uri) == not_readable(uri)


# -- s3:// ------------------------------------------------------------------------------------


def _s3_policy(*prefixes: str) -> LocationPolicy:
    return LocationPolicy.from_settings(
        _settings(artifacts_uri="s3://corp/metro", data_uri_prefixes=list(prefixes))
    )


def test_nothing_in_s3_is_readable_unless_an_operator_allows_it():
    policy = _s3_policy()
    with pytest.raises(UnreadableLocationError):
        policy.object_uri(B, "s3://corp/shared/train.csv")


def test_no_spelling_reaches_the_services_own_prefixes():
    # Even an operator who allows the whole bucket does not open the uploads or the models.
    policy = _s3_policy("s3://corp/")
    assert policy.object_uri(B, "s3://corp/shared/train.csv") == "s3://corp/shared/train.csv"
    assert policy.object_uri(B, "S3://corp/shared/train.csv") == "s3://corp/shared/train.csv"
    upload = f"metro/uploads/{A}/{SHA}.csv"
    forms = [
        f"s3://corp/{upload}",
        f"S3://corp/{upload}",
        f"s3://CORP/{upload}",
        f"s3://Corp/{upload}",
        f"s3://corp/Metro/uploads/{A}/{SHA}.csv",
        f"s3://corp/METRO/UPLOADS/{A}/{SHA}.csv",
        f"s3://corp//{upload}",
        f"s3://corp/metro//uploads/{A}/{SHA}.csv",
        f"s3://corp/shared/../{upload}",
        f"s3://corp/./{upload}",
        f"s3://corp/%6detro/uploads/{A}/{SHA}.csv",
        f"s3://corp/metro%2Fuploads/{A}/{SHA}.csv",
        f"s3://corp/metro\\uploads/{A}/{SHA}.csv",
        f"s3://corp/{upload}?versionId=1",
        f"s3://corp/{upload}#x",
        f"s3://user@corp/{upload}",
        f"s3://corp:443/{upload}",
        "s3://corp/metro/jobs/j1/model/model.safetensors",
        "s3://corp/metro/jobs/j1/fits/f.safetensors",
    ]
    for uri in forms:
        with pytest.raises(UnreadableLocationError) as info:
            policy.object_uri(B, uri)
        assert str(info.value) == not_readable(uri), uri


def test_an_allowed_prefix_is_a_folder_not_a_string_prefix():
    policy = _s3_policy("s3://corp/data")
    assert policy.object_uri(B, "s3://corp/data/x.csv") == "s3://corp/data/x.csv"
    with pytest.raises(UnreadableLocationError):
        policy.object_uri(B, "s3://corp/database/x.csv")


def test_per_tenant_prefixes():
    policy = _s3_policy("s3://corp/tenants/{tenant}/")
    mine = f"s3://corp/tenants/{A}/x.csv"
    assert policy.object_uri(A, mine) == mine
    for uri in (mine, f"s3://corp/tenants/{B}/../{A}/x.csv"):
        with pytest.raises(UnreadableLocationError):
            policy.object_uri(B, uri)


def test_an_uploads_uri_elsewhere_is_reserved_too():
    policy = LocationPolicy.from_settings(
        _settings(
            artifacts_uri="s3://models/m",
            uploads_uri="s3://data/up",
            data_uri_prefixes=["s3://data/", "s3://models/"],
        )
    )
    assert policy.object_uri(B, "s3://data/other/x.csv") == "s3://data/other/x.csv"
    for uri in (f"s3://data/up/{A}/{SHA}.csv", "s3://models/m/jobs/j/model/model.onnx"):
        with pytest.raises(UnreadableLocationError):
            policy.object_uri(B, uri)


@pytest.mark.parametrize(
    ("uri", "canonical"),
    [
        ("s3://b-1.x/k/v.csv", "s3://b-1.x/k/v.csv"),
        ("S3://bkt/k.csv", "s3://bkt/k.csv"),
        ("s3://bkt/", None),
        ("s3://bkt/a//b", None),
        ("s3://bkt/a/", None),
        ("s3://Bkt/a", None),
        ("s3://bkt/a%20b", None),
        ("s3://bkt/a\x01b", None),
        ("gs://bkt/a", None),
    ],
)
def test_canonical_object_uri(uri, canonical):
    assert canonical_object_uri(uri) == canonical
