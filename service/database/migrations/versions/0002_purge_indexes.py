"""Index expires_at where expired rows are purged (identity/purge.py).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("access_tokens", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_access_tokens_expires_at"), ["expires_at"], unique=False)

    with op.batch_alter_table("authorization_codes", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_authorization_codes_expires_at"), ["expires_at"], unique=False)

    with op.batch_alter_table("browser_sessions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_browser_sessions_expires_at"), ["expires_at"], unique=False)

    with op.batch_alter_table("interactions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_interactions_expires_at"), ["expires_at"], unique=False)

    with op.batch_alter_table("refresh_tokens", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_refresh_tokens_expires_at"), ["expires_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("refresh_tokens", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_refresh_tokens_expires_at"))

    with op.batch_alter_table("interactions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_interactions_expires_at"))

    with op.batch_alter_table("browser_sessions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_browser_sessions_expires_at"))

    with op.batch_alter_table("authorization_codes", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_authorization_codes_expires_at"))

    with op.batch_alter_table("access_tokens", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_access_tokens_expires_at"))
