"""stored objects: one row per stored upload object, the lock its datasets' lifecycle takes

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-27 01:00:00

Identical uploads of a tenant share one stored object. Its row in ``stored_objects`` is what an
upload of the same bytes and the deletion of the last dataset holding them lock, so the two are
serialized in the database and a delete never removes bytes a new dataset points to. Existing
datasets get their objects' rows here.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "stored_objects",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("location", sa.Text(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_stored_objects_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_stored_objects")),
        sa.UniqueConstraint("location", name=op.f("uq_stored_objects_location")),
    )
    # One row per distinct stored location of the existing datasets, with a new id: generated
    # by each database (the Uuid type is a native uuid on PostgreSQL, 32 hex digits on SQLite).
    new_id = (
        "gen_random_uuid()"
        if op.get_bind().dialect.name == "postgresql"
        else ("lower(hex(randomblob(16)))")
    )
    op.execute(
        "INSERT INTO stored_objects (id, tenant_id, location, sha256, size_bytes, created_at) "
        f"SELECT {new_id}, tenant_id, storage_path, MIN(sha256), MAX(size_bytes), "
        "MIN(created_at) FROM datasets GROUP BY tenant_id, storage_path"
    )


def downgrade() -> None:
    op.drop_table("stored_objects")
