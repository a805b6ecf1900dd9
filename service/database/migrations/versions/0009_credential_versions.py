"""Credential versions: a new password, a reset or a disable ends what the old credential started, even mid-race.

- ``users.credential_version``: moves on (by one) with every password change, reset and disable, in the
  transaction that ends the user's sessions and tokens (docs/identity.md, "Credential versions").
- ``browser_sessions.credential_version``: the version the session's sign-in verified; the session is inserted
  only while that version is current, and lives only while it still is.
- ``authorization_codes``, ``refresh_tokens``, ``access_tokens``: the version of the session they were issued in;
  redemption, refresh, userinfo and introspection refuse one that is no longer current.
- ``email_links.credential_version``: the version a password-reset link was issued for; it opens only while that
  version is current, so using one link (or any change of password) ends every other.

Every existing row gets 0, every user's version today: what was live before stays live.

Revision ID: 0009_credential_versions
Revises: 0008_accounts
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009_credential_versions"
down_revision: str | Sequence[str] | None = "0008_accounts"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("users", "browser_sessions", "authorization_codes", "refresh_tokens", "access_tokens", "email_links")


def _column() -> sa.Column[int]:
    return sa.Column("credential_version", sa.Integer(), nullable=False, server_default="0")


# ADD COLUMN in place, never a batch copy (as in 0008): on SQLite, dropping an old table would cascade to the rows
# that refer to it. DROP COLUMN in place too (SQLite 3.35 and later).
def upgrade() -> None:
    for table in TABLES:
        op.add_column(table, _column())


def downgrade() -> None:
    for table in reversed(TABLES):
        op.execute(f"ALTER TABLE {table} DROP COLUMN credential_version")
