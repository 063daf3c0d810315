"""Settings come from METRO_* variables; the defaults are the embedded, single-machine setup."""

from __future__ import annotations

from pathlib import Path

from core.config import Settings


def test_defaults_are_embedded(monkeypatch):
    for name in ("METRO_DATABASE_URL", "METRO_BROKER_URL", "METRO_DATA_ROOTS"):
        monkeypatch.delenv(name, raising=False)
    s = Settings(_env_file=None)  # type: ignore[call-arg]
    assert s.database_url == "sqlite:///var/metro.db"
    assert s.broker_url is None
    assert s.effective_broker_url.startswith("sqla+sqlite:///")
    assert s.data_roots == []


def test_environment_overrides(monkeypatch):
    monkeypatch.setenv("METRO_DATABASE_URL", "postgresql+psycopg://db/metro")
    monkeypatch.setenv("METRO_BROKER_URL", "redis://cache:6379/0")
    monkeypatch.setenv("METRO_DATA_ROOTS", "/data/a, /data/b")
    monkeypatch.setenv("METRO_MAX_PREDICT_ROWS", "7")
    s = Settings(_env_file=None)  # type: ignore[call-arg]
    assert s.database_url == "postgresql+psycopg://db/metro"
    assert s.effective_broker_url == "redis://cache:6379/0"
    assert s.data_roots == [Path("/data/a"), Path("/data/b")]
    assert s.max_predict_rows == 7
