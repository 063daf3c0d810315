"""job data digest: the content of the data a job trains on, pinned by its first load

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-27 07:00:00

A job's data is loaded again by every attempt and by every worker that helps with its grid. For a
``file://``, ``s3://`` or ``https://`` dataset the bytes behind the URI can change while the job
runs; without a record of what the job started on, fits of two versions of the data would be
mixed in one search without a word. The first load pins ``jobs.data_sha256`` (the SHA-256 of the
loaded features and labels); a later load that differs fails the job, and a helper that differs
stops. Null for jobs stored before, and until a worker has loaded the data.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("data_sha256", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("data_sha256")
