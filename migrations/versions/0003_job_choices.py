"""jobs: what each repeat's search chose (trained lambda, shift, ratio reached, warnings)

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02 10:00:00

``jobs.choices`` holds, per repeat, the lambda and cost shift its model was trained with, the
ratio a bisection or Dinkelbach search reached, the tuned threshold, the score the choice was
made by (and on which split) and the search's warnings. Null until a repeat's search is done.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    json_type = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("choices", json_type, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("choices")
