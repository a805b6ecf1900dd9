"""A registered client as the service holds it, and how it is stored: a row of ``clients`` (``row_of``,
``client_of``). Its secret is kept only as a SHA-256 hash (``hash_secret``), compared in constant time; a rotated
secret keeps working until its grace ends (``ClientStore.new_secret``)."""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from identity.common.clock import utc
from identity.common.digests import sha256_hex
from identity.common.vocabulary import PUBLIC


@dataclass(frozen=True, slots=True)
class Client:
    id: str
    org_id: str
    name: str
    auth_method: str
    redirect_uris: tuple[str, ...]
    post_logout_redirect_uris: tuple[str, ...]
    grants: tuple[str, ...]
    scopes: tuple[str, ...]
    first_party: bool
    pkce_required: bool
    jwks: dict[str, Any] | None
    secret_hash: str | None
    web_origins: tuple[str, ...] = ()
    backchannel_logout_uri: str | None = None  # Back-Channel Logout 1.0 §2.2: None, no logout token is posted
    backchannel_logout_session_required: bool = False  # §2.2: the logout tokens must carry sid
    require_verified_email: bool = False  # no code until the user's address is verified (a "check your email" pause)
    # the back-channel logout URI may reach loopback, private and unique-local addresses (--allow-internal: an
    # operator's decision, identity/common/outbound_uris.py)
    backchannel_logout_internal: bool = False
    version: int = 0  # moved on by every change (the ETag a change must match; migration 0012)
    # a rotated secret keeps working until previous_secret_expires_at (MENUS_CLIENT_SECRET_GRACE)
    previous_secret_hash: str | None = None
    previous_secret_expires_at: datetime | None = None
    created_at: datetime | None = None

    @property
    def public(self) -> bool:
        """A public client (RFC 6749 §2.1): no credentials, so anyone may present its id."""
        return self.auth_method == PUBLIC

    def verify_secret(self, secret: str, now: datetime | None = None) -> bool:
        """Constant-time comparison of the presented secret's hash with the stored one; given ``now``, the
        previous secret too while its grace lasts (a rotation's, ``ClientStore.new_secret``)."""
        if self.secret_hash is None:
            return False
        presented = hash_secret(secret)
        current = hmac.compare_digest(presented, self.secret_hash)
        previous = self.previous_secret_hash or _NO_HASH
        in_grace = hmac.compare_digest(presented, previous)
        expires = self.previous_secret_expires_at
        return current or (in_grace and now is not None and expires is not None and now < expires)

    def as_dict(self) -> dict[str, Any]:
        return {
            "client_id": self.id,
            "org_id": self.org_id,
            "name": self.name,
            "token_endpoint_auth_method": self.auth_method,
            "redirect_uris": list(self.redirect_uris),
            "post_logout_redirect_uris": list(self.post_logout_redirect_uris),
            "grant_types": list(self.grants),
            "scopes": list(self.scopes),
            "first_party": self.first_party,
            "pkce": "required" if self.pkce_required else "optional",
            "web_origins": list(self.web_origins),
            "backchannel_logout_uri": self.backchannel_logout_uri,
            "backchannel_logout_session_required": self.backchannel_logout_session_required,
            "require_verified_email": self.require_verified_email,
            "backchannel_logout_internal": self.backchannel_logout_internal,
        }


hash_secret = sha256_hex
_NO_HASH = "0" * 64  # compared against when there is no previous secret, so the work is the same


class StaleClient(Exception):
    """The client changed since its author read it (its version tag no longer matches): nothing was changed."""


def stored(value: Any) -> Any:
    """A column's value as written: lists (JSON) from tuples, anything else as it is."""
    return list(value) if isinstance(value, tuple) else value


def row_of(client: Client) -> dict[str, Any]:
    return {
        "id": client.id,
        "org_id": client.org_id,
        "name": client.name,
        "secret_hash": client.secret_hash,
        "auth_method": client.auth_method,
        "jwks": client.jwks,
        "redirect_uris": list(client.redirect_uris),
        "post_logout_redirect_uris": list(client.post_logout_redirect_uris),
        "grants": list(client.grants),
        "scopes": list(client.scopes),
        "first_party": client.first_party,
        "pkce_required": client.pkce_required,
        "web_origins": list(client.web_origins),
        "backchannel_logout_uri": client.backchannel_logout_uri,
        "backchannel_logout_session_required": client.backchannel_logout_session_required,
        "require_verified_email": client.require_verified_email,
        "backchannel_logout_internal": client.backchannel_logout_internal,
    }


def client_of(row: Any) -> Client:
    return Client(
        id=row.id,
        org_id=row.org_id,
        name=row.name,
        auth_method=row.auth_method,
        redirect_uris=tuple(row.redirect_uris),
        post_logout_redirect_uris=tuple(row.post_logout_redirect_uris),
        grants=tuple(row.grants),
        scopes=tuple(row.scopes),
        first_party=bool(row.first_party),
        pkce_required=bool(row.pkce_required),
        jwks=row.jwks,
        secret_hash=row.secret_hash,
        web_origins=tuple(row.web_origins or ()),
        backchannel_logout_uri=row.backchannel_logout_uri,
        backchannel_logout_session_required=bool(row.backchannel_logout_session_required),
        require_verified_email=bool(row.require_verified_email),
        backchannel_logout_internal=bool(row.backchannel_logout_internal),
        version=int(row.version),
        previous_secret_hash=row.previous_secret_hash,
        previous_secret_expires_at=utc(row.previous_secret_expires_at) if row.previous_secret_expires_at else None,
        created_at=utc(row.created_at) if row.created_at else None,
    )
