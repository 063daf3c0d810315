"""worker.celery_app: what a worker process sets up before its first job."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.config import Settings
from worker import celery_app


def test_compiled_kernels_are_kept_under_the_settings_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A restarted worker finds what torch.compile and Triton built before, instead of compiling
    # again: both caches point under Settings.compile_cache_dir.
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "")  # unset, restored afterwards
    monkeypatch.setenv("TRITON_CACHE_DIR", "")
    settings = Settings(compile_cache_dir=tmp_path / "cache")
    monkeypatch.setattr(celery_app, "get_settings", lambda: settings)
    celery_app._keep_compiled_kernels()
    inductor = tmp_path / "cache" / "inductor"
    assert inductor.is_dir() and (tmp_path / "cache" / "triton").is_dir()
    # The places PyTorch and Triton read their cache directories from.
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    assert cache_dir() == str(inductor.resolve())

    assert os.environ["TRITON_CACHE_DIR"] == str((tmp_path / "cache" / "triton").resolve())


def test_an_operators_own_cache_directories_win(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "mine"))
    monkeypatch.setenv("TRITON_CACHE_DIR", "")
    celery_app.keep_compiled_kernels(tmp_path / "cache")

    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "mine")
    assert os.environ["TRITON_CACHE_DIR"] == str((tmp_path / "cache" / "triton").resolve())
    assert not (tmp_path / "cache" / "inductor").exists()


def test_no_directory_leaves_the_libraries_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "")  # unset, restored afterwards
    monkeypatch.setenv("TRITON_CACHE_DIR", "")
    # An empty METRO_COMPILE_CACHE_DIR is no directory (not the current one).
    monkeypatch.setenv("METRO_COMPILE_CACHE_DIR", "")
    settings = Settings()
    assert settings.compile_cache_dir is None
    monkeypatch.setattr(celery_app, "get_settings", lambda: settings)
    celery_app._keep_compiled_kernels()

    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == os.environ["TRITON_CACHE_DIR"] == ""


def test_a_cache_directory_that_cannot_be_made_is_said_not_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Celery drops what worker_init raises: the kernels went to /tmp without a word."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "")
    monkeypatch.setenv("TRITON_CACHE_DIR", "")
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    celery_app.keep_compiled_kernels(blocked / "cache")
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == ""
    said = capsys.readouterr().err
    assert said.startswith(f"warning: METRO_COMPILE_CACHE_DIR {blocked / 'cache'}: cannot create")
    assert "compiled kernels are not kept" in said
