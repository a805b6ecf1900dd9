"""The mail outbox (identity/mail/outbox.py), single-use mailed links (identity/mail/email_links.py) and users'
verified addresses (every existing user starts unverified, as the ``email_verified`` claim said).

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    timestamp = sa.DateTime(timezone=True)
    op.create_table(
        "mail_outbox",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("kind", sa.String(40), nullable=False),
        sa.Column("recipient", sa.String(320), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(12), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", timestamp, nullable=False),
        sa.Column("claimed_until", timestamp, nullable=False),
        sa.Column("claim_token", sa.String(32), nullable=True),
        sa.Column("last_error", sa.String(200), nullable=True),
        sa.Column("created_at", timestamp, nullable=False),
        sa.Column("sent_at", timestamp, nullable=True),
    )
    op.create_index("ix_mail_outbox_due", "mail_outbox", ["status", "next_attempt_at"])
    op.create_table(
        "email_links",
        sa.Column("token_hash", sa.String(64), primary_key=True),
        sa.Column("purpose", sa.String(20), nullable=False),
        sa.Column("user_id", sa.String(32), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("email_key", sa.String(320), nullable=False),
        sa.Column("created_at", timestamp, nullable=False),
        sa.Column("expires_at", timestamp, nullable=False),
        sa.Column("used_at", timestamp, nullable=True),
    )
    op.create_index("ix_email_links_expires_at", "email_links", ["expires_at"])
    # ADD COLUMN in place, never a batch copy: on SQLite (foreign keys on) dropping the old users table would
    # cascade to memberships, consents and sessions.
    op.add_column("users", sa.Column("email_verified", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    op.execute("ALTER TABLE users DROP COLUMN email_verified")  # in place too (SQLite 3.35 and later)
    op.drop_index("ix_email_links_expires_at", table_name="email_links")
    op.drop_table("email_links")
    op.drop_index("ix_mail_outbox_due", table_name="mail_outbox")
    op.drop_table("mail_outbox")
