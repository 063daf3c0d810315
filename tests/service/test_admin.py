"""service.admin.create_api_key: what the `metro admin create-key` command calls."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import select

from service.admin import create_api_key
from service.db.models import ApiKey, Tenant
from service.security import hash_api_key


def test_key_is_returned_once_and_stored_hashed(app, client):
    name = f"acme-{uuid.uuid4().hex[:6]}"
    with app.state.sessionmaker() as session:
        key1 = create_api_key(session, name)
        key2 = create_api_key(session, name)  # a second key, same tenant
        tenants = session.scalars(select(Tenant).where(Tenant.name == name)).all()
        assert len(tenants) == 1
        stored = session.scalars(select(ApiKey).where(ApiKey.tenant_id == tenants[0].id)).all()
    assert key1 != key2 and key1.startswith("metro_") and len(key1) > 40
    assert {k.key_hash for k in stored} == {hash_api_key(key1), hash_api_key(key2)}
    assert all(key1 not in (k.key_hash, k.prefix) for k in stored)
    for key in (key1, key2):
        assert client.get("/v1/jobs", headers={"Authorization": f"Bearer {key}"}).status_code == 200


def test_blank_tenant_name_is_refused(app):
    with app.state.sessionmaker() as session, pytest.raises(ValueError):
        create_api_key(session, "   ")
