"""The tables of federation (migrations 0013 and 0014), on the service's shared metadata."""

import sqlalchemy as sa

from identity.common.database import metadata

Timestamp = sa.DateTime(timezone=True)


def _org() -> sa.Column[str]:
    return sa.Column("org_id", sa.String(32), sa.ForeignKey("organizations.id", ondelete="CASCADE"), nullable=False)


federation_domains = sa.Table(
    "federation_domains",
    metadata,
    # An email domain an operator confirmed the organization may claim (`orgs claim-domain`): one organization each.
    sa.Column("domain", sa.String(253), primary_key=True),  # lower case, IDNA (A-labels)
    _org(),
    sa.Column("claimed_at", Timestamp, nullable=False),
    sa.Index("ix_federation_domains_org_id", "org_id"),
)

federation_connections = sa.Table(
    "federation_connections",
    metadata,
    # An organization's one upstream OpenID provider.
    sa.Column("org_id", sa.String(32), sa.ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("issuer", sa.String(2000), nullable=False),
    sa.Column("provider", sa.JSON, nullable=False),  # its validated discovery (provider_metadata.ProviderMetadata)
    sa.Column("client_id", sa.String(255), nullable=False),  # ours, at the provider
    sa.Column("client_secret", sa.Text, nullable=False),  # sealed (identity/keys/sealing.py)
    sa.Column("scopes", sa.JSON, nullable=False),
    sa.Column("default_role", sa.String(16), nullable=False),  # of the members its first sign-ins make
    sa.Column("sso_required", sa.Boolean, nullable=False, server_default=sa.false()),  # members' passwords stop
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
    # The claimed domains it covers (migration 0014); NULL: every domain the organization claims.
    sa.Column("domains", sa.JSON(none_as_null=True), nullable=True),
)

federated_identities = sa.Table(
    "federated_identities",
    metadata,
    # An account bound to a provider's (iss, sub): found by the SHA-256 of the pair, whatever the address says later.
    sa.Column("binding", sa.String(64), primary_key=True),
    sa.Column("issuer", sa.String(2000), nullable=False),
    sa.Column("subject", sa.String(255), nullable=False),
    sa.Column("user_id", sa.String(32), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    _org(),  # the organization whose connection made the binding
    sa.Column("linked_at", Timestamp, nullable=False),
    sa.Index("ix_federated_identities_user_id", "user_id"),
)

federation_attempts = sa.Table(
    "federation_attempts",
    metadata,
    # A pending sign-in at a provider, by the SHA-256 of its state; single use, purged once expired.
    sa.Column("state_hash", sa.String(64), primary_key=True),
    _org(),
    sa.Column("issuer", sa.String(2000), nullable=False),  # the connection's when it started
    sa.Column("purpose", sa.String(12), nullable=False),  # sign_in or test
    sa.Column("interaction_id", sa.String(64), nullable=True),  # the sign-in it is part of
    sa.Column("browser_hash", sa.String(64), nullable=False),  # SHA-256 of the cookie that binds it to the browser
    sa.Column("nonce", sa.String(64), nullable=False),
    sa.Column("code_verifier", sa.Text, nullable=False),  # sealed
    sa.Column("user_id", sa.String(32), nullable=True),  # a connection test: the owner who runs it
    sa.Column("expires_at", Timestamp, nullable=False),
    sa.Index("ix_federation_attempts_expires_at", "expires_at"),
)

federated_sessions = sa.Table(
    "federated_sessions",
    metadata,
    # A browser session started through a provider: its sid (back-channel logout) and ID token (our sign-out's
    # visit to its end-session endpoint).
    sa.Column("session_id", sa.String(40), primary_key=True),
    _org(),
    sa.Column("binding", sa.String(64), nullable=False),
    sa.Column("upstream_sid", sa.String(255), nullable=True),
    sa.Column("id_token", sa.Text, nullable=False),  # sealed
    sa.Column("started_at", Timestamp, nullable=False),
    sa.Index("ix_federated_sessions_binding", "binding"),
)

federation_sign_outs = sa.Table(
    "federation_sign_outs",
    metadata,
    # A sign-out gone on to a provider's end-session endpoint: where to go when it sends the browser back.
    sa.Column("state_hash", sa.String(64), primary_key=True),
    sa.Column("redirect_uri", sa.Text, nullable=True),
    sa.Column("state", sa.Text, nullable=True),
    sa.Column("expires_at", Timestamp, nullable=False),
    sa.Index("ix_federation_sign_outs_expires_at", "expires_at"),
)

federation_logout_tokens = sa.Table(
    "federation_logout_tokens",
    metadata,
    # A provider's logout token already taken (migration 0014), by the SHA-256 of its issuer and ``jti``, until the
    # token's own expiry: a replay is refused on every node. Purged once expired.
    sa.Column("token_hash", sa.String(64), primary_key=True),
    _org(),
    sa.Column("expires_at", Timestamp, nullable=False),
    sa.Index("ix_federation_logout_tokens_expires_at", "expires_at"),
)
