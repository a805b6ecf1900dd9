"""Organizations run themselves (identity/organizations/): invitations, the organization's audit trail, retried
creates of the management API, and what members and clients need for it.

- ``invitations``: an invitation to join an organization, mailed as a single-use link (only the SHA-256 of its
  token is kept, as for every link).
- ``organization_events``: the organization's audit trail, which its members read in the console and its
  clients with ``manage:audit``.
- ``idempotency_keys``: the answer to a create of the management API, kept a day under its ``Idempotency-Key``
  (sealed: it may carry a client's secret or an API key).
- ``memberships.version`` and ``clients.version``: moved on by every change, for the ``ETag`` of each (a lost
  update is refused with 412). Existing rows start at 0.
- ``clients.previous_secret_hash`` and ``clients.previous_secret_expires_at``: a rotated secret keeps working
  until then (``MENUS_CLIENT_SECRET_GRACE``). Existing clients have none.
- ``users.last_sign_in_at``: when the user last gave their credentials (the members list); unknown (NULL) for
  sign-ins before this revision.

Revision ID: 0012_organizations
Revises: 0011_outbound_internal
Create Date: 2026-11-28
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012_organizations"
down_revision: str | Sequence[str] | None = "0011_outbound_internal"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Timestamp = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "invitations",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("org_id", sa.String(32), sa.ForeignKey("organizations.id", ondelete="CASCADE"), nullable=False),
        sa.Column("email", sa.String(320), nullable=False),
        sa.Column("email_key", sa.String(320), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("invited_by", sa.String(32), nullable=True),
        sa.Column("invited_by_client", sa.String(32), nullable=True),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.Column("expires_at", Timestamp, nullable=False),
        sa.Column("last_sent_at", Timestamp, nullable=False),
        sa.Column("sends", sa.Integer, nullable=False),
        sa.Column("accepted_at", Timestamp, nullable=True),
        sa.Column("accepted_by", sa.String(32), nullable=True),
        sa.Column("revoked_at", Timestamp, nullable=True),
    )
    op.create_index("ix_invitations_org_id_created_at", "invitations", ["org_id", "created_at"])
    op.create_index("ix_invitations_expires_at", "invitations", ["expires_at"])
    op.create_table(
        "organization_events",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("org_id", sa.String(32), sa.ForeignKey("organizations.id", ondelete="CASCADE"), nullable=False),
        sa.Column("at", Timestamp, nullable=False),
        sa.Column("kind", sa.String(40), nullable=False),
        sa.Column("actor_kind", sa.String(16), nullable=False),
        sa.Column("actor_id", sa.String(32), nullable=True),
        sa.Column("network", sa.String(64), nullable=True),
        sa.Column("subject", sa.String(40), nullable=True),
        sa.Column("details", sa.JSON, nullable=False),
    )
    op.create_index("ix_organization_events_org_id_at", "organization_events", ["org_id", "at"])
    op.create_index("ix_organization_events_org_id_kind_at", "organization_events", ["org_id", "kind", "at"])
    op.create_table(
        "idempotency_keys",
        sa.Column("org_id", sa.String(32), primary_key=True),
        sa.Column("key_hash", sa.String(64), primary_key=True),
        sa.Column("operation", sa.String(60), nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("status", sa.Integer, nullable=False),
        sa.Column("answer", sa.Text, nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.Column("expires_at", Timestamp, nullable=False),
    )
    op.create_index("ix_idempotency_keys_expires_at", "idempotency_keys", ["expires_at"])
    # ADD COLUMN in place, never a batch copy (as 0008 says: a batch copy on SQLite would cascade to referring rows).
    op.add_column("memberships", sa.Column("version", sa.Integer, nullable=False, server_default="0"))
    op.add_column("clients", sa.Column("version", sa.Integer, nullable=False, server_default="0"))
    op.add_column("clients", sa.Column("previous_secret_hash", sa.String(64), nullable=True))
    op.add_column("clients", sa.Column("previous_secret_expires_at", Timestamp, nullable=True))
    op.add_column("users", sa.Column("last_sign_in_at", Timestamp, nullable=True))


def downgrade() -> None:
    for table, column in (
        ("users", "last_sign_in_at"),
        ("clients", "previous_secret_expires_at"),
        ("clients", "previous_secret_hash"),
        ("clients", "version"),
        ("memberships", "version"),
    ):
        op.execute(f"ALTER TABLE {table} DROP COLUMN {column}")  # in place too (SQLite 3.35 and later)
    op.drop_index("ix_idempotency_keys_expires_at", table_name="idempotency_keys")
    op.drop_table("idempotency_keys")
    op.drop_index("ix_organization_events_org_id_kind_at", table_name="organization_events")
    op.drop_index("ix_organization_events_org_id_at", table_name="organization_events")
    op.drop_table("organization_events")
    op.drop_index("ix_invitations_expires_at", table_name="invitations")
    op.drop_index("ix_invitations_org_id_created_at", table_name="invitations")
    op.drop_table("invitations")
