"""Receiving uploads (core.datasets.uploads): what interrupted ones leave is removed."""

from __future__ import annotations

import os
from pathlib import Path

from core.datasets.uploads import STALE_STAGED_SECONDS, remove_stale_staged


def staged_file(directory: Path, name: str, age_s: float) -> Path:
    path = directory / name
    path.write_bytes(b"a,y\n1,0\n")
    then = path.stat().st_mtime - age_s
    os.utime(path, (then, then))
    return path


def test_only_stale_staged_uploads_are_removed(tmp_path: Path) -> None:
    """An API process killed mid-upload left the staged file (a whole upload, on no quota) for
    good; one being received by another process sharing the directory is young and stays."""
    stale = staged_file(tmp_path, ".upload-abc.csv", STALE_STAGED_SECONDS + 60)
    fresh = staged_file(tmp_path, ".upload-def.csv", 5)
    other = staged_file(tmp_path, "notes.csv", STALE_STAGED_SECONDS + 60)
    assert remove_stale_staged(tmp_path) == 1
    assert not stale.exists() and fresh.exists() and other.exists()
    assert remove_stale_staged(tmp_path / "missing") == 0  # no staging directory yet
