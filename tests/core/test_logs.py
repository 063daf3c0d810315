"""One logging configuration for the API, the workers and the command line (core.logs). Each
case runs in a fresh interpreter: configuring logging here would replace pytest's own capture."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys

import pytest

from core.config import Settings
from core.logs import LogFormat, LogLevel

_TEXT_LINE = re.compile(r"^[\d-]{10} [\d:]{8},\d{3} (DEBUG|INFO|WARNING|ERROR) [\w.]+: ")


def _logged(code: str, env: dict[str, str] | None = None) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert result.stdout == ""  # logs go to standard error, leaving stdout to a command's output
    return result.stderr.splitlines()


_EMIT = """
import logging, warnings
from core.logs import LogFormat, LogLevel, configure_logging
configure_logging(level=LogLevel.{level}, log_format=LogFormat.{fmt})
logging.getLogger("service.api").info("an app line at INFO")
logging.getLogger("uvicorn.access").info('127.0.0.1:1 - "GET /healthz HTTP/1.1" 200')
logging.getLogger("worker.runner").debug("a debug line")
logging.getLogger("sqlalchemy.engine").info("SELECT 1")
logging.getLogger("worker.runner").warning("job %s failed", "j1", extra={{"job_id": "j1"}})
warnings.warn("a library's warning")
from core.logs import job_context
with job_context("j2"):
    logging.getLogger("metro.search").info("a line while a job runs")
logging.getLogger("metro.search").info("a line after it")
"""


def test_the_apps_info_lines_reach_the_log_in_the_one_text_format():
    lines = _logged(_EMIT.format(level="INFO", fmt="TEXT"))
    # Before, the app's loggers had no handler: its INFO lines were dropped and its warnings
    # printed bare by Python's last-resort handler, unlike uvicorn's and Celery's lines.
    assert any(line.endswith("INFO service.api: an app line at INFO") for line in lines), lines
    assert any("INFO uvicorn.access: 127.0.0.1:1" in line for line in lines), lines
    assert any(line.endswith("WARNING worker.runner: job j1 failed") for line in lines), lines
    assert any("WARNING py.warnings:" in line for line in lines), lines
    assert not any("a debug line" in line for line in lines)  # below the level
    assert not any("SELECT 1" in line for line in lines)  # a library's chatter, held to WARNING
    starts = [line for line in lines if line.strip() and not line.startswith(" ")]
    assert starts and all(_TEXT_LINE.match(line) for line in starts), starts


def test_json_lines_are_objects_with_the_same_fields_and_extras():
    lines = _logged(_EMIT.format(level="DEBUG", fmt="JSON"))
    records = [json.loads(line) for line in lines if line.startswith("{")]
    by_message = {r["message"]: r for r in records}
    app = by_message["an app line at INFO"]
    assert app["level"] == "INFO" and app["logger"] == "service.api" and app["time"]
    assert by_message["a debug line"]["level"] == "DEBUG"
    assert by_message["job j1 failed"]["job_id"] == "j1"
    # Whoever logs while a worker runs a job, the line carries the job's id; none after it.
    assert by_message["a line while a job runs"]["job_id"] == "j2"
    assert "job_id" not in by_message["a line after it"]
    assert len(records) == len([line for line in lines if line.strip()])  # nothing else


def test_a_workers_loglevel_reaches_the_one_configuration():
    """Celery hands its --loglevel to the setup_logging receiver, which is what keeps Celery's
    own format out; an unknown level falls back to INFO rather than failing the worker."""
    code = """
import logging
from worker.celery_app import _log_as_the_service
_log_as_the_service(loglevel={level!r})
print(logging.getLevelName(logging.getLogger().level), file=__import__("sys").stderr)
logging.getLogger("celery.worker").info("ready")
"""
    debug = _logged(code.format(level=logging.DEBUG))
    assert debug[0] == "DEBUG" and debug[1].endswith("INFO celery.worker: ready")
    assert _logged(code.format(level="WARNING"))[0] == "WARNING"
    assert _logged(code.format(level="NOTSET"))[0] == "INFO"


@pytest.mark.parametrize(
    ("variables", "level", "fmt"),
    [
        ({}, LogLevel.INFO, LogFormat.TEXT),
        ({"METRO_LOG_LEVEL": "debug", "METRO_LOG_FORMAT": "JSON"}, LogLevel.DEBUG, LogFormat.JSON),
        ({"METRO_LOG_LEVEL": " Warning "}, LogLevel.WARNING, LogFormat.TEXT),
    ],
)
def test_the_settings_read_levels_and_formats_in_any_case(monkeypatch, variables, level, fmt):
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    settings = Settings()
    assert (settings.log_level, settings.log_format) == (level, fmt)


def test_an_unknown_level_is_refused_by_name(monkeypatch):
    from core.config import SettingsError, get_settings

    monkeypatch.setenv("METRO_LOG_LEVEL", "loud")
    get_settings.cache_clear()
    try:
        with pytest.raises(SettingsError, match="METRO_LOG_LEVEL: Input should be 'DEBUG'"):
            get_settings()
    finally:
        get_settings.cache_clear()


def test_a_worker_runs_and_helps_a_job_in_its_log_context(monkeypatch):
    """The runner's lines carried the job's id; a helper's (metro.help_job) did not."""
    import uuid

    from core import logs
    from worker import helper

    ident = uuid.uuid4()
    monkeypatch.setattr(helper, "_help", lambda job, ctx: logs._JOB_ID.get())
    assert helper.help_job(str(ident), ctx=object()) == str(ident)  # type: ignore[arg-type]
    assert logs._JOB_ID.get() is None  # and none after it
