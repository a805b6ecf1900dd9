"""The console as an OpenID Connect client of our own issuer (a relying party), without any web framework.

Registered on start as a first-party confidential client with a fixed id and a secret derived from
a shared service secret, so every node registers the same client and agrees on its secret. Sign-in
is the authorization code flow with PKCE S256, ``state`` (RFC 6749 §10.12: bound to the browser by
the pending sign-in cookie) and ``nonce`` (OpenID Connect Core §3.1.2.1). The code is redeemed and
the ID token verified in-process: the token endpoint is called as a function with the client's
Basic credentials, and the ID token's signature is checked against the provider's published JWKS
document (the same keys ``/jwks`` serves), without an HTTP call to ourselves.
"""

from __future__ import annotations

import base64
import hmac
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import jwt

from identity.common.errors import OAuthError
from identity.common.issuer import AUTHORIZATION_PATH, END_SESSION_PATH
from identity.provider import Provider
from identity.tokens.pkce import challenge_of

CLIENT_ID = "cli_console"  # stable: the same on every node and every start
CLIENT_NAME = "Regional Menus developer console"
SERVICE_ORG_ID = "org_service"  # the organization that owns the service's own clients
SERVICE_ORG_NAME = "Regional Menus"
SERVICE_ORG_SLUG = "_service"  # no organization made by a user can have it (slugs start with a letter or digit)
SCOPE = "openid profile email"
PROMPTS = ("create", "select_account", "login")  # "Create an account", "Switch organization", "Use another account"


class SignInFailed(Exception):
    """The callback cannot complete a sign-in; the message is safe to show."""


@dataclass(frozen=True, slots=True)
class PendingSignIn:
    """What the browser that started a sign-in must bring back: kept in its own cookie, encrypted."""

    state: str
    nonce: str
    verifier: str
    invitation: str | None = None  # an invitation's token: the sign-in comes back to its page

    def as_dict(self) -> dict[str, str]:
        kept = {"state": self.state, "nonce": self.nonce, "verifier": self.verifier}
        return kept if self.invitation is None else {**kept, "invitation": self.invitation}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PendingSignIn | None:
        values = [data.get(name) for name in ("state", "nonce", "verifier")]
        if not all(isinstance(value, str) and value for value in values):
            return None
        invitation = data.get("invitation")
        state, nonce, verifier = (str(value) for value in values)
        return cls(state, nonce, verifier, invitation if isinstance(invitation, str) else None)


@dataclass(frozen=True, slots=True)
class SignedIn:
    user_id: str
    org_id: str
    session_id: str  # the provider's `sid`: the console session ends with it
    id_token: str  # kept for the end-session request's id_token_hint


def client_secret(shared: bytes) -> str:
    """The console client's secret, the same on every node: derived from the shared service secret."""
    return "cs_" + base64.urlsafe_b64encode(shared).rstrip(b"=").decode()


