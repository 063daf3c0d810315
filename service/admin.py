"""Operator actions the CLI exposes (``metro admin create-key --tenant NAME``)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from service.crud.tenants import add_api_key, get_or_create_tenant
from service.security import generate_api_key


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
