"""Organizations run their own connection (identity/federation/administration.py), and logout tokens are single-use.

- ``federation_connections.domains``: the claimed domains a connection covers; NULL (every connection before this
  revision) covers every domain the organization claims.
- ``federation_logout_tokens``: the logout tokens a provider sent, by the SHA-256 of its issuer and the token's
  ``jti``, kept until the token's expiry so that a replay is refused on every node; purged once expired.

Revision ID: 0014_federation_administration
Revises: 0013_federation
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014_federation_administration"
down_revision: str | Sequence[str] | None = "0013_federation"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # ADD COLUMN in place, never a batch copy (0008: a batch copy on SQLite would cascade to referring rows).
    op.add_column("federation_connections", sa.Column("domains", sa.JSON(none_as_null=True), nullable=True))
    op.create_table(
        "federation_logout_tokens",
        sa.Column("token_hash", sa.String(64), primary_key=True),
        sa.Column("org_id", sa.String(32), sa.ForeignKey("organizations.id", ondelete="CASCADE"), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_federation_logout_tokens_expires_at", "federation_logout_tokens", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_federation_logout_tokens_expires_at", table_name="federation_logout_tokens")
    op.drop_table("federation_logout_tokens")
    op.execute("ALTER TABLE federation_connections DROP COLUMN domains")
