"""The identity provider's tables (SQLAlchemy Core), on the service's shared metadata.

Secrets that can be hashed are stored only as hashes: passwords (Argon2id),
client secrets, authorization codes and refresh tokens (SHA-256 of a 256-bit
random value). Lists (redirect URIs, scopes, grants) are JSON.
"""

import sqlalchemy as sa

from identity.common.database import metadata

Timestamp = sa.DateTime(timezone=True)


def amr() -> sa.Column[str]:
    """How a session's sign-in was made (migration 0012): ``pwd`` (a password) or ``fed`` (an organization's
    provider); on a code and a refresh token, their session's, for the ``amr`` and ``acr`` claims."""
    return sa.Column("amr", sa.String(16), nullable=False, server_default="pwd")


def credential_version() -> sa.Column[int]:
    """The user's credential version (migration 0009): on ``users``, the current one, moved on by every password
    change, reset and disable; on a session, a code, a token or a reset link, the version it was issued under,
    which must still be the user's for it to work (docs/identity.md, "Credential versions")."""
    return sa.Column("credential_version", sa.Integer, nullable=False, server_default="0")


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
    # the owner followed a verification link sent to this address (the email_verified claim; migration 0006)
    sa.Column("email_verified", sa.Boolean, nullable=False, server_default=sa.false()),
    # set by `users disable`: no sign-in, no token issued or served (migration 0008)
    sa.Column("disabled_at", Timestamp, nullable=True),
    credential_version(),
    # when the user last gave their credentials (the members list; migration 0012: NULL for sign-ins before it)
    sa.Column("last_sign_in_at", Timestamp, nullable=True),
)

