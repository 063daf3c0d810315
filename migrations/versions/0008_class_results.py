"""class results: the per-class (per-label) rows of a job averaged over several classes

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-27 11:00:00

A job with ``metric.average`` (macro-F1 and its kin over a multi-class or multi-label target)
trains one search per class. Its trace steps and metric results carry the class they belong to:
``class_index`` (its position in the job's classes) and ``label`` (the class's value, or the
label column's name, as JSON so that 1 stays a number and "1" text). A metric result's
``class_index`` is part of its unique key, so it is never null: -1 marks the job's own figure
(a binary job's metric, or an averaged job's average), as every row stored before.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_OLD_KEY = "uq_metric_results_job_id_method_repeat_split"
_NEW_KEY = "uq_metric_results_job_id_method_repeat_split_class_index"


def _json() -> sa.types.TypeEngine[object]:
    return sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("metric_results") as batch:
        batch.add_column(
            sa.Column("class_index", sa.Integer(), nullable=False, server_default="-1")
        )
        batch.add_column(sa.Column("label", _json(), nullable=True))
        batch.drop_constraint(_OLD_KEY, type_="unique")
        batch.create_unique_constraint(
            _NEW_KEY, ["job_id", "method", "repeat", "split", "class_index"]
        )
    with op.batch_alter_table("lambda_steps") as batch:
        batch.add_column(sa.Column("class_index", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("label", _json(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("lambda_steps") as batch:
        batch.drop_column("label")
        batch.drop_column("class_index")
    op.execute("DELETE FROM metric_results WHERE class_index <> -1")
    with op.batch_alter_table("metric_results") as batch:
        batch.drop_constraint(_NEW_KEY, type_="unique")
        batch.create_unique_constraint(_OLD_KEY, ["job_id", "method", "repeat", "split"])
        batch.drop_column("label")
        batch.drop_column("class_index")
