"""Sign-in through an organization's own OpenID provider (identity/federation/).

- ``federation_domains``: the email domains an operator confirmed an organization may claim (``orgs claim-domain``);
  a domain is held by one organization at most.
- ``federation_connections``: an organization's one upstream provider: its issuer and validated discovery, our
  client id there and the client secret (sealed with MENUS_SECRET_KEYS), the scopes asked for, the default role of
  the members it makes, and whether its members' passwords still sign them in (``sso_required``).
- ``federated_identities``: accounts bound to a provider's (``iss``, ``sub``), found by the SHA-256 of the pair.
- ``federation_attempts``: pending upstream sign-ins by the SHA-256 of their ``state`` (nonce, sealed PKCE
  verifier, the browser they are bound to); purged once expired.
- ``federated_sessions``: the browser sessions started through a provider, with its ``sid`` and (sealed) ID token,
  for its back-channel logout and our sign-out's visit to its end-session endpoint.
- ``federation_sign_outs``: where a sign-out goes on once the provider sends the browser back.
- ``browser_sessions.amr``, ``authorization_codes.amr`` and ``refresh_tokens.amr``: how the session's sign-in was
  made (``pwd`` or ``fed``), for the ``amr`` and ``acr`` claims. Sessions, codes and refresh tokens from before this
  revision are password sign-ins.

Revision ID: 0013_federation
Revises: 0011_outbound_internal
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013_federation"
down_revision: str | Sequence[str] | None = "0012_organizations"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Timestamp = sa.DateTime(timezone=True)


def _org() -> sa.Column[str]:
    return sa.Column("org_id", sa.String(32), sa.ForeignKey("organizations.id", ondelete="CASCADE"), nullable=False)


def upgrade() -> None:
    op.create_table(
        "federation_domains",
        sa.Column("domain", sa.String(253), primary_key=True),
        _org(),
        sa.Column("claimed_at", Timestamp, nullable=False),
    )
    op.create_index("ix_federation_domains_org_id", "federation_domains", ["org_id"])
    op.create_table(
        "federation_connections",
        sa.Column("org_id", sa.String(32), sa.ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("issuer", sa.String(2000), nullable=False),
        sa.Column("provider", sa.JSON, nullable=False),
        sa.Column("client_id", sa.String(255), nullable=False),
        sa.Column("client_secret", sa.Text, nullable=False),
        sa.Column("scopes", sa.JSON, nullable=False),
        sa.Column("default_role", sa.String(16), nullable=False),
        sa.Column("sso_required", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.Column("updated_at", Timestamp, nullable=False),
    )
    op.create_table(
        "federated_identities",
        sa.Column("binding", sa.String(64), primary_key=True),
        sa.Column("issuer", sa.String(2000), nullable=False),
        sa.Column("subject", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(32), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        _org(),
        sa.Column("linked_at", Timestamp, nullable=False),
    )
    op.create_index("ix_federated_identities_user_id", "federated_identities", ["user_id"])
    op.create_table(
        "federation_attempts",
        sa.Column("state_hash", sa.String(64), primary_key=True),
        _org(),
        sa.Column("issuer", sa.String(2000), nullable=False),
        sa.Column("purpose", sa.String(12), nullable=False),
        sa.Column("interaction_id", sa.String(64), nullable=True),
        sa.Column("browser_hash", sa.String(64), nullable=False),
        sa.Column("nonce", sa.String(64), nullable=False),
        sa.Column("code_verifier", sa.Text, nullable=False),
        sa.Column("user_id", sa.String(32), nullable=True),
        sa.Column("expires_at", Timestamp, nullable=False),
    )
    op.create_index("ix_federation_attempts_expires_at", "federation_attempts", ["expires_at"])
    op.create_table(
        "federated_sessions",
        sa.Column("session_id", sa.String(40), primary_key=True),
        _org(),
        sa.Column("binding", sa.String(64), nullable=False),
        sa.Column("upstream_sid", sa.String(255), nullable=True),
        sa.Column("id_token", sa.Text, nullable=False),
        sa.Column("started_at", Timestamp, nullable=False),
    )
    op.create_index("ix_federated_sessions_binding", "federated_sessions", ["binding"])
    op.create_table(
        "federation_sign_outs",
        sa.Column("state_hash", sa.String(64), primary_key=True),
        sa.Column("redirect_uri", sa.Text, nullable=True),
        sa.Column("state", sa.Text, nullable=True),
        sa.Column("expires_at", Timestamp, nullable=False),
    )
    op.create_index("ix_federation_sign_outs_expires_at", "federation_sign_outs", ["expires_at"])
    # ADD COLUMN in place, never a batch copy (0008: a batch copy on SQLite would cascade to referring rows).
    op.add_column("browser_sessions", sa.Column("amr", sa.String(16), nullable=False, server_default="pwd"))
    op.add_column("authorization_codes", sa.Column("amr", sa.String(16), nullable=False, server_default="pwd"))
    op.add_column("refresh_tokens", sa.Column("amr", sa.String(16), nullable=False, server_default="pwd"))


def downgrade() -> None:
    op.execute("ALTER TABLE refresh_tokens DROP COLUMN amr")
    op.execute("ALTER TABLE authorization_codes DROP COLUMN amr")
    op.execute("ALTER TABLE browser_sessions DROP COLUMN amr")
    for index, table in [
        ("ix_federation_sign_outs_expires_at", "federation_sign_outs"),
        ("ix_federated_sessions_binding", "federated_sessions"),
        ("ix_federation_attempts_expires_at", "federation_attempts"),
        ("ix_federated_identities_user_id", "federated_identities"),
        ("ix_federation_domains_org_id", "federation_domains"),
    ]:
        op.drop_index(index, table_name=table)
    for table in (
        "federation_sign_outs",
        "federated_sessions",
        "federation_attempts",
        "federated_identities",
        "federation_connections",
        "federation_domains",
    ):
        op.drop_table(table)
