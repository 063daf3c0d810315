"""Operator actions the CLI exposes (``metro admin create-key | list-keys | revoke-key``)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from core.db.base import utcnow
from core.db.models import ApiKey, Tenant
from service.crud.tenants import add_api_key, get_or_create_tenant
from service.security import generate_api_key, hash_api_key


@dataclass(frozen=True)
class KeyInfo:
    """What an operator may see of a key: never the key itself, only its first characters."""

    id: uuid.UUID
    tenant: str
    # What ``{tenant}`` stands for in METRO_DATA_ROOTS and METRO_DATA_URI_PREFIXES.
    tenant_id: uuid.UUID
    prefix: str
    created_at: datetime
    revoked_at: datetime | None


def create_api_key(session: Session, tenant_name: str) -> str:
    """Create an API key for ``tenant_name`` (creating the tenant if needed) and return it.

    The plaintext key exists only in the return value: the database keeps its SHA-256 (see
    :mod:`service.security`), so a lost key cannot be shown again, only replaced.
    """
    name = tenant_name.strip()
    if not name:
        raise ValueError("tenant name must not be empty")
    tenant = get_or_create_tenant(session, name)
    key = generate_api_key()
    add_api_key(session, tenant.id, key)
    session.commit()
    return key


def list_api_keys(session: Session, tenant_name: str | None = None) -> list[KeyInfo]:
    """Every key (of one tenant, when named), oldest first."""
    query = select(ApiKey, Tenant).join(Tenant, Tenant.id == ApiKey.tenant_id)
    if tenant_name is not None:
        query = query.where(Tenant.name == tenant_name.strip())
    rows = session.execute(query.order_by(ApiKey.created_at, ApiKey.id)).all()
    return [_info(key, tenant) for key, tenant in rows]


def revoke_api_key(session: Session, key_or_prefix: str) -> KeyInfo:
    """Revoke one key, named by the key itself or by the prefix ``list_api_keys`` shows. The API
    refuses it once its key cache lets go of it (``METRO_API_KEY_CACHE_SECONDS``). Revoking a
    revoked key changes nothing; a prefix that matches no key, or several, is an error."""
    text = key_or_prefix.strip()
    if not text:
        raise ValueError("give the key or its prefix")
    by_hash = select(ApiKey).where(ApiKey.key_hash == hash_api_key(text))
    matches = list(session.scalars(by_hash))
    if not matches:  # the prefix as listed
        matches = list(session.scalars(select(ApiKey).where(ApiKey.prefix == text)))
    if not matches:
        raise ValueError(f"no API key matches {text!r}")
    if len(matches) > 1:
        raise ValueError(
            f"{len(matches)} API keys share the prefix {text!r}; revoke with the full key"
        )
    key = matches[0]
    if key.revoked_at is None:
        key.revoked_at = utcnow()
        session.commit()
    return _info(key, session.get_one(Tenant, key.tenant_id))


def tenant_id(session: Session, tenant_name: str) -> uuid.UUID | None:
    """The id of the tenant named ``tenant_name``, None where there is none."""
    return session.scalars(select(Tenant.id).where(Tenant.name == tenant_name.strip())).first()


def _info(key: ApiKey, tenant: Tenant) -> KeyInfo:
    return KeyInfo(
        id=key.id, tenant=tenant.name, tenant_id=tenant.id, prefix=key.prefix,
        created_at=key.created_at, revoked_at=key.revoked_at,
    )  # fmt: skip
