"""Operator actions the CLI exposes (``metro admin create-key | list-keys | revoke-key |
prune-jobs | delete-tenant | audit-log``).

Each action that changes something writes an audit record (:class:`core.db.models.AdminRecord`:
when, who, which tenant, what it did) in its own transaction where it has one, so no change is
committed without its record. ``operator`` is who ran it, as the command line finds them."""

from __future__ import annotations

import time
import unicodedata
import uuid
from collections.abc import Callable, Collection
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from core.artifacts import job_dir, remove_tree
from core.db.base import utcnow
from core.db.models import (
    AdminAction,
    AdminRecord,
    ApiKey,
    Dataset,
    Job,
    Model,
    StoredObject,
    Tenant,
)
from core.errors import ConflictError, NotFoundError
from core.states import TERMINAL_STATES, JobState
from service.crud.datasets import delete_dataset, remove_unused_bytes
from service.crud.jobs import cancel_job, delete_job
from service.crud.models import delete_model
from service.crud.tenants import add_api_key, get_or_create_tenant
from service.security import generate_api_key, hash_api_key

# What prune_jobs deletes unless told otherwise: jobs that delivered no model. A succeeded job's
# models may still be predicted with, so pruning them is asked for by name.
PRUNED_BY_DEFAULT = (JobState.FAILED, JobState.CANCELLED)
# The most job ids one audit record lists (a record's size stays bounded; its count is whole).
MAX_RECORDED_IDS = 1000


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
    expires_at: datetime | None = None  # refused from then on; None: until revoked


# The tenants table's name column (String(200)): past it PostgreSQL refused the insert with a
# traceback, while SQLite kept 5,000 characters.
MAX_TENANT_NAME = 200


def check_tenant_name(tenant_name: str) -> str:
    """``tenant_name`` stripped, or ValueError: empty, longer than MAX_TENANT_NAME, or holding a
    control or format character (a NUL, an escape, a right-to-left override that shows
    ``evil\u202eotn`` as another name in every listing)."""
    name = tenant_name.strip()
    if not name:
        raise ValueError("tenant name must not be empty")
    if len(name) > MAX_TENANT_NAME:
        raise ValueError(f"tenant name is {len(name)} characters, more than {MAX_TENANT_NAME}")
    # C*: controls, format characters (bidi overrides, zero widths), unassigned; Zl and Zp:
    # line and paragraph separators, which break a listing's line.
    hidden = [ch for ch in name if unicodedata.category(ch)[0] == "C" or ch in "\u2028\u2029"]
    if hidden:
        raise ValueError(
            f"tenant name holds the control or format character {hidden[0]!a}: names are "
            "printable text"
        )
    return name


def create_api_key(
    session: Session,
    tenant_name: str,
    *,
    operator: str | None = None,
    expires_at: datetime | None = None,
) -> str:
    """Create an API key for ``tenant_name`` (creating the tenant if needed) and return it.

    The plaintext key exists only in the return value: the database keeps its SHA-256 (see
    :mod:`service.security`), so a lost key cannot be shown again, only replaced.
    ``expires_at``: refused from then on, as if revoked (None: until revoked).
    """
    if expires_at is not None and (expires_at.tzinfo is None or expires_at <= utcnow()):
        raise ValueError("a key's expiry must be a time to come, with its time zone")
    name = tenant_name.strip()
    if (
        not name or tenant_id(session, name) is None
    ):  # a tenant named before the rule keeps its name, and gets keys
        name = check_tenant_name(tenant_name)
    tenant = get_or_create_tenant(session, name)
    key = generate_api_key()
    stored = add_api_key(session, tenant.id, key, expires_at=expires_at)
    detail: dict[str, Any] = {"prefix": stored.prefix}
    if expires_at is not None:
        detail["expires_at"] = expires_at.isoformat()
    _record(session, AdminAction.CREATE_KEY, operator=operator, tenant=tenant, detail=detail)
    session.commit()
    return key


