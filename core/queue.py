"""Publishing jobs to the workers by task name, and finding which jobs have a message waiting.

The database is the source of truth: the API commits a job, then sends its message; the
reconciler sends another for a queued job that has none (a lost message, a broker restart), and
duplicates are harmless because a worker claims a job with a compare-and-set.
"""

from __future__ import annotations

import json
import logging
import urllib.parse
import uuid
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from celery import Celery

from core.broker import HELP_JOB, RUN_JOB, make_celery, queue_names
from core.config import Settings
from core.job_spec import asks_for_gpu

logger = logging.getLogger(__name__)

# kombu's Redis transport keeps one list per priority step of a queue ("<queue>\x06\x16<p>").
_PRIORITY_SEP = "\x06\x16"
_PRIORITY_STEPS = (0, 3, 6, 9)
# On Redis a worker pops the lists in that order: step 0 first (kombu's Redis priorities run the
# other way from AMQP's, 0 is the most urgent). New jobs and help requests go to step 3; a job
# the reconciler recovers (its worker died, or its message was lost) goes to step 0, so that it
# runs before the jobs that were queued behind it, rather than after every one of them. The
# embedded SQLite transport has no priorities: there, every message is first in, first out.
NORMAL_PRIORITY = 3
RECOVERED_PRIORITY = 0
# Delivered messages the embedded broker keeps this long (an operator reading what was sent).
_DELIVERED_KEPT_SECONDS = 3600.0
# A broker that is down must not hold an API request for long: the reconciler resends.
_SEND_RETRY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.5, "interval_max": 1}


def queue_for(spec: dict[str, Any], settings: Settings) -> str:
    """Jobs that ask for CUDA go to the gpu queue; the rest to the cpu queue (which GPU workers
    also serve, running ``device: auto`` jobs on their GPU)."""
    return queue_names(settings)["gpu" if asks_for_gpu(spec) else "cpu"]


def run_task_id(job_id: uuid.UUID | str) -> str:
    return f"job-{job_id}-{uuid.uuid4().hex[:8]}"


def job_id_of_task(task_id: str) -> str | None:
    if task_id.startswith("job-") and len(task_id) == len("job-") + 36 + 9:
        return task_id[4:40]
    return None


class JobQueue:
    """The API's, the runner's and the reconciler's handle on the broker: it sends tasks by
    their registered names through a Celery app without tasks (built on first use), so that a
    publisher never imports the workers' code."""

    def __init__(self, settings: Settings, celery_app: Celery | None = None) -> None:
        self.settings = settings
        self._app = celery_app

    @property
    def app(self) -> Celery:
        if self._app is None:
            self._app = make_celery(self.settings)
        return self._app

    def enqueue(
        self,
        job_id: uuid.UUID | str,
        spec: dict[str, Any],
        *,
        countdown: float | None = None,
        recovered: bool = False,
    ) -> None:
        """Send the job's run message; ``recovered`` (the reconciler's) puts it ahead of the
        messages of jobs that are merely waiting."""
        self.app.send_task(
            RUN_JOB,
            args=[str(job_id)],
            queue=queue_for(spec, self.settings),
            task_id=run_task_id(job_id),
            countdown=countdown,
            priority=RECOVERED_PRIORITY if recovered else NORMAL_PRIORITY,
            retry_policy=_SEND_RETRY,
        )

    def request_help(self, job_id: uuid.UUID | str, spec: dict[str, Any], count: int) -> None:
        for _ in range(count):
            self.app.send_task(
                HELP_JOB,
                args=[str(job_id)],
                queue=queue_for(spec, self.settings),
                task_id=f"help-{job_id}-{uuid.uuid4().hex[:8]}",
                priority=NORMAL_PRIORITY,  # in turn with new jobs, as before priorities
                retry_policy=_SEND_RETRY,
            )

    def live_job_ids(self) -> set[str] | None:
        """Ids of jobs with a run message waiting in the broker, or None when this transport
        cannot be inspected. Delivered messages do not count: a worker claims its job within
        moments of receiving it, so a job still queued long after is one whose message died
        with its worker (an unacknowledged message only comes back after the visibility
        timeout) and needs a new one."""
        url = self.settings.effective_broker_url
        scheme = urllib.parse.urlsplit(url).scheme.lower()
        try:
            if scheme in ("redis", "rediss"):
                return self._live_redis(url)
            if scheme.startswith("sqla+"):
                return self._live_sqla(url.split("+", 1)[1])
        except Exception:
            logger.warning("could not inspect the broker's queues", exc_info=True)
        return None

    def forget_delivered(self, *, older_than_s: float = _DELIVERED_KEPT_SECONDS) -> int:
        """Remove the messages the embedded broker delivered more than ``older_than_s`` ago:
        kombu's SQLAlchemy transport marks one invisible when a worker takes it (stamping its
        ``timestamp``, in local time) and never reads or removes it again (an unacknowledged
        one comes back as a new row), so its file grew by every job's messages and a reconcile
        message a minute, idle or not. How many went; 0 on Redis, which removes what it
        delivers."""
        url = self.settings.effective_broker_url
        if not urllib.parse.urlsplit(url).scheme.lower().startswith("sqla+"):
            return 0
        from sqlalchemy import DateTime, bindparam, inspect, text

        from core.db.session import make_engine

        cutoff = datetime.now() - timedelta(seconds=older_than_s)  # kombu's clock: local time
        forget = text(
            "DELETE FROM kombu_message WHERE NOT visible AND timestamp < :cutoff"
        ).bindparams(bindparam("cutoff", value=cutoff, type_=DateTime()))
        engine = make_engine(url.split("+", 1)[1])
        try:
            with engine.begin() as conn:
                if not inspect(conn).has_table("kombu_message"):
                    return 0
                return int(conn.execute(forget).rowcount or 0)
        except Exception:
            logger.warning("could not remove the broker's delivered messages", exc_info=True)
            return 0
        finally:
            engine.dispose()

    def _queues(self) -> list[str]:
        names = queue_names(self.settings)
        return [names["cpu"], names["gpu"]]

    def _live_redis(self, url: str) -> set[str]:
        import redis

        prefix = self.settings.queue_prefix
        client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)
        try:
            raw: list[bytes | str] = []
            for queue in self._queues():
                for step in _PRIORITY_STEPS:
                    name = queue if step == 0 else f"{queue}{_PRIORITY_SEP}{step}"
                    raw.extend(client.lrange(prefix + name, 0, -1))
        finally:
            client.close()
        return _job_ids(raw)

    def _live_sqla(self, url: str) -> set[str]:
        from sqlalchemy import inspect, text

        from core.db.session import make_engine

        engine = make_engine(url)
        try:
            with engine.connect() as conn:
                tables = set(inspect(conn).get_table_names())
                if not {"kombu_queue", "kombu_message"} <= tables:
                    return set()
                rows = (
                    conn.execute(text("SELECT payload FROM kombu_message WHERE visible"))
                    .scalars()
                    .all()
                )
        finally:
            engine.dispose()
        return _job_ids(r.encode() if isinstance(r, str) else r for r in rows)


def _job_ids(payloads: Iterable[bytes | str]) -> set[str]:
    found: set[str] = set()
    for payload in payloads:
        try:
            message = json.loads(payload)
        except ValueError:
            continue
        headers = message.get("headers") or {}
        task_id = headers.get("id")
        if headers.get("task") == RUN_JOB and isinstance(task_id, str):
            job_id = job_id_of_task(task_id)
            if job_id:
                found.add(job_id)
    return found
