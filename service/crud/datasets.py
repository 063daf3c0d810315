"""Uploaded datasets."""

from __future__ import annotations

import uuid

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from core.db.models import Dataset, Job
from core.errors import ConflictError, NotFoundError
from core.states import JobState
from service.crud.pagination import newest_first_page

# Jobs that will still read their dataset.
_READING = (JobState.QUEUED.value, JobState.RUNNING.value, JobState.CANCELLING.value)


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


def stored_bytes(session: Session, tenant_id: uuid.UUID) -> int:
    """What the tenant's uploads take in the store: each stored object once, however many
    datasets point to it."""
    per_object = (
        select(Dataset.storage_path, func.max(Dataset.size_bytes).label("size"))
        .where(Dataset.tenant_id == tenant_id)
        .group_by(Dataset.storage_path)
        .subquery()
    )
    return int(session.scalar(select(func.coalesce(func.sum(per_object.c.size), 0))) or 0)


def location_in_use(session: Session, tenant_id: uuid.UUID, storage_path: str) -> bool:
    return (
        session.scalar(
            select(Dataset.id)
            .where(Dataset.tenant_id == tenant_id, Dataset.storage_path == storage_path)
            .limit(1)
        )
        is not None
    )


def delete_dataset(session: Session, tenant_id: uuid.UUID, dataset_id: uuid.UUID) -> str | None:
    """Delete the dataset's row; returns its stored location when no other dataset of the tenant
    points to it (the caller removes the object then), else None.

    Refused while a queued or running job will still read it (a 409): the job would fail.
    Finished jobs keep their ``dataset_uri`` for the record; their ``dataset_id`` becomes NULL.
    """
    dataset = get_dataset(session, tenant_id, dataset_id)
    readers = session.scalar(
        select(func.count(Job.id)).where(
            Job.tenant_id == tenant_id, Job.dataset_id == dataset_id, Job.state.in_(_READING)
        )
    )
    if readers:
        raise ConflictError(
            f"dataset {dataset_id} is used by {readers} queued or running job(s); "
            "cancel them or wait for them to finish"
        )
    location = dataset.storage_path
    session.delete(dataset)
    session.flush()
    shared = location_in_use(session, tenant_id, location)
    session.commit()
    return None if shared else location
