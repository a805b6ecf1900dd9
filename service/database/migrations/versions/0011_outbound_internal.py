"""Outbound URIs an operator allowed to be internal (identity/common/outbound_uris.py).

- ``clients.backchannel_logout_internal``: ``clients create/update --allow-internal`` registered the client's
  back-channel logout URI although it reaches a loopback, private or unique-local address; delivery then allows
  those addresses for this client alone. Existing clients do not.

Revision ID: 0011_outbound_internal
Revises: 0010_link_return_to
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011_outbound_internal"
down_revision: str | Sequence[str] | None = "0010_link_return_to"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# ADD COLUMN in place, never a batch copy (as 0008 says: a batch copy on SQLite would cascade to referring rows).
COLUMN: sa.Column[bool] = sa.Column(
    "backchannel_logout_internal", sa.Boolean(), nullable=False, server_default=sa.false()
)


def upgrade() -> None:
    op.add_column("clients", COLUMN)


def downgrade() -> None:
    op.execute("ALTER TABLE clients DROP COLUMN backchannel_logout_internal")
