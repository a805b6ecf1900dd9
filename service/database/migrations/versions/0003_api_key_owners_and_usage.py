"""API keys belong to organizations; per-key usage by day and status class.

Keys made before this revision belong to no organization (``org_id`` NULL) and keep
working: the menus API checks only the key. They have no recorded creator or prefix;
only the command line lists and revokes them. ``api_key_usage`` holds request counts
per key, UTC day and status class, written in batches (identity/api_keys/usage.py).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.add_column(sa.Column("org_id", sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column("created_by", sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column("prefix", sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.create_index(batch_op.f("ix_api_keys_org_id"), ["org_id"], unique=False)
        batch_op.create_foreign_key(
            batch_op.f("fk_api_keys_org_id_organizations"), "organizations", ["org_id"], ["id"], ondelete="CASCADE"
        )

    op.create_table(
        "api_key_usage",
        sa.Column("key_id", sa.String(length=32), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("status_class", sa.SmallInteger(), nullable=False),
        sa.Column("requests", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["key_id"], ["api_keys.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("key_id", "day", "status_class"),
    )


def downgrade() -> None:
    op.drop_table("api_key_usage")
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_api_keys_org_id_organizations"), type_="foreignkey")
        batch_op.drop_index(batch_op.f("ix_api_keys_org_id"))
        batch_op.drop_column("last_used_at")
        batch_op.drop_column("prefix")
        batch_op.drop_column("created_by")
        batch_op.drop_column("org_id")
