"""Uploaded datasets."""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.crud.pagination import newest_first_page
from service.db.models import Dataset
from service.errors import NotFoundError


def add_dataset(session: Session, dataset: Dataset) -> Dataset:
    session.add(dataset)
    session.commit()
    return dataset


def get_dataset(session: Session, tenant_id: uuid.UUID, dataset_id: uuid.UUID) -> Dataset:
    dataset = session.scalar(
        select(Dataset).where(Dataset.id == dataset_id, Dataset.tenant_id == tenant_id)
    )
    if dataset is None:
        raise NotFoundError("dataset", dataset_id)
    return dataset


def list_datasets(
    session: Session, tenant_id: uuid.UUID, *, cursor: str | None, limit: int
) -> tuple[list[Dataset], str | None]:
    stmt = select(Dataset).where(Dataset.tenant_id == tenant_id)
    return newest_first_page(session, stmt, Dataset, cursor, limit)
