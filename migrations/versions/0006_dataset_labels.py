"""dataset labels: the label column an upload was checked with, and its two classes

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-27 02:00:00

An upload given a ``label_column`` is loaded as a job will load it; its two classes are now kept
(``datasets.labels``, with ``datasets.label_column``), so a job naming that column with a
``positive_label`` that is not one of them is refused at submission instead of failing on a
worker. Null for uploads made before, and for uploads without a label column.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> sa.types.TypeEngine:
    return sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("datasets") as batch:
        batch.add_column(sa.Column("label_column", sa.String(length=255), nullable=True))
        batch.add_column(sa.Column("labels", _json(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("datasets") as batch:
        batch.drop_column("labels")
        batch.drop_column("label_column")
