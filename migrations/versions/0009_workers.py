"""workers: each worker process and the queues it serves, as it last said

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-29 02:45:00

A job on a queue no worker serves (``training.device: cuda`` with only CPU workers, or no
worker at all) waited in ``queued`` without a word. Workers now write a row when they start and
at each reconcile round, and remove it when they stop; the API reads the rows to say why a
queued job waits.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "workers",
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("queues", sa.String(length=255), nullable=False),
        sa.Column("seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_workers")),
    )


def downgrade() -> None:
    op.drop_table("workers")
