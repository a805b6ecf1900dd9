"""The ``authorization_code`` grant (RFC 6749 §4.1.3, RFC 7636 §4.6, OpenID Connect Core §3.1.3)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from identity.accounts.users import UserStore
from identity.clients.registry import Client
from identity.common import audit
from identity.common.errors import InvalidGrant
from identity.sessions.sessions import SessionStore
from identity.tokens.grants import issued, member_of_grant, required, revoke_if_raced, token_response
from identity.tokens.minting import TokenMinter
from identity.tokens.pkce import verifies
from identity.tokens.revoked_grants import Revoker
from identity.tokens.store_protocols import AuthorizationCodes

if TYPE_CHECKING:
    from identity.tokens.unit_of_work import UnitOfWork


class AuthorizationCodeGrant:
    grant_type = "authorization_code"

    def __init__(
        self, codes: AuthorizationCodes, minter: TokenMinter, revoker: Revoker, users: UserStore, sessions: SessionStore
    ) -> None:
        self._codes = codes
        self._minter = minter
        self._revoker = revoker
        self._users = users
        self._sessions = sessions

    def exchange(self, client: Client, params: Mapping[str, str], work: UnitOfWork | None = None) -> dict[str, Any]:
        """``work`` is not used: the tokens of a user's authorization are recorded at once (``revoke_if_raced``)."""
        """RFC 6749 §4.1.2: the code is single-use; a replay is refused and revokes its tokens."""
        code = required(params, "code")
        redirect_uri = required(params, "redirect_uri")
        consumed = self._codes.consume(code, client.id)
        if consumed.replayed is not None:
            self._revoker.revoke_grant(consumed.replayed)
            audit.record(audit.CODE_REPLAY, audit.FAILURE, client_id=client.id, grant_id=consumed.replayed)
            raise InvalidGrant("The authorization code was already used; the tokens issued from it are revoked.")
        grant = consumed.grant
        if grant is None:
            raise InvalidGrant("The authorization code is invalid, has expired, or was issued to another client.")
        if grant.redirect_uri != redirect_uri:
            raise InvalidGrant("The redirect_uri does not match the one of the authorization request.")
        verifier = params.get("code_verifier")
        if grant.code_challenge is not None:
            if not verifier:
                raise InvalidGrant("The code_verifier is missing.")
            if not verifies(verifier, grant.code_challenge):
                raise InvalidGrant("The code_verifier does not match the code_challenge.")
        elif verifier:
            # RFC 9700 §2.1.1: a verifier without a challenge is a downgrade attempt.
            raise InvalidGrant("A code_verifier was sent, but the authorization request had no code_challenge.")
        user, member = member_of_grant(self._users, grant, client)
        access = self._minter.access_token(
            client_id=client.id,
            org=member.org,
            scope=grant.scope,
            user_id=user.id,
            session_id=grant.session_id,
            grant_id=grant.grant_id,
            auth_time=grant.auth_time,
            secret_hash=client.secret_hash,
            credential_version=grant.credential_version,
            amr=grant.amr,
        )
        response = token_response(access, grant.scope)
        response["id_token"] = self._minter.id_token(
            client_id=client.id,
            user=user,
            org=member.org,
            scope=grant.scope,
            session_id=grant.session_id,
            auth_time=grant.auth_time,
            nonce=grant.nonce,
            access_token=access.token,
            amr=grant.amr,
        )
        if "offline_access" in grant.scope and "refresh_token" in client.grants:
            response["refresh_token"] = self._minter.refresh_token(grant, public=client.public)
        revoke_if_raced(self._revoker, self._sessions, grant.grant_id, grant.session_id)
        issued(self.grant_type, client, user.id, member.org.id, grant.grant_id)
        return response
