"""Accounts people can keep: disabled users, and clients that require a verified email address.

- ``users.disabled_at``: set by ``users disable``, cleared by ``users enable``; every existing user starts
  enabled (NULL). A disabled user cannot sign in, and no token is issued or served for them.
- ``clients.require_verified_email``: ``clients create --require-verified-email``; existing clients do not.
- ``interactions.verification_sent``: the paused sign-in already mailed its verification link.
- ``email_links.interaction_id``: the sign-in a verification link resumes (docs/identity.md, "Clients that
  require a verified address"); NULL for links sent without one.

Revision ID: 0008_accounts
Revises: 0007_backchannel_logout
Create Date: 2026-11-26
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008_accounts"
down_revision: str | Sequence[str] | None = "0007_backchannel_logout"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# ADD COLUMN in place, never a batch copy: on SQLite (foreign keys on) dropping an old table would cascade to
# the rows that refer to it (as in 0006). DROP COLUMN in place too (SQLite 3.35 and later).
ADDED: tuple[tuple[str, sa.Column[object]], ...] = (
    ("users", sa.Column("disabled_at", sa.DateTime(timezone=True), nullable=True)),
    ("clients", sa.Column("require_verified_email", sa.Boolean(), nullable=False, server_default=sa.false())),
    ("interactions", sa.Column("verification_sent", sa.Boolean(), nullable=False, server_default=sa.false())),
    ("email_links", sa.Column("interaction_id", sa.String(64), nullable=True)),
)


def upgrade() -> None:
    for table, column in ADDED:
        op.add_column(table, column)


def downgrade() -> None:
    for table, column in reversed(ADDED):
        op.execute(f"ALTER TABLE {table} DROP COLUMN {column.name}")