class ConsoleClient:
    def __init__(self, provider: Provider, console_url: str, secret: str, *, clock_skew: int) -> None:
        self.provider = provider
        self.clock_skew = clock_skew  # seconds of leeway on the ID token's iat and exp
        self.console_url = console_url  # e.g. http://127.0.0.1:8000/console (no trailing slash)
        self.redirect_uri = console_url + "/callback"
        self.post_logout_redirect_uri = console_url + "/"
        self._secret = secret

    def register(self) -> None:
        """One registration for every node: created by the first node to start, brought up to date by each."""
        self.provider.organizations.ensure(SERVICE_ORG_ID, SERVICE_ORG_NAME, SERVICE_ORG_SLUG)
        self.provider.clients.ensure_first_party(
            client_id=CLIENT_ID,
            name=CLIENT_NAME,
            org_id=SERVICE_ORG_ID,
            secret=self._secret,
            redirect_uris=[self.redirect_uri],
            post_logout_redirect_uris=[self.post_logout_redirect_uri],
        )

    def start(self, prompt: str | None, invitation: str | None = None) -> tuple[str, PendingSignIn]:
        """The authorization URL to send the browser to, and what its pending sign-in cookie must hold.
        ``invitation``: an invitation's token, which the provider's sign-up (``prompt=create``) joins instead of
        making an organization, and whose page the sign-in comes back to."""
        pending = PendingSignIn(
            secrets.token_urlsafe(32), secrets.token_urlsafe(32), secrets.token_urlsafe(48), invitation
        )
        query = {
            "response_type": "code",
            "client_id": CLIENT_ID,
            "redirect_uri": self.redirect_uri,
            "scope": SCOPE,
            "state": pending.state,
            "nonce": pending.nonce,
            "code_challenge": challenge_of(pending.verifier),
            "code_challenge_method": "S256",
        }
        if prompt in PROMPTS:
            query["prompt"] = prompt
        if invitation is not None:
            query["invitation"] = invitation
        return f"{self.provider.issuer.endpoint(AUTHORIZATION_PATH)}?{urlencode(query)}", pending

    def finish(self, params: Mapping[str, str], pending: PendingSignIn | None) -> SignedIn:
        """The callback: check state and issuer, redeem the code, verify the ID token and its nonce."""
        if pending is None or not hmac.compare_digest(params.get("state", ""), pending.state):
            # No pending sign-in in this browser, one already completed (a replayed callback), or another's.
            raise SignInFailed("This sign-in was not started in this browser, or it was already completed.")
        if "iss" in params and params["iss"] != self.provider.issuer.url:  # RFC 9207 §2.4
            raise SignInFailed("The answer came from another issuer.")
        if "error" in params:
            if params["error"] == "access_denied":
                raise SignInFailed("The sign-in was cancelled.")
            raise SignInFailed("The identity provider could not sign you in.")
        code = params.get("code")
        if not code:
            raise SignInFailed("The answer carries no authorization code.")
        basic = base64.b64encode(f"{CLIENT_ID}:{self._secret}".encode()).decode()
        try:
            tokens = self.provider.token_endpoint.exchange(
                [
                    ("grant_type", "authorization_code"),
                    ("code", code),
                    ("redirect_uri", self.redirect_uri),
                    ("code_verifier", pending.verifier),
                ],
                f"Basic {basic}",
            )
        except OAuthError as error:
            raise SignInFailed("The authorization code was refused; please sign in again.") from error
        claims = self.verify_id_token(str(tokens["id_token"]), pending.nonce)
        org_id, sid = claims.get("org_id"), claims.get("sid")
        if not isinstance(org_id, str) or not isinstance(sid, str):
            raise SignInFailed("The ID token names no organization or session.")
        return SignedIn(str(claims["sub"]), org_id, sid, str(tokens["id_token"]))

    def verify_id_token(self, token: str, nonce: str) -> dict[str, Any]:
        """OpenID Connect Core §3.1.3.7: RS256 signature by a published key, iss, aud, azp, exp, iat, nonce."""
        try:
            kid = jwt.get_unverified_header(token).get("kid")
            keys = jwt.PyJWKSet.from_dict(self.provider.jwks())
            key = next((k for k in keys.keys if k.key_id == kid), None)
            if key is None:
                raise SignInFailed("The ID token is signed with a key the provider does not publish.")
            claims: dict[str, Any] = jwt.decode(
                token,
                key=key.key,
                algorithms=["RS256"],
                audience=CLIENT_ID,
                issuer=self.provider.issuer.url,
                leeway=self.clock_skew,
                options={"require": ["exp", "iat", "sub", "aud", "iss", "nonce"]},
            )
        except jwt.PyJWTError as error:
            raise SignInFailed("The ID token could not be verified.") from error
        if not hmac.compare_digest(str(claims["nonce"]), nonce):
            raise SignInFailed("The ID token was issued for another sign-in.")
        if claims.get("azp", CLIENT_ID) != CLIENT_ID:
            raise SignInFailed("The ID token was issued to another client.")
        return claims

    def end_session_url(self, id_token: str) -> str:
        """RP-initiated logout: the provider ends the browser session everywhere, then comes back here."""
        query = {"id_token_hint": id_token, "post_logout_redirect_uri": self.post_logout_redirect_uri}
        return f"{self.provider.issuer.endpoint(END_SESSION_PATH)}?{urlencode(query)}"
