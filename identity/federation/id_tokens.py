"""Verifying what a provider signs: its ID tokens (OpenID Connect Core §3.1.3.7) and its logout tokens (Back-Channel
Logout 1.0 §2.6).

The signature is joserfc's (the JOSE library Authlib's own clients use), checked against the provider's JWKS with
only the asymmetric algorithms the provider announced (never ``none``, never an HMAC keyed with our client secret);
the ID token's claims are Authlib's ``CodeIDToken`` rules (``iss``, ``aud``, ``exp``, ``iat``, ``nonce``, ``azp``,
``at_hash``), our ``iss`` being the issuer the connection was registered with. A token signed by a key the set does
not hold raises ``UnknownKey``: the caller fetches the set again once (key_sets.py) and verifies again.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from authlib.oidc.core import CodeIDToken
from joserfc import jwt
from joserfc.errors import ExpiredTokenError, InvalidKeyIdError, JoseError, MissingClaimError
from joserfc.jwk import KeySet
from joserfc.jwt import JWTClaimsRegistry

from identity.federation.errors import UpstreamUnavailable

# The asymmetric JWS algorithms we verify (RFC 7518 §3, RFC 8037); OpenID Connect Core §15.1 makes RS256 mandatory.
ASYMMETRIC = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA", "Ed25519")
LOGOUT_EVENT = "http://schemas.openid.net/event/backchannel-logout"  # Back-Channel Logout 1.0 §2.4
MAX_TOKEN = 16 * 1024  # characters of an ID or logout token at most


class UnknownKey(Exception):
    """The token names a key (``kid``) the key set does not hold: the set may have rotated."""


def _decode(token: str, keys: KeySet, algorithms: Collection[str], what: str) -> jwt.Token:
    if len(token) > MAX_TOKEN:
        raise UpstreamUnavailable(f"The provider's {what} is too long.", detail=f"{what}: {len(token)} characters")
    try:
        return jwt.decode(token, keys, algorithms=list(algorithms))
    except InvalidKeyIdError:
        raise UnknownKey() from None
    except (JoseError, ValueError) as error:  # ValueError: a malformed token, or no key for its algorithm
        raise UpstreamUnavailable(
            f"The provider's {what} does not verify.", detail=f"{what}: {type(error).__name__}: {error}"
        ) from None


def verify_id_token(
    token: str,
    keys: KeySet,
    *,
    algorithms: Collection[str],
    issuer: str,
    client_id: str,
    nonce: str,
    access_token: str | None,
    now: int,
    leeway: int,
) -> dict[str, Any]:
    """OpenID Connect Core §3.1.3.7: the ID token's claims, or ``UpstreamUnavailable`` saying which rule failed
    (``UnknownKey`` for a key the set lacks)."""
    decoded = _decode(token, keys, algorithms, "ID token")
    options: dict[str, Any] = {
        "iss": {"essential": True, "value": issuer},
        "aud": {"essential": True, "value": client_id},
        "sub": {"essential": True},
        "nonce": {"essential": True},
    }
    params = {"nonce": nonce, "client_id": client_id, "access_token": access_token}
    claims = CodeIDToken(decoded.claims, decoded.header, options, params)
    try:
        claims.validate(now=now, leeway=leeway)
    except ExpiredTokenError:
        raise UpstreamUnavailable("The provider's ID token has expired.", detail="ID token: exp") from None
    except MissingClaimError as error:
        raise UpstreamUnavailable(
            "The provider's ID token lacks a claim it must carry.", detail=f"ID token: missing {error}"
        ) from None
    except JoseError as error:
        raise UpstreamUnavailable(
            "The provider's ID token was not issued for this sign-in.", detail=f"ID token: {error}"
        ) from None
    if not isinstance(claims["sub"], str) or not 0 < len(claims["sub"]) <= 255:
        raise UpstreamUnavailable("The provider's ID token names no valid subject.", detail="ID token: sub")
    return dict(claims)


def verify_logout_token(
    token: str, keys: KeySet, *, algorithms: Collection[str], issuer: str, client_id: str, now: int, leeway: int
) -> dict[str, Any]:
    """Back-Channel Logout 1.0 §2.6: signature, ``iss``, ``aud``, ``iat``, ``exp``, ``jti``, the logout event, a
    ``sub`` or a ``sid``, no ``nonce``; the ``typ`` header, when present, is ``logout+jwt`` (§2.4)."""
    decoded = _decode(token, keys, algorithms, "logout token")
    typ = decoded.header.get("typ")
    if typ is not None and str(typ).lower() not in ("logout+jwt", "application/logout+jwt", "jwt"):
        raise UpstreamUnavailable("The logout token has the wrong type.", detail=f"logout token: typ {typ!r}")
    registry = JWTClaimsRegistry(
        now=now,
        leeway=leeway,
        iss={"essential": True, "value": issuer},
        aud={"essential": True, "value": client_id},
        iat={"essential": True},
        exp={"essential": True},
        jti={"essential": True},
        events={"essential": True},
    )
    claims = decoded.claims
    try:
        registry.validate(claims)
    except JoseError as error:
        raise UpstreamUnavailable("The logout token does not verify.", detail=f"logout token: {error}") from None
    events = claims.get("events")
    if not isinstance(events, Mapping) or not isinstance(events.get(LOGOUT_EVENT), Mapping):
        raise UpstreamUnavailable("The logout token carries no logout event.", detail="logout token: events")
    if "nonce" in claims:
        raise UpstreamUnavailable("A logout token must not carry a nonce.", detail="logout token: nonce")
    sub, sid = claims.get("sub"), claims.get("sid")
    if not isinstance(sub, str) and not isinstance(sid, str):
        raise UpstreamUnavailable("The logout token names neither a subject nor a session.", detail="sub, sid")
    return dict(claims)
