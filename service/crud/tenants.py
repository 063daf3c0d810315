"""Tenants and API keys."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from core.db.base import utcnow
from core.db.models import ApiKey, Tenant
from service.security import display_prefix, hash_api_key


@dataclass(frozen=True)
class Principal:
    """Who is calling: every tenant-scoped query takes ``tenant_id`` from here."""

    tenant_id: uuid.UUID
    tenant_name: str
    api_key_id: uuid.UUID
    # The key's expiry (None: until revoked), so that a cached principal ends with it.
    expires_at: datetime | None = None


def get_or_create_tenant(session: Session, name: str) -> Tenant:
    tenant = session.scalar(select(Tenant).where(Tenant.name == name))
    if tenant is not None:
        return tenant
    tenant = Tenant(name=name)
    try:
        with session.begin_nested():  # another process may create the same tenant meanwhile
            session.add(tenant)
    except IntegrityError:
        tenant = session.scalars(select(Tenant).where(Tenant.name == name)).one()
    return tenant


def lock_tenant(session: Session, tenant_id: uuid.UUID) -> None:
    """Hold the tenant's row until the transaction ends, so that what a tenant-wide limit counts
    (its active jobs, its stored bytes) is counted by one request at a time.

    PostgreSQL locks the row FOR NO KEY UPDATE: two such locks wait for each other, but not the
    foreign-key checks of rows inserted meanwhile (FOR KEY SHARE). FOR UPDATE blocked those too,
    and a delete of a dataset, whose stored object's row it had locked, then waited on the
    tenant for that row's key check while an upload of the same bytes held the tenant and
    waited on the object: a deadlock, which PostgreSQL broke by failing the upload (a 503, one
    in 40 races under load). SQLite has no row locks, and its driver opens a transaction only
    at the first write, so two requests could both count before either writes; a write that
    changes nothing takes the database's write lock first instead.
    """
    if session.get_bind().dialect.name == "sqlite":
        session.execute(update(Tenant).where(Tenant.id == tenant_id).values(name=Tenant.name))
    else:
        session.execute(
            select(Tenant.id).where(Tenant.id == tenant_id).with_for_update(key_share=True)
        )


def add_api_key(
    session: Session, tenant_id: uuid.UUID, key: str, *, expires_at: datetime | None = None
) -> ApiKey:
    api_key = ApiKey(
        tenant_id=tenant_id, key_hash=hash_api_key(key), prefix=display_prefix(key),
        expires_at=expires_at,
    )  # fmt: skip
    session.add(api_key)
    session.flush()
    return api_key


def authenticate_hash(session: Session, key_hash: str) -> Principal | None:
    """The principal of the key whose SHA-256 is ``key_hash``, where it is neither revoked nor
    expired; None otherwise."""
    row = session.execute(
        select(ApiKey.id, Tenant.id, Tenant.name, ApiKey.expires_at)
        .join(Tenant, Tenant.id == ApiKey.tenant_id)
        .where(
            ApiKey.key_hash == key_hash,
            ApiKey.revoked_at.is_(None),
            or_(ApiKey.expires_at.is_(None), ApiKey.expires_at > utcnow()),
        )
    ).first()
    if row is None:
        return None
    key_id, tenant_id, tenant_name, expires_at = row
    return Principal(
        tenant_id=tenant_id, tenant_name=tenant_name, api_key_id=key_id, expires_at=expires_at
    )
