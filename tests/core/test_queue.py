"""The broker handle (core.queue) on the embedded broker: kombu's SQLAlchemy transport."""

from __future__ import annotations

import contextlib
import sqlite3
import uuid
from datetime import datetime, timedelta
from pathlib import Path

from core.config import Settings
from core.queue import JobQueue

SPEC = {"metric": {"preset": "f1"}, "dataset": {"uri": "builtin://breast_cancer"}}


def test_the_embedded_broker_forgets_what_it_delivered_long_ago(tmp_path: Path) -> None:
    """kombu keeps every delivered message as an invisible row and never removes it: the
    broker's file grew by each job's messages, and by a reconcile message a minute when idle."""
    broker = tmp_path / "broker.db"
    queue = JobQueue(Settings(broker_url=f"sqla+sqlite:///{broker}"))
    jobs = [str(uuid.uuid4()) for _ in range(3)]
    for job in jobs:
        queue.enqueue(job, SPEC)
    long_ago = (datetime.now() - timedelta(hours=2)).strftime("%Y-%m-%d %H:%M:%S.%f")
    just_now = datetime.now().strftime("%Y-%m-%d %H:%M:%S.%f")
    with contextlib.closing(sqlite3.connect(broker)) as db:
        ids = [row[0] for row in db.execute("SELECT id FROM kombu_message ORDER BY id")]
        # As a worker's take leaves them: invisible, stamped when taken.
        db.execute("UPDATE kombu_message SET visible = 0, timestamp = ? WHERE id = ?",
                   (long_ago, ids[0]))  # fmt: skip
        db.execute("UPDATE kombu_message SET visible = 0, timestamp = ? WHERE id = ?",
                   (just_now, ids[1]))  # fmt: skip
        db.commit()
    assert queue.forget_delivered() == 1
    with contextlib.closing(sqlite3.connect(broker)) as db:
        left = [row[0] for row in db.execute("SELECT id FROM kombu_message ORDER BY id")]
    assert left == ids[1:]  # the one taken just now, and the one still waiting
    assert queue.live_job_ids() == {jobs[2]}
    assert queue.forget_delivered() == 0


def test_a_redis_broker_removes_what_it_delivers_itself() -> None:
    queue = JobQueue(Settings(broker_url="redis://127.0.0.1:1/0"))  # never contacted
    assert queue.forget_delivered() == 0
