"""What a worker process shares between its tasks: settings, the database engine, a name.

Built lazily on first use inside the worker process (never at import), so that a process that
forks before its first task never inherits a database connection.
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from dataclasses import dataclass, field

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from core.config import Settings, get_settings
from core.db.session import make_engine, make_sessionmaker


@dataclass
class WorkerContext:
    settings: Settings
    engine: Engine
    sessionmaker: sessionmaker[Session]
    name: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}")

    def new_token(self) -> str:
        """A lease owner for one attempt: unique even when one process runs a job twice."""
        return f"{self.name}:{uuid.uuid4().hex[:12]}"

    def session(self) -> Session:
        return self.sessionmaker()


_lock = threading.Lock()
_context: WorkerContext | None = None


def get_context(settings: Settings | None = None) -> WorkerContext:
    global _context
    with _lock:
        if _context is None:
            settings = settings or get_settings()
            engine = (
                make_engine(settings.database_url, pool_size=4, max_overflow=4)
                if not (settings.database_url.startswith("sqlite"))
                else make_engine(settings.database_url)
            )
            _context = WorkerContext(settings, engine, make_sessionmaker(engine))
        return _context


def reset_context() -> None:
    """Forget the process' context (tests, or after a fork)."""
    global _context
    with _lock:
        if _context is not None:
            _context.engine.dispose()
        _context = None
