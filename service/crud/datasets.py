"""Uploaded datasets, and the stored objects they share.

Identical bytes of a tenant are stored once (:mod:`core.datasets.storage`); every dataset row
holding them has the object's location as its ``storage_path``, and the object has a row of its
own in ``stored_objects``. That row is the lock of the bytes' lifecycle:

* an upload locks it (creating it if need be) before it looks whether the bytes are stored, and
  keeps the lock until its dataset row is committed;
* a delete locks the dataset row, then the object's row, and removes the bytes only when no other
  dataset points to them, while it still holds the lock.

So a delete and a same-bytes upload are serialized in the database, and a delete can never remove
bytes that a dataset committed meanwhile points to. A submission locks the dataset row it names
for share (:func:`get_dataset` with ``lock="share"``) until its job is committed, so a delete
either sees that job (and is refused, 409) or has removed the row first (the submission is then
refused like any unknown dataset).

On PostgreSQL these are row locks. SQLite has none, but serializes writers: every critical
section here begins with a write (the upsert of the object's row), which takes the database's
write lock, and reads again what it decides on after that.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Literal

from sqlalchemy import delete, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from core.db.models import Dataset, Job, StoredObject
from core.errors import ConflictError, FieldError, InvalidInputError, NotFoundError
from core.states import JobState
from service.crud.pagination import newest_first_page

# Jobs that will still read their dataset.
_READING = (JobState.QUEUED.value, JobState.RUNNING.value, JobState.CANCELLING.value)

logger = logging.getLogger(__name__)


def add_dataset(session: Session, dataset: Dataset) -> Dataset:
    session.add(dataset)
    session.commit()
    return dataset


def get_dataset(
    session: Session,
    tenant_id: uuid.UUID,
    dataset_id: uuid.UUID,
    *,
    lock: Literal["share", "update"] | None = None,
) -> Dataset:
    """The tenant's dataset, or NotFoundError (another tenant's is not found either).

    ``lock="share"`` holds it until the transaction ends against a concurrent delete (a job
    submission); ``lock="update"`` is the delete's own lock. PostgreSQL only: see the module.
    """
    stmt = select(Dataset).where(Dataset.id == dataset_id, Dataset.tenant_id == tenant_id)
    if lock is not None:
        stmt = stmt.with_for_update(read=lock == "share")
    dataset = session.scalar(stmt)
    if dataset is None:
        raise NotFoundError("dataset", dataset_id)
    return dataset


def unknown_dataset(ident: object) -> InvalidInputError:
    """The answer to a job naming a dataset:// that this tenant does not have (never had, was
    deleted, or is another tenant's: the three are not told apart)."""
    return InvalidInputError(
        "Invalid job",
        [
            FieldError(
                ("body", "dataset", "uri"),
                f"no dataset {str(ident)!r}; upload it with POST /v1/datasets first",
            )
        ],
    )


def dataset_exists(session: Session, tenant_id: uuid.UUID, dataset_id: uuid.UUID) -> bool:
    return (
        session.scalar(
            select(Dataset.id).where(Dataset.id == dataset_id, Dataset.tenant_id == tenant_id)
        )
        is not None
    )


def list_datasets(
    session: Session,
    tenant_id: uuid.UUID,
    *,
    cursor: str | None,
    limit: int,
    sha256: str | None = None,
) -> tuple[list[Dataset], str | None]:
    stmt = select(Dataset).where(Dataset.tenant_id == tenant_id)
    if sha256 is not None:
        stmt = stmt.where(Dataset.sha256 == sha256)
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


def lock_stored_object(
    session: Session, *, tenant_id: uuid.UUID, location: str, sha256: str, size_bytes: int
) -> None:
    """Lock the stored object's row until the transaction ends, creating it if it is not there.

    One statement, INSERT ... ON CONFLICT DO UPDATE: on PostgreSQL it waits for and then locks
    an existing row (or inserts a new one, if a concurrent delete removed it); on SQLite it is
    the write that takes the database's write lock.
    """
    insert = postgresql.insert if session.get_bind().dialect.name == "postgresql" else sqlite.insert
    stmt = insert(StoredObject).values(
        id=uuid.uuid4(), tenant_id=tenant_id, location=location, sha256=sha256,
        size_bytes=size_bytes,
    )  # fmt: skip
    session.execute(
        stmt.on_conflict_do_update(
            index_elements=[StoredObject.location], set_={"size_bytes": stmt.excluded.size_bytes}
        )
    )


def delete_dataset(
    session: Session,
    tenant_id: uuid.UUID,
    dataset_id: uuid.UUID,
    *,
    remove_bytes: Callable[[str], None],
) -> None:
    """Delete the dataset's row, and its stored bytes (``remove_bytes(location)``) when no other
    dataset of the tenant points to them. The row goes first, in its own transaction; the bytes
    after it, under the object's lock (:func:`remove_unused_bytes`). A failure between the two
    leaves bytes no dataset names (storage, which the next upload of the same bytes reuses), never
    a dataset without its bytes: a commit that failed after the bytes were removed did that.

    Refused while a queued or running job will still read it (a 409): the job would fail.
    Finished jobs keep their ``dataset_uri`` for the record; their ``dataset_id`` becomes NULL.
    """
    dataset = get_dataset(session, tenant_id, dataset_id, lock="update")
    location = dataset.storage_path
    lock_stored_object(
        session, tenant_id=tenant_id, location=location, sha256=dataset.sha256,
        size_bytes=dataset.size_bytes,
    )  # fmt: skip
    # Decided on what is committed now that this transaction holds the locks (SQLite: read
    # again after the write lock; a concurrent delete of the same row may have won).
    if not dataset_exists(session, tenant_id, dataset_id):
        session.rollback()
        raise NotFoundError("dataset", dataset_id)
    readers = session.scalar(
        select(func.count(Job.id)).where(
            Job.tenant_id == tenant_id, Job.dataset_id == dataset_id, Job.state.in_(_READING)
        )
    )
    if readers:
        session.rollback()
        raise ConflictError(
            f"dataset {dataset_id} is used by {readers} queued or running job(s); "
            "cancel them or wait for them to finish"
        )
    sha256, size_bytes = dataset.sha256, dataset.size_bytes
    session.delete(dataset)
    session.commit()
    try:
        remove_unused_bytes(
            session, tenant_id, location, sha256=sha256, size_bytes=size_bytes,
            remove_bytes=remove_bytes,
        )  # fmt: skip
    except Exception:  # the dataset is gone, as answered; its bytes wait for their next use
        session.rollback()
        logger.warning("dataset %s deleted; its bytes at %s were not", dataset_id, location,
                       exc_info=True)  # fmt: skip


def remove_unused_bytes(
    session: Session,
    tenant_id: uuid.UUID,
    location: str,
    *,
    sha256: str,
    size_bytes: int,
    remove_bytes: Callable[[str], None],
) -> bool:
    """Remove the stored bytes at ``location`` and their object row if no dataset of the tenant
    points to them, deciding under the object's lock, which an upload of the same bytes takes
    too: an upload either comes first (the bytes stay, in use) or after (it stores them again).
    True if they were removed. The bytes go before the commit: if removing them fails, the row
    that accounts for them stays."""
    lock_stored_object(
        session, tenant_id=tenant_id, location=location, sha256=sha256, size_bytes=size_bytes
    )
    if location_in_use(session, tenant_id, location):
        session.rollback()
        return False
    session.execute(delete(StoredObject).where(StoredObject.location == location))
    session.flush()
    remove_bytes(location)
    session.commit()
    return True
