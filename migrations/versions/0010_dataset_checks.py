"""dataset checks: the label columns and ignored columns an upload was checked with, and what
the check warned of

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-29 09:30:00

An upload may now be checked as a multi-label job reads it (``label_columns``, several 0/1
columns), so that a column holding anything else is refused at upload rather than on a worker
after a job was accepted. The columns it was checked with (``label_columns``, ``ignore_columns``)
and the check's warnings (``warnings``: a feature that looks like an id) are kept with the
dataset and shown with it. Null for uploads made before, and for uploads checked without them.
A downgrade drops the three columns: what the checks recorded is lost, the uploads are not.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> sa.types.TypeEngine:
    return sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("datasets") as batch:
        batch.add_column(sa.Column("label_columns", _json(), nullable=True))
        batch.add_column(sa.Column("ignore_columns", _json(), nullable=True))
        batch.add_column(sa.Column("warnings", _json(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("datasets") as batch:
        batch.drop_column("warnings")
        batch.drop_column("ignore_columns")
        batch.drop_column("label_columns")