def list_api_keys(session: Session, tenant_name: str | None = None) -> list[KeyInfo]:
    """Every key (of one tenant, when named), oldest first."""
    query = select(ApiKey, Tenant).join(Tenant, Tenant.id == ApiKey.tenant_id)
    if tenant_name is not None:
        query = query.where(Tenant.name == tenant_name.strip())
    rows = session.execute(query.order_by(ApiKey.created_at, ApiKey.id)).all()
    return [_info(key, tenant) for key, tenant in rows]


def revoke_api_key(session: Session, key_or_prefix: str, *, operator: str | None = None) -> KeyInfo:
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
    tenant = session.get_one(Tenant, key.tenant_id)
    if key.revoked_at is None:  # a revocation of a revoked key changes nothing, and is not one
        key.revoked_at = utcnow()
        _record(
            session, AdminAction.REVOKE_KEY, operator=operator, tenant=tenant,
            detail={"prefix": key.prefix},
        )  # fmt: skip
        session.commit()
    return _info(key, tenant)


@dataclass(frozen=True)
class PrunedJob:
    id: uuid.UUID
    tenant: str
    state: str
    finished_at: datetime
    models: int


def prune_jobs(
    session: Session,
    *,
    finished_before: datetime,
    artifacts_uri: str,
    states: Collection[JobState] = PRUNED_BY_DEFAULT,
    tenant_name: str | None = None,
    dry_run: bool = False,
    operator: str | None = None,
) -> list[PrunedJob]:
    """Delete the jobs in ``states`` that finished before ``finished_before`` (of one tenant,
    when named), oldest first, each as its owner's ``DELETE /v1/jobs/{id}`` deletes it: its
    rows (trace, results, recorded fits, models), then its files in the store. Nothing else
    removes a finished job, so a deployment's tables and store grew with every job its tenants
    left. ``dry_run``: only what would go. A job deleted meanwhile is skipped. As
    with a DELETE through another API process, a prediction with a pruned model may still be
    answered for METRO_MODEL_REF_CACHE_SECONDS."""
    unfinished = sorted(s.value for s in states if s not in TERMINAL_STATES)
    if unfinished:
        raise ValueError(f"only finished jobs are pruned, not {', '.join(unfinished)} ones")
    if not states:
        raise ValueError("name at least one state to prune")
    owner_id = None if tenant_name is None else tenant_id(session, tenant_name)
    if tenant_name is not None and owner_id is None:
        # A misspelt name in a cron line pruned nothing, and said it had done so.
        raise ValueError(f"no tenant is named {tenant_name.strip()!r}")
    finished = func.coalesce(Job.finished_at, Job.created_at)  # (rows from before finished_at)
    query = (
        select(Job.id, Job.tenant_id, Job.state, finished, Tenant.name)
        .join(Tenant, Tenant.id == Job.tenant_id)
        .where(Job.state.in_([s.value for s in states]), finished < finished_before)
        .order_by(finished, Job.id)
    )
    if owner_id is not None:
        query = query.where(Job.tenant_id == owner_id)
    found = session.execute(query).all()
    session.rollback()  # no transaction held while the jobs are deleted one by one

    def record(jobs: list[PrunedJob], *, phase: str, interrupted: str | None = None) -> None:
        _record_prune(
            session, jobs, operator=operator, tenant_name=tenant_name, owner_id=owner_id,
            states=states, finished_before=finished_before, phase=phase, interrupted=interrupted,
        )  # fmt: skip

    if found and not dry_run:
        # On record before the first job goes, in its own commit: a run killed part-way
        # (SIGKILL, the machine lost) writes no end record, and so left no record at all.
        listed = [PrunedJob(job_id, name, state, at, 0) for job_id, _, state, at, name in found]
        record(listed, phase="started")
    pruned: list[PrunedJob] = []
    try:
        for job_id, owner, state, at, tenant in found:
            if dry_run:
                models = session.scalar(select(func.count()).where(Model.job_id == job_id)) or 0
                session.rollback()
                pruned.append(PrunedJob(job_id, tenant, state, at, int(models)))
                continue
            try:
                models = len(delete_job(session, owner, job_id))
            except (NotFoundError, ConflictError):  # deleted meanwhile (a finished job stays so)
                continue
            # Listed once its rows are gone, before its files: a store that refuses them
            # (the error below ends the run) leaves a deletion that is still on record.
            pruned.append(PrunedJob(job_id, tenant, state, at, int(models)))
            # After the commit, as the API's delete: a failure between the two leaves files no
            # row names, never a row without its files.
            remove_tree(artifacts_uri, job_dir(job_id))
    except BaseException as exc:
        if found and not dry_run:
            # Each job's delete committed on its own: the jobs deleted before the error are
            # gone, and go on record (the record says the run was cut short, and by what).
            session.rollback()
            record(pruned, phase="finished", interrupted=f"{type(exc).__name__}: {exc}"[:500])
        raise
    if found and not dry_run:
        # The run's end, with what it deleted (no transaction spans the jobs' deletes; an
        # error part-way records those deleted before it, above). Written also where every
        # job went meanwhile: the started record has its end.
        record(pruned, phase="finished")
    return pruned


