"""The ``refresh_token`` grant (RFC 6749 §6) with rotation (RFC 9700 §4.14.2).

Every use rotates the token: the answer carries a new one of the same family
(same scope, same expiry). Presenting a rotated token is ``invalid_grant`` and
revokes the whole family, whoever presents it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from identity.accounts.users import UserStore
from identity.clients.registry import SCOPES, Client
from identity.common import audit
from identity.common.errors import InvalidGrant, InvalidScope
from identity.sessions.sessions import SessionStore
from identity.tokens.grants import issued, member_of_grant, required, revoke_if_raced, token_response
from identity.tokens.minting import TokenMinter
from identity.tokens.revoked_grants import Revoker
from identity.tokens.store_protocols import RefreshTokens

if TYPE_CHECKING:
    from identity.tokens.unit_of_work import UnitOfWork


class RefreshTokenGrant:
    grant_type = "refresh_token"

    def __init__(
        self,
        refresh_tokens: RefreshTokens,
        minter: TokenMinter,
        revoker: Revoker,
        users: UserStore,
        sessions: SessionStore,
    ) -> None:
        self._refresh_tokens = refresh_tokens
        self._minter = minter
        self._revoker = revoker
        self._users = users
        self._sessions = sessions

    def exchange(self, client: Client, params: Mapping[str, str], work: UnitOfWork | None = None) -> dict[str, Any]:
        """``work`` is not used: the tokens of a user's authorization are recorded at once (``revoke_if_raced``)."""
        presented = self._refresh_tokens.find(required(params, "refresh_token"))
        if presented is None or presented.client_id != client.id:
            raise InvalidGrant("The refresh token is invalid.")
        scope = presented.scope
        if "scope" in params:
            asked = tuple(s for s in dict.fromkeys(params["scope"].split()) if s in SCOPES)  # unknown: ignored
            wider = [s for s in asked if s not in presented.scope]
            if wider or not asked:
                raise InvalidScope("The scope may only narrow the scope of the original grant.")
            scope = asked
        if not self._refresh_tokens.rotate(presented):
            now_seen = self._refresh_tokens.find(params["refresh_token"])  # what made it lose: reuse?
            if now_seen is not None and now_seen.rotated:
                self._revoker.revoke_grant(presented.grant_id)
                audit.record(
                    audit.REFRESH_TOKEN_REUSE,
                    audit.FAILURE,
                    client_id=client.id,
                    user_id=presented.user_id,
                    grant_id=presented.grant_id,
                )
                raise InvalidGrant("The refresh token was already used; its whole family is revoked.")
            raise InvalidGrant("The refresh token has expired or was revoked.")
        user, member = member_of_grant(self._users, presented, client)
        access = self._minter.access_token(
            client_id=client.id,
            org=member.org,
            scope=scope,
            user_id=user.id,
            session_id=presented.session_id,
            grant_id=presented.grant_id,
            auth_time=presented.auth_time,
            secret_hash=client.secret_hash,
            credential_version=presented.credential_version,
            amr=presented.amr,
        )
        response = token_response(access, scope)
        response["refresh_token"] = self._minter.refresh_token(presented, expires_at=presented.expires_at)
        revoke_if_raced(self._revoker, self._sessions, presented.grant_id, presented.session_id)
        if "openid" in scope:
            # OpenID Connect Core §12.2: the same sub, auth_time and organization; no nonce.
            response["id_token"] = self._minter.id_token(
                client_id=client.id,
                user=user,
                org=member.org,
                scope=scope,
                session_id=presented.session_id,
                auth_time=presented.auth_time,
                nonce=None,
                access_token=access.token,
                amr=presented.amr,
            )
        issued(self.grant_type, client, user.id, member.org.id, presented.grant_id)
        return response
