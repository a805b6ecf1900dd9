"""Disabled users: ``users disable`` sets ``disabled_at``, ``users enable`` clears it.

Every existing user starts enabled (NULL). A disabled user cannot sign in, and no token is issued or
served for them (docs/identity.md, "Disabled users").

Revision ID: 0007_disabled_users
Revises: 0006
Create Date: 2026-11-26
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007_disabled_users"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # ADD COLUMN in place, never a batch copy: on SQLite (foreign keys on) dropping the old users table would
    # cascade to memberships, consents and sessions (as in 0006).
    op.add_column("users", sa.Column("disabled_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    op.execute("ALTER TABLE users DROP COLUMN disabled_at")  # in place too (SQLite 3.35 and later)