def _record_prune(
    session: Session,
    pruned: list[PrunedJob],
    *,
    operator: str | None,
    tenant_name: str | None,
    owner_id: uuid.UUID | None,
    states: Collection[JobState],
    finished_before: datetime,
    phase: str,
    interrupted: str | None = None,
) -> None:
    """A prune run's record: as it starts (``phase`` "started"), the jobs it found to delete;
    as it ends ("finished"), the jobs it deleted and their models."""
    detail: dict[str, Any] = {
        "phase": phase,
        "jobs": len(pruned),
        "states": sorted(s.value for s in states),
        "finished_before": finished_before.isoformat(),
        "job_ids": [str(job.id) for job in pruned[:MAX_RECORDED_IDS]],
    }
    if phase != "started":  # counted as each job goes
        detail["models"] = sum(job.models for job in pruned)
    if interrupted is not None:
        detail["interrupted"] = interrupted
    _record(
        session, AdminAction.PRUNE_JOBS, operator=operator,
        tenant_name=None if tenant_name is None else tenant_name.strip(), tenant_id=owner_id,
        detail=detail,
    )  # fmt: skip
    session.commit()


@dataclass(frozen=True)
class TenantDeletion:
    """What ``delete_tenant`` did (or, dry, would do) to one tenant."""

    tenant: str
    tenant_id: uuid.UUID
    keys_revoked: int
    jobs_cancelled: int  # asked to stop: a running one ends at its worker's next step
    jobs_deleted: int
    models_deleted: int
    datasets_deleted: int
    # Jobs a worker has not yet stopped (and the datasets they read): nothing of theirs was
    # deleted, and neither was the tenant; the same command again finishes the work.
    still_running: int
    removed: bool  # the tenant's row, its keys with it: its name is free


