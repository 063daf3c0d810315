"""SQLAlchemy 2 models: tenants and API keys, datasets, jobs, lambda steps, metric results and
trained models. Every tenant-owned table carries ``tenant_id`` so that each query can be scoped.

Timestamps are set by Python (not server defaults) so that SQLite and PostgreSQL hold the same
values and cursor pagination on ``(created_at, id)`` behaves identically on both.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from core.db.base import Base, PortableJSON, utcnow
from core.states import FitState, JobState

_JOB_STATES = ", ".join(f"'{s.value}'" for s in JobState)
_FIT_STATES = ", ".join(f"'{s.value}'" for s in FitState)
METHODS = ("metro", "erm", "koyejo1", "koyejo2", "parambath")
SPLITS = ("validation", "test")


class Tenant(Base):
    __tablename__ = "tenants"

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    api_keys: Mapped[list[ApiKey]] = relationship(back_populates="tenant")


class ApiKey(Base):
    """Only a SHA-256 of the key is stored; see :mod:`service.security` for why that suffices."""

    __tablename__ = "api_keys"

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    # The first characters of the key, so an operator can tell keys apart without the secret.
    prefix: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(default=None)
    # Refused from then on, as if revoked (null: until revoked). Rotation by policy: a key made
    # with a life cannot be forgotten in a client for years.
    expires_at: Mapped[datetime | None] = mapped_column(default=None)

    tenant: Mapped[Tenant] = relationship(back_populates="api_keys")


class Dataset(Base):
    __tablename__ = "datasets"
    __table_args__ = (Index("ix_datasets_tenant_created", "tenant_id", "created_at", "id"),)

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    filename: Mapped[str] = mapped_column(String(255))
    format: Mapped[str] = mapped_column(String(16))
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    sha256: Mapped[str] = mapped_column(String(64))
    # Where the bytes live (under METRO_UPLOAD_DIR); internal, never returned to clients.
    storage_path: Mapped[str] = mapped_column(Text)
    n_rows: Mapped[int | None] = mapped_column(BigInteger, default=None)
    n_columns: Mapped[int | None] = mapped_column(Integer, default=None)
    columns: Mapped[list[str] | None] = mapped_column(PortableJSON, default=None)
    # The label column the upload was checked with, and its two classes as the file holds them
    # ([negative, positive] as metro read them): a job naming that column is checked against
    # them at submission (its positive_label), not only when a worker loads the file.
    label_column: Mapped[str | None] = mapped_column(String(255), default=None)
    labels: Mapped[list[Any] | None] = mapped_column(PortableJSON, default=None)
    # Or the several 0/1 label columns (multi-label) it was checked with; and the columns the
    # check left out of the features. Shown with the dataset: what its check vouches for.
    label_columns: Mapped[list[str] | None] = mapped_column(PortableJSON, default=None)
    ignore_columns: Mapped[list[str] | None] = mapped_column(PortableJSON, default=None)
    # What the check warned of ({code, message}: a feature that looks like an id), or None.
    warnings: Mapped[list[dict[str, str]] | None] = mapped_column(PortableJSON, default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    @property
    def uri(self) -> str:
        return f"dataset://{self.id}"


class StoredObject(Base):
    """One stored upload object (a tenant's bytes with one SHA-256), shared by every dataset row
    whose ``storage_path`` is its ``location``.

    Its row is the lock that serializes what touches those bytes: an upload of the same bytes
    and the deletion of the last dataset holding them both lock it (``service.crud.datasets``),
    so a delete never removes bytes that a dataset committed meanwhile points to.
    """

    __tablename__ = "stored_objects"

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    location: Mapped[str] = mapped_column(Text, unique=True)
    sha256: Mapped[str] = mapped_column(String(64))
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Job(Base):
    __tablename__ = "jobs"
    __table_args__ = (
        CheckConstraint(f"state IN ({_JOB_STATES})", name="state"),
        CheckConstraint("progress >= 0 AND progress <= 1", name="progress"),
        # One key per tenant; NULLs (no header) do not collide on either backend.
        UniqueConstraint("tenant_id", "idempotency_key"),
        Index("ix_jobs_tenant_created", "tenant_id", "created_at", "id"),
        # What a worker polls: the oldest queued jobs, and expired leases.
        Index("ix_jobs_state_created", "state", "created_at"),
    )

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    state: Mapped[str] = mapped_column(String(16), default=JobState.QUEUED.value)
    # The normalized spec: every default filled in, as the workers will run it.
    spec: Mapped[dict[str, Any]]
    dataset_uri: Mapped[str] = mapped_column(Text)
    dataset_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("datasets.id", ondelete="SET NULL"), default=None
    )
    idempotency_key: Mapped[str | None] = mapped_column(String(255), default=None)
    # SHA-256 of the normalized spec, to tell a retried submission from a reused key.
    request_hash: Mapped[str] = mapped_column(String(64))

    attempts: Mapped[int] = mapped_column(Integer, default=0)
    max_attempts: Mapped[int] = mapped_column(Integer, default=3)
    lease_owner: Mapped[str | None] = mapped_column(String(255), default=None)
    lease_expires_at: Mapped[datetime | None] = mapped_column(default=None)
    heartbeat_at: Mapped[datetime | None] = mapped_column(default=None)
    # When a message for this job was last handed to the broker (the reconciler re-sends one for
    # a queued job that has none); and the grid shard size fixed at the first claim, so every
    # attempt and every worker splits the lambda grid the same way.
    enqueued_at: Mapped[datetime | None] = mapped_column(default=None)
    shard_size: Mapped[int | None] = mapped_column(Integer, default=None)

    progress: Mapped[float] = mapped_column(Float, default=0.0)
    current_lambda: Mapped[float | None] = mapped_column(Float, default=None)
    best_lambda: Mapped[float | None] = mapped_column(Float, default=None)
    failure_reason: Mapped[str | None] = mapped_column(Text, default=None)
    # The SHA-256 of the data the job trains on, pinned by its first load (store.pin_job_data):
    # every later attempt and every helper must load the same (migrations 0007).
    data_sha256: Mapped[str | None] = mapped_column(String(64), default=None)
    # What each finished repeat's search chose (core.records.RepeatChoice), in
    # repeat order; null until the first repeat's search is done.
    choices: Mapped[list[dict[str, Any]] | None] = mapped_column(PortableJSON, default=None)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)

    started_at: Mapped[datetime | None] = mapped_column(default=None)
    finished_at: Mapped[datetime | None] = mapped_column(default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class LambdaStep(Base):
    """One point of the lambda search. Unique per (job, repeat, step) so that a worker retrying a
    write after a lost acknowledgement cannot record the same point twice."""

    __tablename__ = "lambda_steps"
    __table_args__ = (UniqueConstraint("job_id", "repeat", "step"),)

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    job_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    repeat: Mapped[int] = mapped_column(Integer)
    step: Mapped[int] = mapped_column(Integer)
    fold: Mapped[int | None] = mapped_column(Integer, default=None)
    method: Mapped[str] = mapped_column(String(32), default="metro")
    lambda_: Mapped[float] = mapped_column("lambda", Float)
    # The cost shift of the fit ("minimal" or "paper", see metro.costs).
    shift: Mapped[str | None] = mapped_column(String(16), default=None)
    surrogate_loss: Mapped[float | None] = mapped_column(Float, default=None)
    l_lambda: Mapped[float | None] = mapped_column(Float, default=None)
    train_metric: Mapped[float | None] = mapped_column(Float, default=None)
    validation_metric: Mapped[float | None] = mapped_column(Float, default=None)
    seconds: Mapped[float | None] = mapped_column(Float, default=None)
    # Under constraints: the constrained grid's multiplier of the fit, and each constraint's
    # value where validation_metric is measured (null: an unconstrained job).
    mu: Mapped[float | None] = mapped_column(Float, default=None)
    constraint_values: Mapped[list[float | None] | None] = mapped_column(PortableJSON, default=None)
    # An averaged job (metric.average): the class (label) whose search this step is of, by its
    # position in the job's classes and its value; null for a binary job.
    class_index: Mapped[int | None] = mapped_column(Integer, default=None)
    label: Mapped[Any] = mapped_column(PortableJSON, nullable=True, default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class JobFit(Base):
    """One fit of a job's lambda search: a shard of the grid, or one step of a sequential search.

    ``key`` names it by its place in the search (``r<repeat>/<role>/c<call>/s<shard>``), so a
    restarted job finds the fits it already has (its weights are in the artifact store under
    ``artifact``) instead of recomputing them, and several workers can share one grid search by
    claiming shards with a lease (compare-and-set on ``state`` and ``lease_expires_at``).
    """

    __tablename__ = "job_fits"
    __table_args__ = (
        UniqueConstraint("job_id", "key"),
        CheckConstraint(f"state IN ({_FIT_STATES})", name="state"),
    )

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    job_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(128))
    repeat: Mapped[int] = mapped_column(Integer)
    role: Mapped[str] = mapped_column(String(16))
    shift: Mapped[str] = mapped_column(String(16))
    lambdas: Mapped[list[float]] = mapped_column(PortableJSON)
    # The Lagrange multipliers of the constraints, one row per lambda (null: no constraints):
    # as much a part of what the fit is as its lambdas.
    multipliers: Mapped[list[list[float]] | None] = mapped_column(PortableJSON, default=None)
    # Grid shards have no warm start and can be fitted by any worker; sequential steps cannot.
    shareable: Mapped[bool] = mapped_column(Boolean, default=False)
    state: Mapped[str] = mapped_column(String(16), default=FitState.PENDING.value)
    lease_owner: Mapped[str | None] = mapped_column(String(255), default=None)
    lease_expires_at: Mapped[datetime | None] = mapped_column(default=None)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    artifact: Mapped[str | None] = mapped_column(Text, default=None)
    sha256: Mapped[str | None] = mapped_column(String(64), default=None)
    surrogate_loss: Mapped[list[float] | None] = mapped_column(PortableJSON, default=None)
    seconds: Mapped[float | None] = mapped_column(Float, default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class MetricResult(Base):
    """The final metric of one method on one split of one repeat, with its confusion counts."""

    __tablename__ = "metric_results"
    __table_args__ = (
        UniqueConstraint("job_id", "method", "repeat", "split", "class_index"),
        CheckConstraint(f"split IN ({', '.join(repr(s) for s in SPLITS)})", name="split"),
    )

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    job_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    method: Mapped[str] = mapped_column(String(32))
    repeat: Mapped[int] = mapped_column(Integer)
    split: Mapped[str] = mapped_column(String(16))
    metric_value: Mapped[float] = mapped_column(Float)
    tp: Mapped[int] = mapped_column(BigInteger)
    fp: Mapped[int] = mapped_column(BigInteger)
    fn: Mapped[int] = mapped_column(BigInteger)
    tn: Mapped[int] = mapped_column(BigInteger)
    lambda_: Mapped[float | None] = mapped_column("lambda", Float, default=None)
    # Under constraints: each one's value on this split, in the spec's order, and whether all
    # of them hold there (null: an unconstrained job).
    constraint_values: Mapped[list[float | None] | None] = mapped_column(PortableJSON, default=None)
    constraints_hold: Mapped[bool | None] = mapped_column(Boolean, default=None)
    # An averaged job's per-class (per-label) rows: the class's position in the job's classes
    # and its value. Part of the unique key, so never null: -1 is the job's own figure (a
    # binary job's metric, or an averaged job's average, whose counts are summed over classes).
    class_index: Mapped[int] = mapped_column(Integer, default=-1, server_default="-1")
    label: Mapped[Any] = mapped_column(PortableJSON, nullable=True, default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Model(Base):
    """A trained model: a directory (or object-store prefix) in the artifact store holding
    ``model.safetensors``, ``manifest.json`` and ``model.onnx`` (see :mod:`metro.serialization`)."""

    __tablename__ = "models"
    __table_args__ = (Index("ix_models_tenant_created", "tenant_id", "created_at", "id"),)

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    job_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("jobs.id", ondelete="SET NULL"), default=None
    )
    artifact_uri: Mapped[str] = mapped_column(Text)
    format: Mapped[str] = mapped_column(String(32), default="safetensors")
    has_onnx: Mapped[bool] = mapped_column(Boolean, default=False)
    sha256: Mapped[str] = mapped_column(String(64))
    manifest: Mapped[dict[str, Any]]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class WorkerBeat(Base):
    """A worker process and the queues it serves, as it last said: each worker writes its row
    when it starts and at each reconcile round, and removes it when it stops. A queued job
    whose queue no recent row serves is waiting for a worker that is not there (a ``cuda`` job
    with no GPU worker), which the API tells its owner instead of leaving it silent."""

    __tablename__ = "workers"

    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    queues: Mapped[str] = mapped_column(String(255))  # the kinds it serves: "cpu" or "gpu,cpu"
    seen_at: Mapped[datetime] = mapped_column(default=utcnow)


class AdminAction(StrEnum):
    """What an audit record (:class:`AdminRecord`) says an operator did."""

    CREATE_KEY = "create-key"
    REVOKE_KEY = "revoke-key"
    PRUNE_JOBS = "prune-jobs"
    DELETE_TENANT = "delete-tenant"


_ADMIN_ACTIONS = ", ".join(f"'{a.value}'" for a in AdminAction)


class AdminRecord(Base):
    """One operator action of ``metro admin`` (a key created or revoked, jobs pruned, a tenant
    deleted): when, by whom, on which tenant, and what it did. Kept when the tenant is gone (no
    foreign key: its id and name are copied), so an off-boarding stays on record; written in the
    action's own transaction where there is one, so a change is never left without its record."""

    __tablename__ = "admin_records"
    __table_args__ = (
        CheckConstraint(f"action IN ({_ADMIN_ACTIONS})", name="action"),
        Index("ix_admin_records_at", "at", "id"),
        Index("ix_admin_records_tenant", "tenant_name", "at"),
    )

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    at: Mapped[datetime] = mapped_column(default=utcnow)
    action: Mapped[str] = mapped_column(String(32))
    # Who ran it, as the machine knows them ("alice@host", "root (sudo by alice)@host"); null
    # where the caller did not say (the library called directly, not the command line).
    operator: Mapped[str | None] = mapped_column(String(255), default=None)
    tenant_name: Mapped[str | None] = mapped_column(String(200), default=None)
    tenant_id: Mapped[uuid.UUID | None] = mapped_column(default=None)
    # What it did: counts, ids, a key's prefix (never a key).
    detail: Mapped[dict[str, Any]] = mapped_column(PortableJSON, default=dict)
