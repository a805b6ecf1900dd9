"""The authorization request we send to an organization's provider, and reading its answer (RFC 6749 §4.1).

Every request carries PKCE S256 (RFC 7636, RFC 9700 §2.1.1), a ``state`` that names the pending attempt and binds it
to the browser (RFC 6749 §10.12), and a ``nonce`` that the ID token must repeat (OpenID Connect Core §3.1.2.1).

**Mix-up** (RFC 9700 §4.4). A provider that announces ``authorization_response_iss_parameter_supported`` must send
``iss`` (RFC 9207 §2.4), and it must be the connection's issuer. One that does not is told apart by its redirect
URI: each organization's connection has its own callback (``/federation/{org_id}/callback``), and an answer is
taken only at the callback of the connection its attempt was made for (RFC 9700 §4.4.2.2, "distinct redirect
URIs"). An ``iss`` such a provider sends anyway is checked all the same.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from authlib.oauth2.rfc6749.parameters import prepare_grant_uri
from authlib.oauth2.rfc7636 import create_s256_code_challenge

from identity.federation.errors import UpstreamRefused, UpstreamUnavailable

MAX_SHOWN = 300  # characters of a provider's error_description shown at most
# What the person is told for the errors of RFC 6749 §4.1.2.1 and OpenID Connect Core §3.1.2.6.
ERRORS = {
    "access_denied": "The sign-in was cancelled or refused at your organization's provider.",
    "login_required": "Your organization's provider needs you to sign in there.",
    "interaction_required": "Your organization's provider needs you to act there before you can sign in.",
    "consent_required": "Your organization's provider needs your consent for this service.",
    "account_selection_required": "Your organization's provider needs you to choose an account.",
    "temporarily_unavailable": "Your organization's provider is temporarily unavailable. Try again later.",
    "server_error": "Your organization's provider had an error.",
    "unauthorized_client": "Your organization's provider does not let this service sign you in.",
    "invalid_scope": "Your organization's provider refused the access this service asks for.",
    "invalid_request": "Your organization's provider refused the sign-in request.",
    "unsupported_response_type": "Your organization's provider refused the sign-in request.",
}


@dataclass(frozen=True, slots=True)
class AuthorizationStart:
    """What the attempt must remember until the answer, and where to send the browser."""

    url: str
    state: str
    nonce: str
    code_verifier: str


def start(
    authorization_endpoint: str,
    *,
    client_id: str,
    redirect_uri: str,
    scopes: Sequence[str],
    login_hint: str | None = None,
) -> AuthorizationStart:
    """A new authorization request: fresh ``state``, ``nonce`` and PKCE verifier (each 256 bits or more)."""
    state, nonce, verifier = secrets.token_urlsafe(32), secrets.token_urlsafe(32), secrets.token_urlsafe(48)
    url = prepare_grant_uri(
        authorization_endpoint,
        client_id,
        "code",
        redirect_uri,
        list(scopes),
        state,
        nonce=nonce,
        code_challenge=create_s256_code_challenge(verifier),
        code_challenge_method="S256",
        login_hint=login_hint,
    )
    return AuthorizationStart(url, state, nonce, verifier)


def code_of(params: Mapping[str, str], *, issuer: str, iss_required: bool) -> str:
    """The authorization code of the answer; ``UpstreamRefused`` for an error the provider sent (saying which),
    ``UpstreamUnavailable`` for an answer from another issuer or without a code."""
    iss = params.get("iss")
    if iss is not None and iss != issuer:  # RFC 9207 §2.4
        raise UpstreamUnavailable(
            "The answer came from another provider than your organization's.", detail=f"iss {iss[:100]!r}"
        )
    if iss is None and iss_required:
        raise UpstreamUnavailable(
            "The provider's answer does not say who sent it (RFC 9207 iss).", detail="iss missing"
        )
    error = params.get("error")
    if error is not None:
        said = ERRORS.get(error, "Your organization's provider refused the sign-in.")
        description = _shown(params.get("error_description"))
        text = f"{said} It said: {_shown(error)[:60]}" + (f" ({description})." if description else ".")
        raise UpstreamRefused(text, detail=f"error {error[:60]!r}")
    code = params.get("code")
    if not code:
        raise UpstreamUnavailable("The provider's answer carries no authorization code.", detail="no code")
    return code


def _shown(text: str | None) -> str:
    """A provider's error_description as a page may show it: printable, at most ``MAX_SHOWN`` characters."""
    if not text:
        return ""
    printable = "".join(ch for ch in text if ch.isprintable())
    return printable if len(printable) <= MAX_SHOWN else printable[:MAX_SHOWN] + "…"