def delete_tenant(
    session: Session,
    tenant_name: str,
    *,
    artifacts_uri: str,
    remove_bytes: Callable[[str], None],
    dry_run: bool = False,
    key_cache_seconds: float = 0.0,
    operator: str | None = None,
) -> TenantDeletion:
    """Off-board a tenant: revoke its keys, cancel its unfinished jobs, then delete every job,
    model and dataset it has (rows, then files, each as its owner's DELETE does: stored bytes
    another of its datasets still names stay until that one goes) and finally the tenant
    itself. Jobs that a worker is still stopping are left, with the datasets they read, and
    so is the tenant: run it again once they have ended (``still_running`` says how many).
    Idempotent: each step skips what is gone already. ``key_cache_seconds``: how long to wait
    after revoking the keys (METRO_API_KEY_CACHE_SECONDS: until no API process accepts them).

    The keys are revoked first, in their own commit, and the key caches let go of them before
    anything is deleted, so the tenant adds nothing while its data goes (a request taken just
    before keeps the tenant, and the next run takes what it added). The tenant's row goes
    last, under its lock, and only where no row of the tenant is left. Files it named outside
    the service's stores (METRO_DATA_ROOTS, METRO_DATA_URI_PREFIXES) are the operator's and
    stay."""
    owner = tenant_id(session, tenant_name)
    if owner is None:
        raise ValueError(f"no tenant is named {tenant_name.strip()!r}")
    name = session.get_one(Tenant, owner).name

    def owned(column: Any, *where: Any) -> list[uuid.UUID]:
        ids = list(session.scalars(select(column).where(*where).order_by(column)))
        session.rollback()
        return ids

    live_keys = owned(ApiKey.id, ApiKey.tenant_id == owner, ApiKey.revoked_at.is_(None))
    unfinished_states = [s.value for s in JobState if s not in TERMINAL_STATES]
    unfinished = owned(Job.id, Job.tenant_id == owner, Job.state.in_(unfinished_states))
    if dry_run:  # everything would go unless a worker is still running one of its jobs
        running = [JobState.RUNNING.value, JobState.CANCELLING.value]
        busy = owned(Job.id, Job.tenant_id == owner, Job.state.in_(running))
        jobs = owned(Job.id, Job.tenant_id == owner, Job.id.not_in(busy))
        models = owned(Model.id, Model.tenant_id == owner)
        read = select(Job.dataset_id).where(Job.id.in_(busy), Job.dataset_id.is_not(None))
        datasets = owned(Dataset.id, Dataset.tenant_id == owner, Dataset.id.not_in(read))
        return TenantDeletion(
            name, owner, keys_revoked=len(live_keys), jobs_cancelled=len(unfinished),
            jobs_deleted=len(jobs), models_deleted=len(models), datasets_deleted=len(datasets),
            still_running=len(busy), removed=not busy,
        )  # fmt: skip

    # On record before anything changes, in the keys' commit: a run cut short after it is
    # still known to have begun (the record of its end says what it did).
    tenant_row = session.get_one(Tenant, owner)
    _record(
        session, AdminAction.DELETE_TENANT, operator=operator, tenant=tenant_row,
        detail={"phase": "started", "keys_revoked": len(live_keys)},
    )  # fmt: skip
    if live_keys:
        now = utcnow()
        for key in session.scalars(select(ApiKey).where(ApiKey.id.in_(live_keys))):
            key.revoked_at = now
    session.commit()
    if live_keys:
        # Until every API process's key cache lets go of the keys, a request may still be
        # taken in the tenant's name: its writes would keep the tenant, or (once it is gone)
        # end in a foreign-key error, a 500.
        time.sleep(key_cache_seconds)
    for job_id in unfinished:  # a queued job is cancelled at once, a running one asked to stop
        try:
            cancel_job(session, owner, job_id)
        except (ConflictError, NotFoundError):  # it ended meanwhile
            session.rollback()
    still = owned(Job.id, Job.tenant_id == owner, Job.state.in_(unfinished_states))

    jobs_deleted = models_deleted = datasets_deleted = 0
    for job_id in owned(Job.id, Job.tenant_id == owner, Job.state.not_in(unfinished_states)):
        try:
            models_deleted += len(delete_job(session, owner, job_id))
        except (NotFoundError, ConflictError):  # deleted, or (never) restarted, meanwhile
            session.rollback()
            continue
        remove_tree(artifacts_uri, job_dir(job_id))  # after the commit, as the API's delete
        jobs_deleted += 1
    for model_id in owned(Model.id, Model.tenant_id == owner, Model.job_id.is_(None)):
        try:
            where = delete_model(session, owner, model_id)
        except NotFoundError:
            continue
        remove_tree(artifacts_uri, where)
        models_deleted += 1
    for dataset_id in owned(Dataset.id, Dataset.tenant_id == owner):
        try:
            delete_dataset(session, owner, dataset_id, remove_bytes=remove_bytes)
        except NotFoundError:
            continue
        except ConflictError:  # read by a job its worker is still stopping
            session.rollback()
            continue
        datasets_deleted += 1
    # Bytes no dataset names any more: an earlier delete (this one's, or the API's) that
    # removed the row but not its bytes left them, and their row kept the tenant for ever.
    leftovers = session.execute(
        select(StoredObject.location, StoredObject.sha256, StoredObject.size_bytes).where(
            StoredObject.tenant_id == owner
        )
    ).all()
    session.rollback()
    for location, sha256, size_bytes in leftovers:
        try:
            remove_unused_bytes(
                session, owner, location, sha256=sha256, size_bytes=size_bytes,
                remove_bytes=remove_bytes,
            )  # fmt: skip
        except Exception:  # the store refused again: the tenant stays, and says why below
            session.rollback()

    removed = not still and _remove_if_empty(session, owner)
    deletion = TenantDeletion(
        name, owner, keys_revoked=len(live_keys), jobs_cancelled=len(unfinished),
        jobs_deleted=jobs_deleted, models_deleted=models_deleted,
        datasets_deleted=datasets_deleted, still_running=len(still), removed=removed,
    )  # fmt: skip
    counts = {k: v for k, v in asdict(deletion).items() if k not in ("tenant", "tenant_id")}
    _record(
        session, AdminAction.DELETE_TENANT, operator=operator, tenant_name=name,
        tenant_id=owner, detail={"phase": "finished", **counts},
    )  # fmt: skip
    session.commit()
    return deletion


