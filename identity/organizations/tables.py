"""The tables of identity/organizations/ (SQLAlchemy Core), on the service's shared metadata (migration 0012)."""

import sqlalchemy as sa

from identity.common.database import metadata

Timestamp = sa.DateTime(timezone=True)

invitations = sa.Table(
    "invitations",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("org_id", sa.String(32), sa.ForeignKey("organizations.id", ondelete="CASCADE"), nullable=False),
    sa.Column("email", sa.String(320), nullable=False),
    sa.Column("email_key", sa.String(320), nullable=False),  # casefolded, as users.email_key
    sa.Column("role", sa.String(16), nullable=False),
    sa.Column("token_hash", sa.String(64), nullable=False, unique=True),  # SHA-256 of the link's token
    sa.Column("invited_by", sa.String(32), nullable=True),  # a user id
    sa.Column("invited_by_client", sa.String(32), nullable=True),  # or a client id
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("expires_at", Timestamp, nullable=False),
    sa.Column("last_sent_at", Timestamp, nullable=False),
    sa.Column("sends", sa.Integer, nullable=False),
    sa.Column("accepted_at", Timestamp, nullable=True),
    sa.Column("accepted_by", sa.String(32), nullable=True),
    sa.Column("revoked_at", Timestamp, nullable=True),
    sa.Index("ix_invitations_org_id_created_at", "org_id", "created_at"),
    sa.Index("ix_invitations_expires_at", "expires_at"),
)

organization_events = sa.Table(
    "organization_events",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("org_id", sa.String(32), sa.ForeignKey("organizations.id", ondelete="CASCADE"), nullable=False),
    sa.Column("at", Timestamp, nullable=False),
    sa.Column("kind", sa.String(40), nullable=False),
    sa.Column("actor_kind", sa.String(16), nullable=False),  # user, client or command_line
    sa.Column("actor_id", sa.String(32), nullable=True),
    sa.Column("network", sa.String(64), nullable=True),  # the request's address, after the trusted proxies
    sa.Column("subject", sa.String(40), nullable=True),  # the id of what was acted on
    sa.Column("details", sa.JSON, nullable=False),
    sa.Index("ix_organization_events_org_id_at", "org_id", "at"),
    sa.Index("ix_organization_events_org_id_kind_at", "org_id", "kind", "at"),
)

idempotency_keys = sa.Table(
    "idempotency_keys",
    metadata,
    sa.Column("org_id", sa.String(32), primary_key=True),
    sa.Column("key_hash", sa.String(64), primary_key=True),  # SHA-256 of the key the client chose
    sa.Column("operation", sa.String(60), nullable=False),
    sa.Column("fingerprint", sa.String(64), nullable=False),  # SHA-256 of the request (operation and body)
    sa.Column("status", sa.Integer, nullable=False),
    sa.Column("answer", sa.Text, nullable=False),  # the answer's JSON, sealed
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("expires_at", Timestamp, nullable=False),
    sa.Index("ix_idempotency_keys_expires_at", "expires_at"),
)
