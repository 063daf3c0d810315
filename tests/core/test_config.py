"""Settings come from METRO_* variables; the defaults are the embedded, single-machine setup."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

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


def test_a_value_the_service_cannot_use_is_refused_naming_its_variable(monkeypatch, tmp_path):
    """31 of 33 nonsensical values were accepted (a negative model cache made every model load
    raise KeyError; a heartbeat longer than the lease loses every job); a refused one was a
    traceback naming the field, not the variable."""
    import pytest

    from core.config import SettingsError, get_settings

    monkeypatch.chdir(tmp_path)  # no .env of the checkout
    cases = {
        "METRO_MODEL_CACHE_SIZE": ("-1", "METRO_MODEL_CACHE_SIZE: Input should be greater"),
        "METRO_MAX_UPLOAD_BYTES": ("0", "METRO_MAX_UPLOAD_BYTES: Input should be greater"),
        "METRO_LEASE_SECONDS": ("nan", "METRO_LEASE_SECONDS: Input should be a finite number"),
        "METRO_MAX_JOB_WORK": ("inf", "METRO_MAX_JOB_WORK: Input should be a finite number"),
        "METRO_HEARTBEAT_SECONDS": ("120", "must be below METRO_LEASE_SECONDS (60)"),
        "METRO_DEFAULT_PAGE_SIZE": ("500", "must be at most METRO_MAX_PAGE_SIZE (200)"),
    }
    for name, (value, words) in cases.items():
        monkeypatch.setenv(name, value)
        get_settings.cache_clear()
        with pytest.raises(SettingsError) as caught:
            get_settings()
        assert words in str(caught.value), (name, str(caught.value))
        monkeypatch.delenv(name)
    get_settings.cache_clear()
    assert get_settings().model_cache_size == 16
    get_settings.cache_clear()


def test_a_metro_variable_that_names_no_setting_is_found():
    """METRO_DATABSE_URL left the database at its default without a word."""
    from core.config import unknown_variables

    env = {"METRO_DATABSE_URL": "x", "METRO_DATABASE_URL": "y", "METRO_URL": "u",
           "METRO_API_KEY": "k", "METRO_DEBUG": "1", "PATH": "/bin"}  # fmt: skip
    assert unknown_variables(env) == ["METRO_DATABSE_URL"]


def test_a_misspelt_variable_in_the_env_file_is_found(tmp_path, monkeypatch):
    """The settings read .env too, where a misspelt variable went unsaid: `metro migrate`
    migrated the default database and said only that it was at the latest revision."""
    from core.config import unknown_variables

    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("METRO_DATABSE_URL=postgresql://x/y\nMETRO_LOG_LEVEL=INFO\n")
    assert "METRO_DATABSE_URL" in unknown_variables()
    assert "METRO_LOG_LEVEL" not in unknown_variables()


def test_the_operations_guide_lists_every_setting_with_its_default():
    """docs/operations.md's table is the operators' reference: each setting once, none that is
    not one, and each default as core.config.Settings has it (a default changed in one place
    only would mislead every deployment)."""
    import re

    text = (Path(__file__).parents[2] / "docs" / "operations.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(METRO_\w+)` \| ([^|]*) \|", text.split("\n## Settings", 1)[1], re.M)
    documented = {name.removeprefix("METRO_").lower(): cell.strip() for name, cell in rows}
    assert len(documented) == len(rows)  # none twice
    assert set(documented) == set(Settings.model_fields)
    for name, cell in documented.items():
        field = Settings.model_fields[name]
        default = field.get_default(call_default_factory=True)
        if default in (None, "", []):  # said in words: unset, empty
            assert cell.startswith(("unset", "empty")), (name, cell)
            continue
        first = re.match(r"`?([^`\s]+)`?", cell)
        assert first is not None, (name, cell)
        value = getattr(default, "value", default)
        if isinstance(value, int | float) and not isinstance(value, bool):
            assert float(first.group(1)) == float(value), (name, cell, value)
        else:
            assert first.group(1) == str(value), (name, cell, value)


def test_a_store_that_cannot_work_is_refused_at_start_naming_its_variable(tmp_path, monkeypatch):
    """An upload directory under a file and an unknown protocol started, /readyz said ready,
    and every upload or download then answered 500 (a worker failed each job three times)."""
    from core.config import SettingsError, get_settings

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    cases = [
        ("METRO_UPLOAD_DIR", str(blocker / "uploads"), "lies under"),
        ("METRO_COMPILE_CACHE_DIR", str(blocker / "cache"), "lies under"),
        ("METRO_ARTIFACTS_URI", "nosuch://bucket/x", "its protocol 'nosuch' cannot be used"),
        ("METRO_UPLOADS_URI", "nosuch://bucket/u", "its protocol 'nosuch' cannot be used"),
        # given empty (a compose file's ${VAR:-}): models went under /jobs at the root
        ("METRO_ARTIFACTS_URI", "", "is empty; unset the variable for its default"),
        ("METRO_UPLOAD_DIR", " ", "is empty; unset the variable for its default"),
        ("METRO_DATABASE_URL", "", "is empty; unset the variable for its default"),
        ("METRO_PROBLEM_TYPE_BASE", "", "is empty; unset the variable for its default"),
    ]
    for name, value, said in cases:
        monkeypatch.setenv(name, value)
        get_settings.cache_clear()
        with pytest.raises(SettingsError, match=f"^{name}: .*{re.escape(said)}"):
            get_settings()
        monkeypatch.delenv(name)
    monkeypatch.setenv("METRO_UPLOADS_URI", "")  # optional: empty is unset
    get_settings.cache_clear()
    assert get_settings().uploads_uri is None
    monkeypatch.setenv("METRO_ARTIFACTS_URI", "memory://metro/artifacts")
    monkeypatch.setenv("METRO_UPLOAD_DIR", str(tmp_path / "new" / "uploads"))  # made later
    get_settings.cache_clear()
    assert get_settings().artifacts_uri == "memory://metro/artifacts"
    get_settings.cache_clear()
