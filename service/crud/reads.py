"""Single-row reads for the hot GET routes: one Core ``SELECT`` on an autocommit connection.

A read through an ORM session costs, besides its query, a ``BEGIN`` and the ``ROLLBACK`` that
closes the session's transaction (two more round trips to the database), and builds a mapped
instance with its identity map and state tracking, only to be copied into a response schema. A
single-row read needs neither a transaction nor an instance: these return the row's columns (a
``Row``, read by attribute), which the response schemas validate as they would the instance.

``engine`` is the app's autocommit engine (``app.state.read_engine``): the same pool as the
sessions', with ``isolation_level="AUTOCOMMIT"``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from sqlalchemy import Engine, Row, Table, select

from core.db.models import Job, Model
from core.errors import NotFoundError


def _read_one(
    engine: Engine,
    table: Table,
    columns: Iterable[str],
    tenant_id: uuid.UUID,
    row_id: uuid.UUID,
    extra: Iterable[Any] = (),
) -> Row[Any] | None:
    stmt = select(*(table.c[name] for name in columns), *extra).where(
        table.c.id == row_id, table.c.tenant_id == tenant_id
    )
    with engine.connect() as conn:
        return conn.execute(stmt).first()


def read_job(
    engine: Engine,
    tenant_id: uuid.UUID,
    job_id: uuid.UUID,
    columns: Iterable[str],
    extra: Iterable[Any] = (),
) -> Row[Any]:
    """``columns`` of the tenant's job (and the ``extra`` column expressions), or
    :class:`NotFoundError`."""
    table = Job.__table__
    row = _read_one(engine, table, columns, tenant_id, job_id, extra)  # type: ignore[arg-type]
    if row is None:
        raise NotFoundError("job", job_id)
    return row


def read_model(
    engine: Engine, tenant_id: uuid.UUID, model_id: uuid.UUID, columns: Iterable[str]
) -> Row[Any]:
    """``columns`` of the tenant's model, or :class:`NotFoundError`."""
    row = _read_one(engine, Model.__table__, columns, tenant_id, model_id)  # type: ignore[arg-type]
    if row is None:
        raise NotFoundError("model", model_id)
    return row
