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
