"""Readiness checks: can this process reach its database and its broker?

Each check returns ``(ok, detail)`` and never raises; the detail is a short, fixed phrase (no
exception text, which could carry a host name or a credential from the URL).
"""

from __future__ import annotations

import logging
import urllib.parse

from sqlalchemy import Engine, text

logger = logging.getLogger(__name__)


def check_database(engine: Engine) -> tuple[bool, str]:
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception:
        logger.warning("readiness: database unreachable", exc_info=True)
        return False, "unreachable"
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
    except Exception:
        logger.warning("readiness: broker unreachable", exc_info=True)
        return False, "unreachable"
    return True, "ok"