memberships = sa.Table(
    "memberships",
    metadata,
    sa.Column("user_id", sa.String(32), sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("org_id", sa.String(32), sa.ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("role", sa.String(16), nullable=False),
    sa.Column("joined_at", Timestamp, nullable=False),
    # moved on by every change of the role: the ETag a change must match (migration 0012)
    sa.Column("version", sa.Integer, nullable=False, server_default="0"),
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
    # a public client's origins (scheme://host[:port]) whose pages may call the token, revocation and userinfo
    sa.Column("web_origins", sa.JSON, nullable=False, server_default="[]"),
    # OpenID Connect Back-Channel Logout 1.0 §2.2: where logout tokens are posted (None: none are), and whether
    # the client needs the sid claim in them (migration 0007)
    sa.Column("backchannel_logout_uri", sa.String(2000), nullable=True),
    sa.Column("backchannel_logout_session_required", sa.Boolean, nullable=False, server_default=sa.false()),
    # no code until the user's address is verified: the sign-in pauses on "check your email" (migration 0008)
    sa.Column("require_verified_email", sa.Boolean, nullable=False, server_default=sa.false()),
    # the back-channel logout URI may reach a loopback, private or unique-local address: the operator registered
    # it with --allow-internal (identity/common/outbound_uris.py; migration 0011)
    sa.Column("backchannel_logout_internal", sa.Boolean, nullable=False, server_default=sa.false()),
    # moved on by every change: the ETag a change must match (migration 0012)
    sa.Column("version", sa.Integer, nullable=False, server_default="0"),
    # a rotated secret keeps working until then (MENUS_CLIENT_SECRET_GRACE; migration 0012)
    sa.Column("previous_secret_hash", sa.String(64), nullable=True),
    sa.Column("previous_secret_expires_at", Timestamp, nullable=True),
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

browser_sessions = sa.Table(
    "browser_sessions",
    metadata,
    sa.Column("id", sa.String(40), primary_key=True),  # the public `sid` claim
    sa.Column("secret_hash", sa.String(64), nullable=False, unique=True),  # SHA-256 of the cookie value
    sa.Column("user_id", sa.String(32), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    sa.Column("org_id", sa.String(32), nullable=True),  # the organization last chosen in this session
    sa.Column("auth_time", Timestamp, nullable=False),  # when the user last gave their credentials
    sa.Column("expires_at", Timestamp, nullable=False, index=True),  # purge
    sa.Column("ended_at", Timestamp, nullable=True),
    credential_version(),  # the version its sign-in verified
    amr(),  # how its sign-in was made
)

interactions = sa.Table(
    "interactions",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("browser_hash", sa.String(64), nullable=False),  # SHA-256 of the browser cookie that started it
    sa.Column("csrf_token", sa.String(64), nullable=False),
    sa.Column("request", sa.JSON, nullable=False),  # the validated authorization request
    sa.Column("user_id", sa.String(32), nullable=True),
    sa.Column("session_id", sa.String(40), nullable=True),
    sa.Column("auth_time", Timestamp, nullable=True),
    sa.Column("org_id", sa.String(32), nullable=True),
    sa.Column("signed_in", sa.Boolean, nullable=False),  # credentials were given during this interaction
    sa.Column("org_chosen", sa.Boolean, nullable=False),
    sa.Column("consented", sa.Boolean, nullable=False),
    sa.Column("expires_at", Timestamp, nullable=False, index=True),  # purge
    # the pause for a verified address (a client's require_verified_email) mailed its link (migration 0008)
    sa.Column("verification_sent", sa.Boolean, nullable=False, server_default=sa.false()),
)

authorization_codes = sa.Table(
    "authorization_codes",
    metadata,
    sa.Column("code_hash", sa.String(64), primary_key=True),
    sa.Column("grant_id", sa.String(40), nullable=False),  # every token issued from the code carries it
    sa.Column("client_id", sa.String(32), nullable=False),
    sa.Column("redirect_uri", sa.Text, nullable=False),
    sa.Column("user_id", sa.String(32), nullable=False),
    sa.Column("org_id", sa.String(32), nullable=False),
    sa.Column("session_id", sa.String(40), nullable=False),
    sa.Column("scope", sa.Text, nullable=False),
    sa.Column("nonce", sa.Text, nullable=True),
    sa.Column("code_challenge", sa.String(64), nullable=True),
    sa.Column("auth_time", Timestamp, nullable=False),
    sa.Column("expires_at", Timestamp, nullable=False, index=True),  # purge
    sa.Column("used_at", Timestamp, nullable=True),
    credential_version(),
    amr(),
)

access_tokens = sa.Table(
    "access_tokens",
    metadata,
    sa.Column("jti", sa.String(40), primary_key=True),
    sa.Column("grant_id", sa.String(40), nullable=True, index=True),
    sa.Column("client_id", sa.String(32), nullable=False),
    sa.Column("user_id", sa.String(32), nullable=True),  # None for application tokens
    sa.Column("org_id", sa.String(32), nullable=False),
    sa.Column("session_id", sa.String(40), nullable=True, index=True),
    sa.Column("scope", sa.Text, nullable=False),
    sa.Column("issued_at", Timestamp, nullable=False),
    sa.Column("expires_at", Timestamp, nullable=False, index=True),  # purge
    sa.Column("revoked_at", Timestamp, nullable=True),
    credential_version(),  # 0 for application tokens (no user)
)

refresh_tokens = sa.Table(
    "refresh_tokens",
    metadata,
    sa.Column("token_hash", sa.String(64), primary_key=True),
    sa.Column("id", sa.String(40), nullable=False, unique=True),  # public id (introspection `jti`)
    sa.Column("grant_id", sa.String(40), nullable=False, index=True),  # the family: every rotation shares it
    sa.Column("client_id", sa.String(32), nullable=False),
    sa.Column("user_id", sa.String(32), nullable=False),
    sa.Column("org_id", sa.String(32), nullable=False),
    sa.Column("session_id", sa.String(40), nullable=False, index=True),
    sa.Column("scope", sa.Text, nullable=False),
    sa.Column("auth_time", Timestamp, nullable=False),
    sa.Column("issued_at", Timestamp, nullable=False),
    sa.Column("expires_at", Timestamp, nullable=False, index=True),  # purge
    sa.Column("rotated_at", Timestamp, nullable=True),
    sa.Column("revoked_at", Timestamp, nullable=True),
    credential_version(),
    amr(),
)

consents = sa.Table(
    "consents",
    metadata,
    # One consent per (user, client, organization): the tokens speak for the organization (migration 0004).
    sa.Column("user_id", sa.String(32), sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("client_id", sa.String(32), sa.ForeignKey("clients.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("org_id", sa.String(32), sa.ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("scopes", sa.JSON, nullable=False),
    sa.Column("granted_at", Timestamp, nullable=False),
)

console_sessions = sa.Table(
    "console_sessions",
    metadata,
    # The developer console's sessions: its cookie names one, and signing out ends it here, on every node.
    sa.Column("id_hash", sa.String(64), primary_key=True),  # SHA-256 of the session id the cookie carries
    sa.Column("user_id", sa.String(32), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    sa.Column("expires_at", Timestamp, nullable=False, index=True),  # purge
    sa.Column("ended_at", Timestamp, nullable=True),
)

sign_in_failures = sa.Table(
    "sign_in_failures",
    metadata,
    sa.Column("key", sa.String(80), primary_key=True),  # "account:<sha256 of email>" or "address:<ip>"
    sa.Column("failures", sa.Integer, nullable=False),
    sa.Column("window_start", Timestamp, nullable=False),
)

client_assertions = sa.Table(
    "client_assertions",
    metadata,
    # RFC 7523 §3: a client assertion's jti is single-use until the assertion expires.
    sa.Column("jti_hash", sa.String(64), primary_key=True),  # SHA-256 of client id and jti
    sa.Column("expires_at", Timestamp, nullable=False, index=True),
)

revoked_grants = sa.Table(
    "revoked_grants",
    metadata,
    # An authorization whose tokens were revoked (code replay, refresh-token reuse, revocation of a
    # refresh token): a token issued from it concurrently with the revocation is revoked on issue.
    sa.Column("grant_id", sa.String(40), primary_key=True),
    sa.Column("revoked_at", Timestamp, nullable=False),
)

mail_outbox = sa.Table(
    "mail_outbox",
    metadata,
    # Mail waiting to leave (identity/mail/outbox.py): the request inserts a row, a background worker on some node
    # claims it (claimed_until: a lease no other node takes while it runs), sends it and marks it sent.
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("kind", sa.String(40), nullable=False),  # which template renders it (service/mail/templates)
    sa.Column("recipient", sa.String(320), nullable=False),
    sa.Column("params", sa.JSON, nullable=False),  # what the template shows (never a password)
    sa.Column("status", sa.String(12), nullable=False),  # pending, sent or failed (attempts exhausted)
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("next_attempt_at", Timestamp, nullable=False),  # not before then (backoff after a failure)
    sa.Column("claimed_until", Timestamp, nullable=False),  # a node is sending it until then
    sa.Column("claim_token", sa.String(32), nullable=True),  # which claim may mark it
    sa.Column("last_error", sa.String(200), nullable=True),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("sent_at", Timestamp, nullable=True),
    # which worker delivers it: "mail" (service/mail/) or "backchannel_logout" (service/outbound/); migration 0007
    sa.Column("channel", sa.String(20), nullable=False, server_default="mail"),
    sa.Index("ix_mail_outbox_due", "status", "next_attempt_at"),
)

email_links = sa.Table(
    "email_links",
    metadata,
    # Single-use links sent by mail (identity/mail/email_links.py): email verification, password reset.
    sa.Column("token_hash", sa.String(64), primary_key=True),  # SHA-256 of the link's 256-bit random token
    sa.Column("purpose", sa.String(20), nullable=False),  # verify_email or reset_password
    sa.Column("user_id", sa.String(32), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    sa.Column("email_key", sa.String(320), nullable=False),  # the address it was sent to (a changed address voids it)
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("expires_at", Timestamp, nullable=False, index=True),  # purge
    sa.Column("used_at", Timestamp, nullable=True),
    # the sign-in a verification link resumes, in the browser that started it (migration 0008)
    sa.Column("interaction_id", sa.String(64), nullable=True),
    credential_version(),  # the user's when it was issued; a reset link opens only while it still is
    # where the link's flow started, which the page it ends on links back to (migration 0010)
    sa.Column("return_to", sa.Text, nullable=True),
)

session_clients = sa.Table(
    "session_clients",
    metadata,
    # The clients that hold a browser session (identity/sessions/backchannel_logout.py): a code issued in the session
    # was redeemed by the client, so it got an ID token with that sid. Signing out tells them (back-channel logout).
    # Rows live as long as their session's row (the purge deletes them with it); migration 0007.
    sa.Column("session_id", sa.String(40), primary_key=True),
    sa.Column("client_id", sa.String(32), primary_key=True),
    sa.Column("user_id", sa.String(32), nullable=False, index=True),
    sa.Column("held_since", Timestamp, nullable=False),
)
