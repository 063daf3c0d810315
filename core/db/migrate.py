"""Run the Alembic migrations programmatically (``metro migrate`` calls these).

Migrations never run at import or at app start-up: with several API processes and workers
starting together, concurrent DDL would race, so schema changes are one explicit step.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, inspect, text

if TYPE_CHECKING:
    from alembic.script import ScriptDirectory

# alembic.ini sits at the repository root, two levels above this package.
_ALEMBIC_INI = Path(__file__).resolve().parents[2] / "alembic.ini"


def alembic_config(url: str) -> Config:
    cfg = Config(str(_ALEMBIC_INI))
    # Passed as an attribute, not through the ini: ini values are %-interpolated, which would
    # mangle a password containing '%'.
    cfg.attributes["url"] = url
    return cfg


def upgrade(url: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(url), revision)


def downgrade(url: str, revision: str) -> None:
    """``revision`` is a revision id, a relative step such as ``-1``, or ``base``."""
    command.downgrade(alembic_config(url), revision)


# Alembic's table of the revision a database is at (its default name, which env.py keeps).
VERSION_TABLE = "alembic_version"


def revision_of(conn: Connection) -> str | None:
    """The revision the database of ``conn`` is at (None: never migrated), read from alembic's
    table directly: its MigrationContext logged two INFO lines each time, two thirds of an API's
    log under a readiness probe every few seconds."""
    if not inspect(conn).has_table(VERSION_TABLE):
        return None
    found = conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar()
    return None if found is None else str(found)


def current(url: str) -> str | None:
    """The database's current revision (None for an empty database)."""
    from core.db.session import make_engine

    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return revision_of(conn)
    finally:
        engine.dispose()


@functools.cache
def _scripts() -> ScriptDirectory:
    """The migrations this code carries, read once (they do not change under a process; the
    readiness probe asks on every call)."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config(""))


def head() -> str | None:
    """The latest revision of the migrations this code carries."""
    return _scripts().get_current_head()


def known(revision: str) -> bool:
    """Whether ``revision`` is one of this code's migrations (a database migrated by a newer
    version is at one it does not know)."""
    from alembic.util.exc import CommandError

    try:
        return _scripts().get_revision(revision) is not None
    except CommandError:
        return False
