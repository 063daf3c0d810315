"""The broker, as every process sees it: task and queue names, and the Celery configuration.

* Broker: ``METRO_BROKER_URL`` (Redis in production), or the embedded default, kombu's SQLAlchemy
  transport on a SQLite file (``sqla+sqlite:///var/broker.db``), which needs no server.
* JSON only (no pickle), ``acks_late`` (a message is acknowledged when its job is done, so a
  worker that dies mid-job does not lose it), ``task_reject_on_worker_lost``, prefetch 1 (a busy
  worker does not hoard messages another could run), a visibility timeout longer than the
  longest job (redelivery of a lost worker's message is the reconciler's job, not a timer's).
* Queues ``cpu`` and ``gpu`` for jobs, ``control`` for the reconciler; workers run with the
  ``solo`` pool: one process per GPU, and no fork after CUDA is initialised.

The API publishes by task name (:mod:`core.queue`) with an app built here without any task; the
workers (:mod:`worker.celery_app`) register the tasks under the same names.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Sequence

from celery import Celery
from kombu.entity import Exchange, Queue

from core.config import Settings

RUN_JOB = "metro.run_job"
HELP_JOB = "metro.help_job"
RECONCILE = "metro.reconcile"


def queue_names(settings: Settings) -> dict[str, str]:
    p = settings.queue_prefix
    return {"cpu": f"{p}cpu", "gpu": f"{p}gpu", "control": f"{p}control"}


def _make_sqlite_dir(broker: str) -> None:
    """The embedded broker's SQLite file lives under ./var, which a fresh clone lacks."""
    from pathlib import Path

    from sqlalchemy import make_url

    url = make_url(broker.split("+", 1)[1])
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
        Path(url.database).parent.mkdir(parents=True, exist_ok=True)


def _quiet_kombu_mappers() -> None:
    """kombu's SQLAlchemy transport maps its tables with a loader strategy SQLAlchemy 2.1
    deprecates; the warning is about kombu's code, not this deployment, so the embedded broker's
    users are not shown it (this one message only)."""
    import warnings

    from sqlalchemy.exc import SADeprecationWarning

    warnings.filterwarnings(
        "ignore", message=r"The ``noload`` loader strategy is deprecated",
        category=SADeprecationWarning,
    )  # fmt: skip


def make_celery(settings: Settings, *, include: Sequence[str] = ()) -> Celery:
    """A Celery app for this deployment's broker and queues: the workers' (``include`` names
    their task modules) or, without tasks, a publisher that sends tasks by name."""
    broker = settings.effective_broker_url
    names = queue_names(settings)
    scheme = urllib.parse.urlsplit(broker).scheme.lower()
    transport_options: dict[str, object] = {}
    if scheme in ("redis", "rediss"):
        transport_options["visibility_timeout"] = settings.visibility_timeout_seconds
        if settings.queue_prefix:
            transport_options["global_keyprefix"] = settings.queue_prefix
    if scheme.startswith("sqla+"):
        # (this transport hands its options to create_engine; it has no visibility timeout:
        # a message is redelivered only when its connection closes)
        _make_sqlite_dir(broker)
        _quiet_kombu_mappers()
    app = Celery("metro", broker=broker, include=list(include))
    app.conf.update(
        task_serializer="json",
        accept_content=["json"],
        result_serializer="json",
        result_backend=None,
        task_ignore_result=True,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_acks_on_failure_or_timeout=True,
        worker_prefetch_multiplier=1,
        worker_pool="solo",
        worker_concurrency=1,
        worker_cancel_long_running_tasks_on_connection_loss=False,
        # No remote control (metro sends no broadcasts, inspect or revoke): each worker's pidbox
        # binding in Redis outlived a worker killed with SIGKILL, one more for every crash.
        worker_enable_remote_control=False,
        broker_connection_retry_on_startup=True,
        broker_connection_max_retries=None,
        broker_transport_options=transport_options,
        # Each queue its own direct exchange and routing key, so a message reaches one queue.
        task_queues=[_queue(names[q]) for q in ("control", "gpu", "cpu")],
        task_default_queue=names["cpu"],
        task_default_exchange=names["cpu"],
        task_default_routing_key=names["cpu"],
        task_create_missing_queues=False,
        # Beat keeps its schedule in memory (an interval needs no state file).
        beat_scheduler="celery.beat:Scheduler",
        beat_schedule={
            "metro-reconcile": {
                "task": RECONCILE,
                "schedule": settings.reconcile_seconds,
                # A reconcile message nobody ran in time is pointless: the next one follows.
                "options": {"queue": names["control"], "expires": settings.reconcile_seconds},
            }
        },
        timezone="UTC",
    )
    return app


def _queue(name: str) -> Queue:
    # (kombu has no type hints)
    return Queue(name, Exchange(name, type="direct"), routing_key=name)  # type: ignore[no-untyped-call]
