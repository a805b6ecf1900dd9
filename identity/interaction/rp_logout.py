"""RP-Initiated Logout (OpenID Connect RP-Initiated Logout 1.0), GET and POST.

The client is the ``id_token_hint``'s audience or ``client_id``; the hint may
be expired but must be ours and, with ``client_id``, for that client.
``post_logout_redirect_uri`` must equal one of the client's registered sign-out
URIs, else an error page and no redirect (§3). With a hint naming the current
session the browser signs out at once; otherwise the user confirms on a page
whose form carries a CSRF token derived from the session's secret. Signing out
ends the session for every client and revokes the tokens issued in it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Sequence
from typing import Protocol

from identity.accounts.users import UserStore
from identity.clients.registry import Client, ClientStore
from identity.common import audit
from identity.common.errors import ErrorPage, InvalidToken, UnknownRecord
from identity.common.issuer import END_SESSION_PATH, Issuer
from identity.common.page_data import Page, message
from identity.interaction.authorization_request import redirect_with
from identity.interaction.browser import EXPIRED, SESSION_COOKIE, Browser, Outcome, SetCookie
from identity.sessions.sessions import BrowserSession, SessionStore
from identity.tokens.revoked_grants import Revoker
from identity.tokens.verification import TokenVerifier


class UpstreamSignOut(Protocol):
    """Where a sign-out goes on for a session that came from an organization's provider (identity/federation/)."""

    def onward(self, session_id: str, redirect_uri: str | None, state: str | None) -> str | None:
        """The provider's end-session URL to send the browser to, which comes back to go on to ``redirect_uri``
        with ``state``; None when the session did not come from a provider that has one."""
        ...


PARAMETERS = ("id_token_hint", "client_id", "post_logout_redirect_uri", "state", "ui_locales", "csrf_token", "confirm")


def csrf_token(session_secret: str) -> str:
    """Bound to the browser session's secret, which only that browser holds (HttpOnly cookie)."""
    digest = hashlib.sha256(b"end-session\x00" + session_secret.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


class EndSession:
    def __init__(
        self,
        issuer: Issuer,
        clients: ClientStore,
        sessions: SessionStore,
        verifier: TokenVerifier,
        revoker: Revoker,
        users: UserStore,
        *,
        public_clients: bool = False,
        upstream: UpstreamSignOut | None = None,
    ) -> None:
        self._upstream = upstream
        self._public_clients = public_clients  # MENUS_PUBLIC_CLIENTS: off, a public client is unknown here
        self._issuer = issuer
        self._clients = clients
        self._sessions = sessions
        self._verifier = verifier
        self._revoker = revoker
        self._users = users

    def handle(self, pairs: Sequence[tuple[str, str]], browser: Browser, *, posted: bool) -> Outcome:
        """An ``ErrorPage`` goes up as it is: an invalid sign-out request never redirects (§3)."""
        params: dict[str, str] = {}
        for name, value in pairs:
            if name in PARAMETERS and name in params:
                raise ErrorPage("Invalid sign-out request", f"The parameter {name} is repeated.")
            if value != "":
                params.setdefault(name, value)
        hint = self._hint(params.get("id_token_hint"))
        client = self._client(params.get("client_id"), hint)
        redirect_uri = params.get("post_logout_redirect_uri")
        if redirect_uri is not None and (client is None or redirect_uri not in client.post_logout_redirect_uris):
            raise ErrorPage(
                "Unregistered sign-out redirect URI",
                "The post_logout_redirect_uri is not registered for this application (or no application is named).",
            )
        session = self._sessions.current(browser.session)
        if session is None:
            return self._done(redirect_uri, params.get("state"), signed_out=False)
        if posted and "confirm" in params:
            assert browser.session is not None
            if not hmac.compare_digest(params.get("csrf_token", "").encode(), csrf_token(browser.session).encode()):
                raise ErrorPage("Form expired", "This form has expired. Go back to the application and try again.")
            if params["confirm"] != "yes":
                return Outcome(page=message("Still signed in", "You are still signed in."))
            return self._sign_out(session, redirect_uri, params.get("state"))
        if hint is not None and hint.get("sid") == session.id and hint.get("sub") == session.user_id:
            return self._sign_out(session, redirect_uri, params.get("state"))
        return Outcome(page=self._confirmation(session, browser.session or "", client, params))

    def _hint(self, token: str | None) -> dict[str, object] | None:
        if token is None:
            return None
        try:
            claims = self._verifier.decode(token, audience=None, typ="jwt", verify_exp=False)  # an ID token
        except InvalidToken as error:
            raise ErrorPage(
                "Invalid sign-out request",
                "The id_token_hint was not issued by this provider.",
                detail=f"The id_token_hint does not verify: {error.description}",
            ) from None
        if not isinstance(claims.get("aud"), str | list) or "sid" not in claims:
            raise ErrorPage("Invalid sign-out request", "The id_token_hint is not an ID token of this provider.")
        return claims

    def _client(self, client_id: str | None, hint: dict[str, object] | None) -> Client | None:
        audience = None
        if hint is not None:
            aud = hint["aud"]
            audience = aud if isinstance(aud, str) else (aud[0] if isinstance(aud, list) and len(aud) == 1 else None)
            if audience is None or (client_id is not None and client_id != audience):
                raise ErrorPage("Invalid sign-out request", "The id_token_hint was not issued to this client_id.")
        named = client_id or audience
        if named is None:
            return None
        client = self._clients.get(named) if len(named) <= 64 else None
        if client is None or client.public and not self._public_clients:
            raise ErrorPage("Unknown application", "No application is registered with this client_id.")
        return client

    def _sign_out(self, session: BrowserSession, redirect_uri: str | None, state: str | None) -> Outcome:
        self._sessions.end(session.id)
        self._revoker.revoke_session(session.id)
        audit.record(audit.SIGN_OUT, user_id=session.user_id, session_id=session.id)
        onward = self._upstream.onward(session.id, redirect_uri, state) if self._upstream is not None else None
        if onward is not None:  # the organization's provider signs the browser out too, then sends it on
            return Outcome(location=onward, cookies=(SetCookie(SESSION_COOKIE, "", EXPIRED),))
        return self._done(redirect_uri, state, signed_out=True)

    def _done(self, redirect_uri: str | None, state: str | None, *, signed_out: bool) -> Outcome:
        clear = SetCookie(SESSION_COOKIE, "", EXPIRED)
        if redirect_uri is not None:
            return Outcome(location=redirect_with(redirect_uri, {"state": state}), cookies=(clear,))
        text = "You have signed out of every application." if signed_out else "You are not signed in."
        return Outcome(page=message("Signed out", text), cookies=(clear,))

    def _confirmation(
        self, session: BrowserSession, secret: str, client: Client | None, params: dict[str, str]
    ) -> Page:
        try:
            email = self._users.get(session.user_id).email
        except UnknownRecord:
            email = ""
        return Page(
            "end_session",
            {
                "user_email": email,
                "client_name": client.name if client else None,
                "action": self._issuer.page(END_SESSION_PATH.lstrip("/")),
                "csrf_token": csrf_token(secret),
                "carried": [(name, value) for name, value in _carried(client, params) if value is not None],
            },
        )


def _carried(client: Client | None, params: dict[str, str]) -> list[tuple[str, str | None]]:
    """What the confirmation form posts back: the client (named or from the hint), the URI and the state."""
    return [
        ("client_id", client.id if client else None),
        ("post_logout_redirect_uri", params.get("post_logout_redirect_uri")),
        ("state", params.get("state")),
    ]
