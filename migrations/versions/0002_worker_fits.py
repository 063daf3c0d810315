"""workers: job fits (resume and grid shards), enqueue time, shard size, shift as a name

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-26 05:00:00

``job_fits`` records every fit of a job's lambda search (a grid shard or one sequential step) with
a lease, so a restarted job reuses the fits it has and several workers share one grid. The lambda
steps' ``shift`` holds the cost shift's name ("minimal" / "paper"), as the library reports it.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> sa.types.TypeEngine:
    return sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "job_fits",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("job_id", sa.Uuid(), nullable=False),
        sa.Column("key", sa.String(length=128), nullable=False),
        sa.Column("repeat", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("shift", sa.String(length=16), nullable=False),
        sa.Column("lambdas", _json(), nullable=False),
        sa.Column("shareable", sa.Boolean(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("lease_owner", sa.String(length=255), nullable=True),
        sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("artifact", sa.Text(), nullable=True),
        sa.Column("sha256", sa.String(length=64), nullable=True),
        sa.Column("surrogate_loss", _json(), nullable=True),
        sa.Column("seconds", sa.Float(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "state IN ('pending', 'running', 'done')", name=op.f("ck_job_fits_state")
        ),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_job_fits_job_id_jobs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_job_fits")),
        sa.UniqueConstraint("job_id", "key", name=op.f("uq_job_fits_job_id_key")),
    )
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("enqueued_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("shard_size", sa.Integer(), nullable=True))
    with op.batch_alter_table("lambda_steps") as batch:
        batch.alter_column(
            "shift",
            existing_type=sa.Float(),
            type_=sa.String(length=16),
            existing_nullable=True,
            postgresql_using="shift::text",
        )


def downgrade() -> None:
    with op.batch_alter_table("lambda_steps") as batch:
        batch.alter_column(
            "shift",
            existing_type=sa.String(length=16),
            type_=sa.Float(),
            existing_nullable=True,
            postgresql_using="NULL",
        )
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("shard_size")
        batch.drop_column("enqueued_at")
    op.drop_table("job_fits")
