"""Which database errors mean "the database is unavailable for now" rather than "this is wrong".

The API answers them 503 with ``Retry-After``; a worker gives the job back to the queue without
counting the attempt (the job did nothing wrong).
"""

from __future__ import annotations

from sqlalchemy import exc

# OperationalError: the server refused or dropped the connection, is starting up or shutting
# down, or cancelled the statement; InterfaceError: the driver lost its connection;
# TimeoutError: no pooled connection became free within the pool's timeout.
DATABASE_UNAVAILABLE: tuple[type[Exception], ...] = (
    exc.OperationalError,
    exc.InterfaceError,
    exc.TimeoutError,
    exc.DisconnectionError,
)


def is_database_unavailable(error: BaseException) -> bool:
    return isinstance(error, DATABASE_UNAVAILABLE)


def is_database_outage(error: BaseException) -> bool:
    """The database could not be reached, or dropped the connection: the failure says nothing
    about the work that was running. A statement the database refused on a live connection
    (a timeout, a lock, a constraint) is not an outage: retried forever it could loop."""
    if isinstance(error, (exc.TimeoutError, exc.DisconnectionError)):
        return True
    if isinstance(error, exc.DBAPIError):
        # connection_invalidated: SQLAlchemy recognised a disconnect mid-statement; no statement:
        # the error came while connecting.
        return bool(error.connection_invalidated) or (
            isinstance(error, (exc.OperationalError, exc.InterfaceError)) and not error.statement
        )
    return False


# SQLSTATEs of a transaction the database aborted to break a cycle of lock waits (40P01) or a
# serialization conflict (40001): the request was fine, and running it again succeeds.
_CONFLICT_STATES = frozenset({"40P01", "40001"})


def is_lock_conflict(error: BaseException) -> bool:
    """The database aborted this transaction for another one (a deadlock broken, a
    serialization failure), not for anything in it: a retry is the remedy."""
    if not isinstance(error, exc.DBAPIError):
        return False
    orig = error.orig
    state = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    return state in _CONFLICT_STATES


# SQLSTATE 53100 (PostgreSQL's disk_full) and SQLite's SQLITE_FULL (13).
_DISK_FULL_STATE = "53100"
_SQLITE_FULL = 13


def is_disk_full(error: BaseException) -> bool:
    """The database could not write for want of room on its disk: it is up, and a retry
    succeeds once space is freed (said as such, not as "unavailable")."""
    if not isinstance(error, exc.DBAPIError):
        return False
    orig = error.orig
    state = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    return state == _DISK_FULL_STATE or getattr(orig, "sqlite_errorcode", None) == _SQLITE_FULL
