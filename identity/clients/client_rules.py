"""What a client may be registered with, and what a change of one may make of it: checked alike at registration
(``new_client``), at a change (``changes_of``) and when an owner grants scopes (``checked_scopes``), whoever asks
(the command line, an organization's owner or admin, the management API).

A public client (auth method ``none``: a browser or native app, which has nowhere to keep a secret, RFC 8252 §8.5)
has no secret, always uses PKCE S256 (RFC 9700 §2.1.1), never the ``client_credentials`` grant, and may register
web origins. A back-channel logout URI (OpenID Connect Back-Channel Logout 1.0 §2.2) must reach what the node's
outbound rule allows (``identity/common/outbound_uris.py``); internal addresses only by an operator's decision.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from identity.clients.metadata import check_jwks, check_redirect_uri, check_web_origins
from identity.clients.records import Client, hash_secret
from identity.common.clock import new_id
from identity.common.errors import InvalidInput
from identity.common.outbound_uris import OutboundRule
from identity.common.text import display_name
from identity.common.vocabulary import GRANTS, MANAGEMENT_SCOPES, PUBLIC, REGISTRABLE_AUTH_METHODS, SCOPES
from identity.sessions.backchannel_logout import check_backchannel_logout_uri

APPLICATION_SCOPES = frozenset({"members:read", *MANAGEMENT_SCOPES})  # client_credentials only
DEFAULT_GRANTS = ("authorization_code", "refresh_token")
DEFAULT_SCOPES = ("openid", "profile", "email", "offline_access")


def new_secret() -> str:
    """A client secret: 256 random bits, shown once (only its hash is kept)."""
    return "cs_" + secrets.token_urlsafe(32)


def new_client(
    *,
    name: str,
    org_id: str,
    auth_method: str,
    redirect_uris: Sequence[str],
    post_logout_redirect_uris: Sequence[str],
    grants: Sequence[str],
    scopes: Sequence[str],
    first_party: bool,
    pkce_required: bool,
    jwks: Any,
    web_origins: Sequence[str],
    backchannel_logout_uri: str | None,
    backchannel_logout_session_required: bool,
    require_verified_email: bool,
    outbound: OutboundRule,
    created_at: datetime,
) -> tuple[Client, str | None]:
    """A client checked as registration wants it, and its secret (None for private_key_jwt and public clients).
    ``outbound``: what its back-channel logout URI may reach (``internal``: the operator's ``--allow-internal``)."""
    name = display_name(name, "the client's name")
    if auth_method not in REGISTRABLE_AUTH_METHODS:
        raise InvalidInput(f"the auth method must be one of {', '.join(REGISTRABLE_AUTH_METHODS)}")
    grants = tuple(dict.fromkeys(grants or DEFAULT_GRANTS))
    if auth_method == PUBLIC:
        _check_public(grants, pkce_required)
    unknown = [g for g in grants if g not in GRANTS]
    if unknown:
        raise InvalidInput(f"unknown grant {unknown[0]!r}; grants are {', '.join(GRANTS)}")
    scopes = tuple(dict.fromkeys(scopes or _default_scopes(grants)))
    unknown = [s for s in scopes if s not in SCOPES]
    if unknown:
        raise InvalidInput(f"unknown scope {unknown[0]!r}; scopes are {', '.join(SCOPES)}")
    if APPLICATION_SCOPES & set(scopes) and "client_credentials" not in grants:
        raise InvalidInput("the members:read scope needs the client_credentials grant")
    redirects = tuple(check_redirect_uri(uri) for uri in dict.fromkeys(redirect_uris))
    logouts = tuple(check_redirect_uri(uri) for uri in dict.fromkeys(post_logout_redirect_uris))
    if "authorization_code" in grants and not redirects:
        raise InvalidInput("the authorization_code grant needs at least one redirect URI")
    origins = check_web_origins(web_origins, auth_method)
    backchannel = _check_backchannel(backchannel_logout_uri, backchannel_logout_session_required, outbound)
    if auth_method == "private_key_jwt":
        jwks, secret = check_jwks(jwks), None
    elif jwks is not None:
        raise InvalidInput("a JWKS is only for the private_key_jwt auth method")
    elif auth_method == PUBLIC:
        secret = None
    else:
        secret = new_secret()
    client = Client(
        id=new_id("cli"),
        org_id=org_id,
        name=name,
        auth_method=auth_method,
        redirect_uris=redirects,
        post_logout_redirect_uris=logouts,
        grants=grants,
        scopes=scopes,
        first_party=first_party,
        pkce_required=pkce_required,
        jwks=jwks,
        secret_hash=hash_secret(secret) if secret else None,
        web_origins=origins,
        backchannel_logout_uri=backchannel,
        backchannel_logout_session_required=backchannel_logout_session_required,
        require_verified_email=require_verified_email,
        backchannel_logout_internal=outbound.internal and backchannel is not None,
        created_at=created_at,
    )
    return client, secret


def changes_of(
    client: Client,
    outbound: OutboundRule,
    *,
    name: str | None,
    redirect_uris: Sequence[str] | None,
    post_logout_redirect_uris: Sequence[str] | None,
    web_origins: Sequence[str] | None,
    backchannel_logout_uri: str | None,
    backchannel_logout_session_required: bool | None,
    require_verified_email: bool | None,
    allow_internal: bool,
) -> dict[str, Any]:
    """The columns a change replaces (None given: kept), checked as at registration (``ClientStore.update``)."""
    changes: dict[str, Any] = {}
    if name is not None:
        changes["name"] = display_name(name, "the client's name")
    if redirect_uris is not None:
        changes["redirect_uris"] = tuple(check_redirect_uri(uri) for uri in dict.fromkeys(redirect_uris))
        if "authorization_code" in client.grants and not changes["redirect_uris"]:
            raise InvalidInput("the authorization_code grant needs at least one redirect URI")
    if post_logout_redirect_uris is not None:
        changes["post_logout_redirect_uris"] = tuple(
            check_redirect_uri(uri) for uri in dict.fromkeys(post_logout_redirect_uris)
        )
    if web_origins is not None:
        changes["web_origins"] = check_web_origins(web_origins, client.auth_method)
    if backchannel_logout_uri is not None:
        changes["backchannel_logout_uri"] = backchannel_logout_uri or None
        if not backchannel_logout_uri and backchannel_logout_session_required is None:
            changes["backchannel_logout_session_required"] = False  # removing the URI removes what needs it
    if backchannel_logout_session_required is not None:
        changes["backchannel_logout_session_required"] = backchannel_logout_session_required
    backchannel = {"backchannel_logout_uri", "backchannel_logout_session_required"} & changes.keys()
    if backchannel or allow_internal:
        merged = replace(client, **changes)
        internal = allow_internal or (backchannel_logout_uri is None and client.backchannel_logout_internal)
        changes["backchannel_logout_uri"] = _check_backchannel(
            merged.backchannel_logout_uri,
            merged.backchannel_logout_session_required,
            replace(outbound, internal=internal),
        )
        changes["backchannel_logout_internal"] = internal and changes["backchannel_logout_uri"] is not None
    if require_verified_email is not None:
        changes["require_verified_email"] = require_verified_email
    return changes


def checked_scopes(scopes: Sequence[str], grants: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Scopes and grants an owner sets (management scopes granted), checked as at registration."""
    scopes, grants = tuple(dict.fromkeys(scopes)), tuple(dict.fromkeys(grants))
    unknown = [s for s in scopes if s not in SCOPES]
    if unknown:
        raise InvalidInput(f"unknown scope {unknown[0]!r}; scopes are {', '.join(SCOPES)}")
    if APPLICATION_SCOPES & set(scopes) and "client_credentials" not in grants:
        raise InvalidInput("an application scope needs the client_credentials grant")
    return scopes, grants


def _check_public(grants: Sequence[str], pkce_required: bool) -> None:
    """A public client cannot authenticate: no grant that rests on client authentication alone
    (RFC 6749 §4.4.1: client_credentials is for confidential clients only), and PKCE always
    (RFC 9700 §2.1.1: "Public clients MUST use PKCE [RFC7636] to this end")."""
    if "client_credentials" in grants:
        raise InvalidInput("a public client (--auth-method none) may not use the client_credentials grant")
    if not pkce_required:
        raise InvalidInput("a public client (--auth-method none) must use PKCE (--pkce required)")


def _check_backchannel(uri: str | None, session_required: bool, rule: OutboundRule) -> str | None:
    """Back-Channel Logout 1.0 §2.2: the URI checked (with the outbound ``rule``); requiring sid means nothing
    without a URI."""
    if uri is None:
        if session_required:
            raise InvalidInput("--backchannel-logout-session-required needs a back-channel logout URI")
        return None
    return check_backchannel_logout_uri(uri, rule)


def _default_scopes(grants: Sequence[str]) -> tuple[str, ...]:
    """Least privilege: a sign-in client gets the user scopes; no client gets an application scope
    (``members:read``, every member's email) unless it is registered with it."""
    return DEFAULT_SCOPES if "authorization_code" in grants else ()
