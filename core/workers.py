"""The workers' roll call: which queues a live worker serves now.

Each worker process writes its row (:class:`core.db.models.WorkerBeat`: its name and the kinds of
queue it consumes, ``cpu`` and/or ``gpu``) when it starts and at each reconcile round, and removes
it when it stops. A row not renewed within :func:`seen_window` belongs to a worker that died
without saying so. The API reads the rows to tell the owner of a queued job that no worker can
take it, which is otherwise invisible: the job's message waits in the broker, and the reconciler
(which resends only lost messages) sees nothing wrong.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Label, delete, exists, select
from sqlalchemy.orm import Session

from core.config import Settings
from core.db.base import db_now
from core.db.models import WorkerBeat

__all__ = [
    "KINDS",
    "announce",
    "forget",
    "live_columns",
    "live_kinds",
    "live_kinds_of",
    "seen_window",
    "waiting_reason",
]

# A worker renews its row each reconcile round (with up to 10% jitter); one missed round is a
# busy database, two and a half rounds and the margin mean it is gone.
_ROUNDS_SEEN = 2.5
_MARGIN_SECONDS = 30.0


def seen_window(settings: Settings) -> float:
    """Seconds since its last word within which a worker counts as there."""
    return _ROUNDS_SEEN * settings.reconcile_seconds + _MARGIN_SECONDS


# Rows of workers that died without removing theirs (SIGKILL, a lost machine) are dropped this
# long after their last word, by whichever worker announces next: each process has its own name.
_FORGOTTEN_AFTER = timedelta(days=1)


def announce(session: Session, name: str, kinds: list[str]) -> None:
    """Write (or renew) this worker's row, and drop the rows of workers silent for a day; the
    caller commits."""
    now = db_now(session)
    session.execute(delete(WorkerBeat).where(WorkerBeat.seen_at < now - _FORGOTTEN_AFTER))
    session.merge(WorkerBeat(name=name[:255], queues=",".join(sorted(kinds)), seen_at=now))


def forget(session: Session, name: str) -> None:
    session.execute(delete(WorkerBeat).where(WorkerBeat.name == name[:255]))


KINDS = ("cpu", "gpu")


def live_kinds(conn: Connection | Session, *, since: datetime) -> set[str]:
    """The kinds of queue (``cpu``, ``gpu``) some worker seen since ``since`` consumes: the
    :func:`live_columns` alone, for a reader without a job's row to carry them."""
    return live_kinds_of(conn.execute(select(*live_columns(since))).one())


def live_columns(since: datetime) -> list[Label[bool]]:
    """``live_cpu`` and ``live_gpu``: whether a worker seen since ``since`` consumes that kind,
    as columns a job's own SELECT can carry (its GET stays one statement)."""
    return [
        exists()
        .where(WorkerBeat.seen_at >= since, WorkerBeat.queues.contains(kind))
        .label(f"live_{kind}")
        for kind in KINDS
    ]


def live_kinds_of(row: Any) -> set[str]:
    """The kinds :func:`live_columns` found live on ``row``."""
    return {kind for kind in KINDS if getattr(row, f"live_{kind}", False)}


def waiting_reason(wants_gpu: bool, live: set[str], window_seconds: float) -> str | None:
    """Why a queued job cannot start, in its owner's words, or None when a worker serves its
    queue (it is then merely behind other jobs)."""
    kind = "gpu" if wants_gpu else "cpu"
    if kind in live:
        return None
    minutes = max(1, round(window_seconds / 60))
    said = (
        f"no worker serving the {kind} queue has reported in the last {minutes} min: the job "
        "waits until one starts"
    )
    if wants_gpu:
        return said + (
            " (training.device asks for CUDA, which only a worker on a machine with a GPU "
            "takes; 'auto' runs on any worker, on its GPU where it has one)"
        )
    return said + " (`metro worker` starts one)"
