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


def current(url: str) -> str | None:
    """The database's current revision (None for an empty database)."""
    from alembic.runtime.migration import MigrationContext

    from core.db.session import make_engine

    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
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
