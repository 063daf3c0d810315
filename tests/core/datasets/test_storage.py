"""core.datasets.storage: an upload's bytes are stored whole and durably, once per tenant, and a
stored object that does not hold its recorded bytes is repaired by the next upload of them."""

from __future__ import annotations

import errno
import hashlib
import io
import os
import uuid
from pathlib import Path

import fsspec
import pytest

from core.config import Settings
from core.datasets.locations import LocationPolicy
from core.datasets.storage import Kept, UploadStore
from core.datasets.uploads import StoredUpload, stage_upload

TENANT = uuid.UUID(int=7)
CSV = b"a,b,y\n" + b"".join(f"{i},{i % 7},{i % 2}\n".encode() for i in range(50))


def _staged(tmp_path: Path, content: bytes = CSV) -> StoredUpload:
    return stage_upload(
        io.BytesIO(content), filename="t.csv", staging_dir=tmp_path / "staging", max_bytes=10**6
    )


def _store(tmp_path: Path) -> UploadStore:
    return UploadStore(str(tmp_path / "uploads"))


def _leftovers(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in (tmp_path / "staging").iterdir())


def test_new_bytes_are_stored_and_the_same_bytes_shared(tmp_path):
    store = _store(tmp_path)
    staged = _staged(tmp_path)
    location = store.location(TENANT, staged.sha256, staged.format)
    assert store.keep(staged, location) is Kept.STORED
    assert Path(location).read_bytes() == CSV
    again = _staged(tmp_path)
    assert store.keep(again, location) is Kept.SHARED
    assert Path(location).read_bytes() == CSV and _leftovers(tmp_path) == []


@pytest.mark.parametrize(
    "damage",
    [CSV[:40], b"", CSV.replace(b"a,b", b"x,y")],  # cut short, emptied, same size other bytes
    ids=["truncated", "empty", "same-size"],
)
def test_a_damaged_object_is_replaced_by_the_next_upload_of_its_bytes(tmp_path, damage):
    # What a crash between the rename and the disk can leave under the recorded name: before,
    # the next upload of the same bytes answered 201 and pointed to them as they were.
    store = _store(tmp_path)
    staged = _staged(tmp_path)
    location = store.location(TENANT, staged.sha256, staged.format)
    store.keep(staged, location)
    Path(location).write_bytes(damage)
    assert store.keep(_staged(tmp_path), location) is Kept.REPAIRED
    assert hashlib.sha256(Path(location).read_bytes()).hexdigest() == staged.sha256
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize(
    "damage", [CSV[:40], CSV.replace(b"a,b", b"x,y")], ids=["cut", "same-size"]
)
def test_a_damaged_object_in_an_object_store_is_replaced_too(tmp_path, damage):
    """On an object store only the size was compared: an object of the right size with other
    bytes was shared as it was, so the upload that should repair it never could."""
    store = UploadStore(f"memory://metro-{uuid.uuid4().hex}")
    staged = _staged(tmp_path)
    location = store.location(TENANT, staged.sha256, staged.format)
    store.keep(staged, location)
    fs, path = fsspec.core.url_to_fs(location)
    fs.pipe_file(path, damage)
    assert store.keep(_staged(tmp_path), location) is Kept.REPAIRED
    assert fs.cat_file(path) == CSV
    assert store.keep(_staged(tmp_path), location) is Kept.SHARED


def test_the_staged_bytes_and_the_stored_name_reach_the_disk(tmp_path, monkeypatch):
    import stat

    synced: list[str] = []
    real = os.fsync

    def fsync(fd):
        synced.append("directory" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    store = _store(tmp_path)
    staged = _staged(tmp_path)
    assert synced == ["file"]  # the staged bytes, before anything points to them
    store.keep(staged, store.location(TENANT, staged.sha256, staged.format))
    # The tenant's new directory in the store's, then the object's name in the tenant's.
    assert synced == ["file", "directory", "directory"]


def test_a_store_on_another_filesystem_is_copied_into_then_renamed(tmp_path, monkeypatch):
    real = os.replace
    crossed: list[str] = []

    def replace(src, dst):
        if ".upload-" in str(src) and "staging" in str(src):  # the staged file: another device
            crossed.append(str(src))
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    store = _store(tmp_path)
    staged = _staged(tmp_path)
    location = store.location(TENANT, staged.sha256, staged.format)
    assert store.keep(staged, location) is Kept.STORED
    assert crossed and Path(location).read_bytes() == CSV
    assert _leftovers(tmp_path) == []
    assert sorted(p.name for p in Path(location).parent.iterdir()) == [Path(location).name]


def test_a_file_url_store_is_the_directory_it_names(tmp_path):
    # Path("file:///srv/up") is the relative path "file:/srv/up": uploads landed under each
    # process's working directory, outside the directories the location policy protects.
    root = tmp_path / "store"
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        uploads_uri=f"file://{root}/",
        upload_dir=tmp_path / "up",
        artifacts_uri=str(tmp_path / "art"),
    )
    store = UploadStore.from_settings(settings)
    assert store.is_local and store.root == str(root)
    location = store.location(TENANT, "ab" * 32, ".csv")
    assert Path(location).is_absolute() and Path(location).parent.parent == root
    assert os.path.realpath(root) in LocationPolicy.from_settings(settings).reserved_dirs
