"""OpenID Connect Back-Channel Logout 1.0: clients' back-channel logout URIs, the clients that hold each
browser session, and the outbox's channels (mail, and logout tokens posted to clients).

Clients registered before this revision have no back-channel logout URI (they are sent no logout token);
every message already in the outbox is mail. Sessions started before it have no recorded holders, so their
sign-out tells no client: the holders are recorded from this revision on, at each code redeemed.

Revision ID: 0007_backchannel_logout
Revises: 0006
Create Date: 2026-11-26
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007_backchannel_logout"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # ADD COLUMN in place, never a batch copy: on SQLite (foreign keys on) dropping the old clients table would
    # cascade to consents.
    op.add_column("clients", sa.Column("backchannel_logout_uri", sa.String(2000), nullable=True))
    op.add_column(
        "clients",
        sa.Column("backchannel_logout_session_required", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.add_column("mail_outbox", sa.Column("channel", sa.String(20), nullable=False, server_default="mail"))
    op.create_table(
        "session_clients",
        sa.Column("session_id", sa.String(40), primary_key=True),
        sa.Column("client_id", sa.String(32), primary_key=True),
        sa.Column("user_id", sa.String(32), nullable=False),
        sa.Column("held_since", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_session_clients_user_id", "session_clients", ["user_id"])


def downgrade() -> None:
    op.drop_index("ix_session_clients_user_id", table_name="session_clients")
    op.drop_table("session_clients")
    # in place too (SQLite 3.35 and later)
    op.execute("ALTER TABLE mail_outbox DROP COLUMN channel")
    op.execute("ALTER TABLE clients DROP COLUMN backchannel_logout_session_required")
    op.execute("ALTER TABLE clients DROP COLUMN backchannel_logout_uri")
