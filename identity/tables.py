"""The identity provider's tables (SQLAlchemy Core), on the service's shared metadata.

Secrets that can be hashed are stored only as hashes: passwords (Argon2id),
client secrets, authorization codes and refresh tokens (SHA-256 of a 256-bit
random value). Lists (redirect URIs, scopes, grants) are JSON.
"""

import sqlalchemy as sa

from service.db import metadata

Timestamp = sa.DateTime(timezone=True)

organizations = sa.Table(
    "organizations",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("slug", sa.String(80), nullable=False, unique=True),
    sa.Column("created_at", Timestamp, nullable=False),
)

users = sa.Table(
    "users",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("email", sa.String(320), nullable=False),
    sa.Column("email_key", sa.String(320), nullable=False, unique=True),  # casefolded, for lookups
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("password_hash", sa.String(200), nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
)

memberships = sa.Table(
    "memberships",
    metadata,
    sa.Column("user_id", sa.String(32), sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("org_id", sa.String(32), sa.ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("role", sa.String(16), nullable=False),
    sa.Column("joined_at", Timestamp, nullable=False),
)

clients = sa.Table(
    "clients",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("org_id", sa.String(32), sa.ForeignKey("organizations.id", ondelete="CASCADE"), nullable=False),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("secret_hash", sa.String(64), nullable=True),
    sa.Column("auth_method", sa.String(32), nullable=False),
    sa.Column("jwks", sa.JSON, nullable=True),
    sa.Column("redirect_uris", sa.JSON, nullable=False),
    sa.Column("post_logout_redirect_uris", sa.JSON, nullable=False),
    sa.Column("grants", sa.JSON, nullable=False),
    sa.Column("scopes", sa.JSON, nullable=False),
    sa.Column("first_party", sa.Boolean, nullable=False),
    sa.Column("pkce_required", sa.Boolean, nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
)

signing_keys = sa.Table(
    "signing_keys",
    metadata,
    sa.Column("kid", sa.String(64), primary_key=True),
    sa.Column("private_pem", sa.Text, nullable=False),
    sa.Column("public_jwk", sa.JSON, nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("signs_from", Timestamp, nullable=False),  # published before it signs
    sa.Column("retired_at", Timestamp, nullable=True),  # stops signing; still verifies until expires_at
    sa.Column("expires_at", Timestamp, nullable=True),  # no longer published
)
