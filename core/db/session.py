"""Engine and session factories. Created by the app factory (or a worker), never at import."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, make_url
from sqlalchemy.orm import Session, sessionmaker


def make_engine(url: str, **kwargs: Any) -> Engine:
    if url.startswith("sqlite"):
        database = make_url(url).database
        if database and database != ":memory:" and not database.startswith("file:"):
            # The embedded default lives under ./var, which a fresh checkout does not have.
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        # The API serves requests from a thread pool; SQLite objects must be shareable across it.
        kwargs.setdefault("connect_args", {"check_same_thread": False})
        engine = create_engine(url, **kwargs)
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    kwargs.setdefault("pool_pre_ping", True)
    return create_engine(url, **kwargs)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    # SQLite ignores foreign keys (and so ON DELETE CASCADE) unless asked, per connection.
    cursor.execute("PRAGMA foreign_keys=ON")
    # WAL lets the API read while a worker writes; busy_timeout waits for a lock instead of failing.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=5000")
    cursor.close()


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    # expire_on_commit=False: routes serialize objects after the CRUD layer has committed.
    return sessionmaker(bind=engine, expire_on_commit=False)
