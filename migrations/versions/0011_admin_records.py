"""admin records: an audit trail of what operators did with ``metro admin``; keys that expire

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-30 01:10:00

Creating and revoking keys, pruning jobs and deleting a tenant left no trace but their effects:
after an off-boarding nothing said who deleted the tenant, when, or what went with it. Each
such action now writes a row of ``admin_records`` (when, who, which tenant, what it did), in the
action's own transaction where it has one. The rows name the tenant by copy, not by a foreign
key, so they outlive it. An API key may now be given a life (``api_keys.expires_at``; null:
until revoked, as every key before). A downgrade drops the table and the trail with it, and the
keys' expiry: keys that had one are then valid until revoked.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# As core.db.models.AdminAction is today: a migration does not follow later code.
ACTIONS = ("create-key", "revoke-key", "prune-jobs", "delete-tenant")


def _json() -> sa.types.TypeEngine:
    return sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    listed = ", ".join(f"'{a}'" for a in ACTIONS)
    op.create_table(
        "admin_records",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("action", sa.String(length=32), nullable=False),
        sa.Column("operator", sa.String(length=255), nullable=True),
        sa.Column("tenant_name", sa.String(length=200), nullable=True),
        sa.Column("tenant_id", sa.Uuid(), nullable=True),
        sa.Column("detail", _json(), nullable=False),
        sa.CheckConstraint(f"action IN ({listed})", name=op.f("ck_admin_records_action")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_admin_records")),
    )
    op.create_index("ix_admin_records_at", "admin_records", ["at", "id"])
    op.create_index("ix_admin_records_tenant", "admin_records", ["tenant_name", "at"])
    with op.batch_alter_table("api_keys") as batch:
        batch.add_column(sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("api_keys") as batch:
        batch.drop_column("expires_at")
    op.drop_index("ix_admin_records_tenant", table_name="admin_records")
    op.drop_index("ix_admin_records_at", table_name="admin_records")
    op.drop_table("admin_records")