def _remove_if_empty(session: Session, owner: uuid.UUID) -> bool:
    """Delete the tenant's row and its keys where no job, model, dataset or stored object of it
    is left, deciding under the row's lock (FOR UPDATE: an upload or a submission holds it
    FOR NO KEY UPDATE while it adds a row, so one under way finishes first and is seen)."""
    if session.get_bind().dialect.name == "sqlite":
        # No row locks, and no transaction before the first write: a write that changes
        # nothing takes the database's write lock first, so nothing lands between the check
        # and the delete (the cascade would have removed a row just answered 201).
        session.execute(update(Tenant).where(Tenant.id == owner).values(name=Tenant.name))
    else:
        session.scalar(select(Tenant.id).where(Tenant.id == owner).with_for_update())
    for table in (Job, Model, Dataset, StoredObject):
        if session.scalar(select(table.id).where(table.tenant_id == owner).limit(1)) is not None:
            session.rollback()
            return False
    # The keys by name, not by a cascade the database may not enforce
    session.execute(delete(ApiKey).where(ApiKey.tenant_id == owner))
    session.execute(delete(Tenant).where(Tenant.id == owner))
    session.commit()
    return True


def tenant_id(session: Session, tenant_name: str) -> uuid.UUID | None:
    """The id of the tenant named ``tenant_name``, None where there is none."""
    return session.scalars(select(Tenant.id).where(Tenant.name == tenant_name.strip())).first()


def _info(key: ApiKey, tenant: Tenant) -> KeyInfo:
    return KeyInfo(
        id=key.id, tenant=tenant.name, tenant_id=tenant.id, prefix=key.prefix,
        created_at=key.created_at, revoked_at=key.revoked_at, expires_at=key.expires_at,
    )  # fmt: skip


def _record(
    session: Session,
    action: AdminAction,
    *,
    operator: str | None,
    tenant: Tenant | None = None,
    tenant_name: str | None = None,
    tenant_id: uuid.UUID | None = None,
    detail: dict[str, Any],
) -> None:
    """Add an audit record to the session's transaction (the caller commits it with the
    change it records)."""
    if tenant is not None:
        tenant_name, tenant_id = tenant.name, tenant.id
    session.add(
        AdminRecord(
            action=action.value, operator=operator, tenant_name=tenant_name,
            tenant_id=tenant_id, detail=detail,
        )
    )  # fmt: skip


@dataclass(frozen=True)
class AuditEntry:
    """One audit record as ``metro admin audit-log`` shows it."""

    at: datetime
    action: AdminAction
    operator: str | None
    tenant: str | None
    tenant_id: uuid.UUID | None
    detail: dict[str, Any]


def audit_log(
    session: Session, *, tenant_name: str | None = None, limit: int = 50
) -> list[AuditEntry]:
    """The newest ``limit`` audit records, newest first (of one tenant, by name, when named:
    a deleted tenant's records included)."""
    if limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit}")
    query = select(AdminRecord).order_by(AdminRecord.at.desc(), AdminRecord.id.desc())
    if tenant_name is not None:
        query = query.where(AdminRecord.tenant_name == tenant_name.strip())
    rows = session.scalars(query.limit(limit)).all()
    return [
        AuditEntry(
            at=r.at,
            action=AdminAction(r.action),
            operator=r.operator,
            tenant=r.tenant_name,
            tenant_id=r.tenant_id,
            detail=dict(r.detail),
        )
        for r in rows
    ]
