"""One logging configuration for every process of the service: the API (uvicorn's own lines and
the app's), the workers (Celery's and the runner's) and the command line that starts them.

Before it, each process logged in the format of whoever configured logging first: uvicorn's
``INFO:     ...`` for the API's server lines, Celery's ``[time: LEVEL/Process]`` for a worker,
and nothing at all for the API's own INFO lines (its loggers had no handler, so Python's
last-resort handler printed warnings as a bare message and dropped the rest). Now every line goes
to standard error through one handler, as text (``time LEVEL logger: message``) or, for a log
collector, one JSON object a line (``METRO_LOG_FORMAT=json``), at ``METRO_LOG_LEVEL``.
"""

from __future__ import annotations

import logging.config
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from enum import StrEnum
from typing import Any


class LogFormat(StrEnum):
    """How a log line is written: ``text`` for a terminal, ``json`` (one object a line, with
    ``time``, ``level``, ``logger`` and ``message`` keys and any ``extra`` fields) for a log
    collector."""

    TEXT = "text"
    JSON = "json"


class LogLevel(StrEnum):
    """The lowest level a process logs (Python's logging levels)."""

    DEBUG = "DEBUG"
    INFO = "INFO"
    WARNING = "WARNING"
    ERROR = "ERROR"


TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# The job a worker is running in this context: every line logged meanwhile carries it as
# ``job_id`` (a JSON line's field), whoever logs it (the runner, the library, a warning).
_JOB_ID: ContextVar[str | None] = ContextVar("metro_job_id", default=None)


@contextmanager
def job_context(job_id: object) -> Iterator[None]:
    """The lines logged inside carry ``job_id``."""
    token = _JOB_ID.set(str(job_id))
    try:
        yield
    finally:
        _JOB_ID.reset(token)


class JobIdFilter(logging.Filter):
    """Adds the running job's id to a record (one that does not name one already)."""

    def filter(self, record: logging.LogRecord) -> bool:
        job_id = _JOB_ID.get()
        if job_id is not None and not hasattr(record, "job_id"):
            record.job_id = job_id
        return True


# Libraries whose INFO lines narrate each query, request or file access: at the service's INFO
# they would drown its own lines.
_QUIET_BELOW_WARNING = ("sqlalchemy.engine", "httpx", "httpcore", "botocore", "s3fs", "fsspec")


def logging_config(*, level: LogLevel, log_format: LogFormat) -> dict[str, Any]:
    """The :func:`logging.config.dictConfig` of a process: one stream handler on the root
    logger, which uvicorn's and Celery's loggers propagate to instead of keeping their own."""
    formatter: dict[str, Any]
    if log_format is LogFormat.JSON:
        formatter = {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        }
    else:
        formatter = {"format": TEXT_FORMAT}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"metro": formatter},
        "filters": {"job": {"()": JobIdFilter}},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "formatter": "metro",
                "filters": ["job"],
                "stream": "ext://sys.stderr",
            }
        },
        "root": {"handlers": ["stderr"], "level": level.value},
        "loggers": {
            # uvicorn's loggers carry handlers of their own unless told otherwise; emptied, they
            # write through the root's, in the same format as everything else.
            **{
                name: {"handlers": [], "propagate": True, "level": level.value}
                for name in ("uvicorn", "uvicorn.error", "uvicorn.access")
            },
            **{name: {"level": "WARNING"} for name in _QUIET_BELOW_WARNING},
        },
    }


def configure_logging(*, level: LogLevel, log_format: LogFormat) -> None:
    """Set this process's logging up (idempotent: a second call replaces the first)."""
    logging.config.dictConfig(logging_config(level=level, log_format=log_format))
    logging.captureWarnings(True)
