"""Alembic environment: online migrations against the URL the caller chose.

The URL comes from ``config.attributes["url"]`` (set by :mod:`core.db.migrate`), else from
``sqlalchemy.url`` (``alembic -x`` users), else from the service settings (METRO_DATABASE_URL), so
plain ``alembic upgrade head`` and ``metro migrate`` reach the same database.
"""

from __future__ import annotations

from alembic import context

from core.db import models  # noqa: F401  (registers the tables on Base.metadata)
from core.db.base import Base
from core.db.session import make_engine

config = context.config


def _database_url() -> str:
    url = config.attributes.get("url") or config.get_main_option("sqlalchemy.url")
    if url:
        return str(url)
    from core.config import get_settings

    return get_settings().database_url


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = make_engine(_database_url())
    try:
        with engine.connect() as conn:
            _run(conn)
    finally:
        engine.dispose()


def _run(connection) -> None:  # type: ignore[no-untyped-def]
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        # SQLite cannot ALTER most things; batch mode recreates the table instead.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    raise SystemExit("offline (--sql) migrations are not supported; run against a database")
run_migrations_online()
