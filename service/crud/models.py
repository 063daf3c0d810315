"""Trained models. Workers register them (``register_model``); the API reads and deletes them."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from core.db.models import Model
from core.errors import NotFoundError
from service.crud.pagination import newest_first_page


def register_model(
    session: Session,
    *,
    tenant_id: uuid.UUID,
    job_id: uuid.UUID | None,
    artifact_uri: str,
    sha256: str,
    manifest: dict[str, Any],
    has_onnx: bool = False,
) -> Model:
    model = Model(
        tenant_id=tenant_id,
        job_id=job_id,
        artifact_uri=artifact_uri,
        sha256=sha256,
        manifest=manifest,
        has_onnx=has_onnx,
    )
    session.add(model)
    session.commit()
    return model


def get_model(session: Session, tenant_id: uuid.UUID, model_id: uuid.UUID) -> Model:
    model = session.scalar(select(Model).where(Model.id == model_id, Model.tenant_id == tenant_id))
    if model is None:
        raise NotFoundError("model", model_id)
    return model


def list_models(
    session: Session,
    tenant_id: uuid.UUID,
    *,
    cursor: str | None,
    limit: int,
    job_id: uuid.UUID | None = None,
) -> tuple[list[Model], str | None]:
    stmt = select(Model).where(Model.tenant_id == tenant_id)
    if job_id is not None:
        stmt = stmt.where(Model.job_id == job_id)
    return newest_first_page(session, stmt, Model, cursor, limit)


def delete_model(session: Session, tenant_id: uuid.UUID, model_id: uuid.UUID) -> str:
    """Delete the tenant's model row and return where its files are (the caller removes them
    after this commit: a failure between the two leaves files no row names, never a row
    without its files)."""
    model = session.scalar(
        select(Model).where(Model.id == model_id, Model.tenant_id == tenant_id).with_for_update()
    )
    if model is None:
        session.rollback()
        raise NotFoundError("model", model_id)
    where = model.artifact_uri
    session.delete(model)
    session.commit()
    return where
