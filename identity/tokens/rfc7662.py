"""Token introspection (RFC 7662): a confidential client asks whether a token is active, and what it stands for.

It needs client authentication: a public client's id alone proves nothing (RFC 7662 §2.1: the endpoint needs
authorization), so a public client never introspects. A confidential client sees only tokens issued to
clients of its own organization (``ClientStore.same_organization``): any other token is ``{"active": false}``,
so the answer does not tell whether a foreign token exists. ``token_type_hint`` only orders the lookup.
Revocation, the other client-authenticated token endpoint, is ``identity/tokens/rfc7009.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from identity.accounts.users import UserStore
from identity.clients.client_auth import ClientAuthenticator
from identity.clients.registry import Client, ClientStore
from identity.clients.web_origins import WebOrigins
from identity.common.clock import SYSTEM_CLOCK, Clock
from identity.common.errors import InvalidToken, UnknownRecord
from identity.common.issuer import Issuer
from identity.tokens.grants import required
from identity.tokens.store_protocols import RefreshTokens
from identity.tokens.token_endpoint import single_values
from identity.tokens.verification import TokenVerifier

if TYPE_CHECKING:
    from identity.tokens.unit_of_work import UnitOfWork

INACTIVE = {"active": False}


@dataclass(frozen=True, slots=True)
class TokenIntrospection:
    """The introspection endpoint's rules, over the stores and services the provider joins."""

    issuer: Issuer
    authenticator: ClientAuthenticator
    clients: ClientStore
    verifier: TokenVerifier
    refresh_tokens: RefreshTokens
    users: UserStore
    origins: WebOrigins
    clock: Clock = SYSTEM_CLOCK

    def introspect(
        self,
        pairs: Sequence[tuple[str, str]],
        authorization: str | None,
        origin: str | None = None,
        work: UnitOfWork | None = None,
    ) -> dict[str, Any]:
        """RFC 7662 §2.2: the token's metadata when active, else only ``active: false``. Never for a page of
        another origin: introspection answers no CORS, and no client registers an origin for it. ``work``: the
        request's unit of work, whose records read together the verification uses (``identity.tokens.unit_of_work``)."""
        params = single_values(pairs)
        caller = self.authenticator.authenticate(params, authorization, public=False)
        self.origins.check_own(caller, origin)
        token = required(params, "token")
        lookups = [self._access, self._refresh]
        if params.get("token_type_hint") == "refresh_token":
            lookups.reverse()
        for lookup in lookups:
            found = lookup(token, caller, work)
            if found is not None:
                return found
        return INACTIVE

    def _access(self, token: str, caller: Client, work: UnitOfWork | None) -> dict[str, Any] | None:
        try:
            access = self.verifier.verify_access_token(token, work)
        except InvalidToken:
            return None
        if not self.clients.same_organization(access.client_id, caller):
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
        return self._with_user(answer, access.user_id, access.session_id, access.credential_version)

    def _refresh(self, token: str, caller: Client, _work: UnitOfWork | None) -> dict[str, Any] | None:
        refresh = self.refresh_tokens.find(token)
        if refresh is None:
            return None
        if not refresh.live(self.clock.now()) or not self.clients.same_organization(refresh.client_id, caller):
            return INACTIVE
        answer: dict[str, Any] = {
            "active": True,
            "scope": " ".join(refresh.scope),
            "client_id": refresh.client_id,
            "sub": refresh.user_id,
            "exp": int(refresh.expires_at.timestamp()),
            "iat": int(refresh.issued_at.timestamp()),
            "iss": self.issuer.url,
            "aud": self.issuer.url,
            "token_type": "refresh_token",
            "jti": refresh.id,
            "org_id": refresh.org_id,
        }
        return self._with_user(answer, refresh.user_id, refresh.session_id, refresh.credential_version)

    def _with_user(
        self, answer: dict[str, Any], user_id: str | None, session_id: str | None, credential_version: int
    ) -> dict[str, Any]:
        if user_id is not None:
            try:
                user = self.users.get(user_id)
            except UnknownRecord:
                return INACTIVE
            if user.disabled or user.credential_version != credential_version:
                # its tokens were revoked when it was disabled, or its password changed; one issued in a race with
                # that is not served either (docs/identity.md, "Credential versions")
                return INACTIVE
            answer["username"] = user.email
        if session_id is not None:
            answer["sid"] = session_id
        return answer
