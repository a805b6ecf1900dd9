"""Token introspection (RFC 7662) and revocation (RFC 7009).

Both need client authentication; a public client (which cannot authenticate) may revoke its own
tokens (RFC 7009 §2.1: the server "verifies whether the token was issued to the client making the
revocation request") but never introspect (RFC 7662 §2.1: the endpoint needs authorization, and a
public client's id alone proves nothing). A confidential client sees and revokes only tokens issued
to clients of its own organization: any other token is ``{"active": false}``
for introspection and left alone (a silent 200) by revocation, so neither
tells whether a foreign token exists. ``token_type_hint`` only orders the
lookup.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from identity import audit
from identity.client_auth import ClientAuthenticator
from identity.clients import Client, ClientStore
from identity.clock import SYSTEM_CLOCK, Clock
from identity.errors import InvalidToken, UnknownRecord
from identity.grants import required
from identity.issuer import Issuer
from identity.revoked_grants import Revoker
from identity.stores import AccessTokens, RefreshTokens
from identity.token_endpoint import single_values
from identity.users import UserStore
from identity.verification import ACCESS_TOKEN_TYPE, TokenVerifier
from identity.web_origins import WebOrigins

INACTIVE = {"active": False}


class TokenInspector:
    def __init__(
        self,
        issuer: Issuer,
        authenticator: ClientAuthenticator,
        clients: ClientStore,
        verifier: TokenVerifier,
        access_tokens: AccessTokens,
        refresh_tokens: RefreshTokens,
        revoker: Revoker,
        users: UserStore,
        origins: WebOrigins,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._origins = origins
        self._issuer = issuer
        self._authenticator = authenticator
        self._clients = clients
        self._verifier = verifier
        self._access_tokens = access_tokens
        self._refresh_tokens = refresh_tokens
        self._revoker = revoker
        self._users = users
        self._clock = clock

    def introspect(
        self, pairs: Sequence[tuple[str, str]], authorization: str | None, origin: str | None = None
    ) -> dict[str, Any]:
        """RFC 7662 §2.2: the token's metadata when active, else only ``active: false``. Never for a page of
        another origin: introspection answers no CORS, and no client registers an origin for it."""
        params = single_values(pairs)
        caller = self._authenticator.authenticate(params, authorization, public=False)
        self._origins.check_own(caller, origin)
        token = required(params, "token")
        lookups = [self._access, self._refresh]
        if params.get("token_type_hint") == "refresh_token":
            lookups.reverse()
        for lookup in lookups:
            found = lookup(token, caller)
            if found is not None:
                return found
        return INACTIVE

    def revoke(self, pairs: Sequence[tuple[str, str]], authorization: str | None, origin: str | None = None) -> None:
        """RFC 7009 §2.2: the answer is the same whether or not there was anything to revoke. A page of an origin
        the client did not register is refused first (``identity/web_origins.py``)."""
        params = single_values(pairs)
        caller = self._authenticator.authenticate(params, authorization)
        self._origins.check(caller, origin)
        token = required(params, "token")
        refresh = self._refresh_tokens.find(token)
        if refresh is not None:
            if self._same_organization(refresh.client_id, caller):
                # Revoking a refresh token revokes its family and the access tokens issued from it.
                self._revoker.revoke_grant(refresh.grant_id)
                audit.record(
                    audit.TOKEN_REVOKED, client_id=caller.id, token_type="refresh_token", grant_id=refresh.grant_id
                )
                return
        elif (jti := self._revoke_access(token, caller)) is not None:
            audit.record(audit.TOKEN_REVOKED, client_id=caller.id, token_type="access_token", jti=jti)
            return
        audit.record(audit.TOKEN_REVOKED, audit.FAILURE, client_id=caller.id, reason="unknown_token")

    def _revoke_access(self, token: str, caller: Client) -> str | None:
        """Revoke the access token ``token`` if it is ours and of the caller's organization; its jti if so."""
        try:
            claims = self._verifier.decode(token, audience=self._issuer.url, typ=ACCESS_TOKEN_TYPE, verify_exp=False)
        except InvalidToken:
            return None
        client_id, jti = claims.get("client_id"), claims.get("jti")
        if not (isinstance(client_id, str) and isinstance(jti, str) and self._same_organization(client_id, caller)):
            return None
        self._access_tokens.revoke(jti)
        return jti

    def _access(self, token: str, caller: Client) -> dict[str, Any] | None:
        try:
            access = self._verifier.verify_access_token(token)
        except InvalidToken:
            return None
        if not self._same_organization(access.client_id, caller):
            return INACTIVE
        claims = access.claims
        answer: dict[str, Any] = {
            "active": True,
            "scope": " ".join(access.scope),
            "client_id": access.client_id,
            "sub": access.sub,
            "exp": claims["exp"],
            "iat": claims["iat"],
            "iss": claims["iss"],
            "aud": claims["aud"],
            "token_type": "Bearer",
            "jti": access.jti,
            "org_id": access.org_id,
        }
        return self._with_user(answer, access.user_id, access.session_id)

    def _refresh(self, token: str, caller: Client) -> dict[str, Any] | None:
        refresh = self._refresh_tokens.find(token)
        if refresh is None:
            return None
        if not refresh.live(self._clock.now()) or not self._same_organization(refresh.client_id, caller):
            return INACTIVE
        answer: dict[str, Any] = {
            "active": True,
            "scope": " ".join(refresh.scope),
            "client_id": refresh.client_id,
            "sub": refresh.user_id,
            "exp": int(refresh.expires_at.timestamp()),
            "iat": int(refresh.issued_at.timestamp()),
            "iss": self._issuer.url,
            "aud": self._issuer.url,
            "token_type": "refresh_token",
            "jti": refresh.id,
            "org_id": refresh.org_id,
        }
        return self._with_user(answer, refresh.user_id, refresh.session_id)

    def _with_user(self, answer: dict[str, Any], user_id: str | None, session_id: str | None) -> dict[str, Any]:
        if user_id is not None:
            try:
                user = self._users.get(user_id)
            except UnknownRecord:
                return INACTIVE
            if user.disabled:  # its tokens were revoked when it was disabled; one issued in a race is not served
                return INACTIVE
            answer["username"] = user.email
        if session_id is not None:
            answer["sid"] = session_id
        return answer

    def _same_organization(self, client_id: str, caller: Client) -> bool:
        """The token's client is the caller, or (for a confidential caller) a client of the same organization."""
        if client_id == caller.id:
            return True
        if caller.public:
            return False  # anyone may send a public client's id: it reaches no other client's tokens
        owner = self._clients.get(client_id)
        return owner is not None and owner.org_id == caller.org_id
