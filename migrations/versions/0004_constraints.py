"""constraints: the multipliers of a fit, mu and constraint values in the trace and the results

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-09 10:00:00

A job may constrain other ratio metrics ("recall at least 0.9"). ``job_fits.multipliers`` holds
the Lagrange multipliers a fit was trained with (a row per lambda), part of what the fit is, like
its lambdas; ``lambda_steps`` gains the constrained grid's multiplier ``mu`` of each point and the
constraints' values there; ``metric_results`` each constraint's value on the split and whether all
of them hold. All null for an unconstrained job.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> sa.types.TypeEngine:
    return sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("job_fits") as batch:
        batch.add_column(sa.Column("multipliers", _json(), nullable=True))
    with op.batch_alter_table("lambda_steps") as batch:
        batch.add_column(sa.Column("mu", sa.Float(), nullable=True))
        batch.add_column(sa.Column("constraint_values", _json(), nullable=True))
    with op.batch_alter_table("metric_results") as batch:
        batch.add_column(sa.Column("constraint_values", _json(), nullable=True))
        batch.add_column(sa.Column("constraints_hold", sa.Boolean(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("metric_results") as batch:
        batch.drop_column("constraints_hold")
        batch.drop_column("constraint_values")
    with op.batch_alter_table("lambda_steps") as batch:
        batch.drop_column("constraint_values")
        batch.drop_column("mu")
    with op.batch_alter_table("job_fits") as batch:
        batch.drop_column("multipliers")
