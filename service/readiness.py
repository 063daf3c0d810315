"""Readiness checks: can this process reach its database and its broker?

Each check returns ``(ok, detail)`` and never raises; the detail is a short phrase of this
code's (no exception text, which could carry a host name or a credential from the URL).
"""

from __future__ import annotations

import logging
import urllib.parse

from sqlalchemy import Engine, text

logger = logging.getLogger(__name__)


def prepare(broker_url: str) -> None:
    """Pay the checks' one-time costs at start-up, not in the first probe: reading this code's
    migrations (0.43 s on a quiet machine, and more than the readiness timeout of 1 s on a loaded
    one) and importing the broker's client. A fresh replica's first probes answered "timed out"
    for both checks while they did it. Never raises: a failure here is the probe's to report."""
    try:
        from core.db.migrate import head

        head()
        if urllib.parse.urlsplit(broker_url).scheme.lower() in ("redis", "rediss"):
            import redis  # noqa: F401
    except Exception as exc:
        logger.warning("readiness: preparing the checks failed (%s)", type(exc).__name__)


def check_database(engine: Engine) -> tuple[bool, str]:
    """Reachable, and at this code's schema or a newer one: a database never migrated (or left
    at an older revision) was ready while every API call on it answered 500."""
    from core.db.migrate import head, known, revision_of

    try:
        with engine.connect() as conn:
            at = revision_of(conn)
    except Exception as exc:
        # One line: a probe every few seconds logged a 55-line traceback each time.
        logger.warning("readiness: database unreachable (%s)", type(exc).__name__)
        return False, "unreachable"
    if at is None:
        return False, "not migrated: run `metro migrate`"
    if at != head() and known(at):
        return False, f"schema at revision {at}, this code's is {head()}: run `metro migrate`"
    # A revision this code does not know is a newer version's: `metro migrate` runs before the
    # new processes start, and the running ones stay ready until they are replaced (each
    # migration keeps the schema the version before it reads).
    return True, "ok"


def check_broker(url: str, timeout: float) -> tuple[bool, str]:
    """Redis by a PING, SQLAlchemy-backed kombu transports (``sqla+<url>``, the embedded default)
    by a SELECT 1 on that database, anything else (AMQP...) by a kombu connection."""
    scheme = urllib.parse.urlsplit(url).scheme.lower()
    try:
        if scheme in ("redis", "rediss"):
            import redis

            client = redis.Redis.from_url(
                url, socket_connect_timeout=timeout, socket_timeout=timeout
            )
            try:
                client.ping()
            finally:
                client.close()
        elif scheme.startswith("sqla+") or scheme == "sqlalchemy":
            from core.db.session import make_engine

            engine = make_engine(url.split("+", 1)[1] if "+" in scheme else url)
            try:
                with engine.connect() as conn:
                    conn.execute(text("SELECT 1"))
            finally:
                engine.dispose()
        else:
            from kombu import Connection

            with Connection(url, connect_timeout=timeout) as conn:
                conn.ensure_connection(max_retries=1, timeout=timeout)
    except Exception as exc:
        logger.warning("readiness: broker unreachable (%s)", type(exc).__name__)
        return False, "unreachable"
    return True, "ok"
