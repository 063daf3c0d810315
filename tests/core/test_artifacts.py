"""core.artifacts: stored model files are read back as the bytes their digest names."""

from __future__ import annotations

import hashlib
import os

import pytest

from core.artifacts import ArtifactError, open_checked

OLD = b"the weights the row records" * 100_000  # several chunks
NEW = b"other weights, written over them" * 1_000


def test_the_bytes_streamed_are_the_ones_whose_digest_was_checked(tmp_path):
    """The digest was checked on one open of the file and the bytes streamed from a second: a
    file replaced in between (as the library writes files: a new one renamed over the old) was
    sent, 200, under the ETag of the bytes it no longer held."""
    (tmp_path / "model.safetensors").write_bytes(OLD)
    chunks = open_checked(str(tmp_path), "model.safetensors", hashlib.sha256(OLD).hexdigest())
    (tmp_path / "new").write_bytes(NEW)
    os.replace(tmp_path / "new", tmp_path / "model.safetensors")
    assert b"".join(chunks) == OLD


def test_other_bytes_or_none_are_the_stores_fault(tmp_path):
    (tmp_path / "model.onnx").write_bytes(NEW)
    with pytest.raises(ArtifactError, match=r"has SHA-256 .* not the recorded"):
        open_checked(str(tmp_path), "model.onnx", hashlib.sha256(OLD).hexdigest())
    assert b"".join(open_checked(str(tmp_path), "model.onnx", None)) == NEW  # nothing recorded
    with pytest.raises(ArtifactError, match=r"model\.bin is missing"):
        open_checked(str(tmp_path), "model.bin", None)


def test_removing_a_folder_removes_the_empty_folders_above_it(tmp_path):
    """A deleted model left jobs/<id>/model and jobs/<id>, two empty folders a job, for as long
    as the store lived; a folder above that still holds something stays, as does the root."""
    from core.artifacts import remove_tree

    root = tmp_path / "store"
    kept = root / "jobs" / "b" / "model" / "1"
    for attempt in (root / "jobs" / "a" / "model" / "1", kept):
        attempt.mkdir(parents=True)
        (attempt / "model.safetensors").write_bytes(b"w")
    remove_tree(str(root), "jobs/a/model/1")
    assert not (root / "jobs" / "a").exists() and (kept / "model.safetensors").exists()
    (root / "jobs" / "b" / "fits").mkdir()
    remove_tree(str(root), "jobs/b/model/1")
    assert not (root / "jobs" / "b" / "model").exists() and (root / "jobs" / "b" / "fits").exists()
    remove_tree(str(root), "jobs/b")
    assert root.is_dir() and list(root.iterdir()) == []
