"""Token revocation (RFC 7009): a client tells the server it no longer needs a token.

It needs client authentication, but a public client (which cannot authenticate) may revoke its own tokens
(RFC 7009 §2.1: the server "verifies whether the token was issued to the client making the revocation
request"). A confidential client revokes only tokens issued to clients of its own organization
(``ClientStore.same_organization``): any other token is left alone with the same silent 200, so the answer
does not tell whether a foreign token exists. Introspection, the other client-authenticated token endpoint,
is ``identity/tokens/rfc7662.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from identity.clients.client_auth import ClientAuthenticator
from identity.clients.registry import Client, ClientStore
from identity.clients.web_origins import WebOrigins
from identity.common import audit
from identity.common.errors import InvalidToken
from identity.common.issuer import Issuer
from identity.tokens.grants import required
from identity.tokens.revoked_grants import Revoker
from identity.tokens.store_protocols import AccessTokens, RefreshTokens
from identity.tokens.token_endpoint import single_values
from identity.tokens.verification import ACCESS_TOKEN_TYPE, TokenVerifier


@dataclass(frozen=True, slots=True)
class TokenRevocation:
    """The revocation endpoint's rules, over the stores and services the provider joins."""

    issuer: Issuer
    authenticator: ClientAuthenticator
    clients: ClientStore
    verifier: TokenVerifier
    access_tokens: AccessTokens
    refresh_tokens: RefreshTokens
    revoker: Revoker
    origins: WebOrigins

    def revoke(self, pairs: Sequence[tuple[str, str]], authorization: str | None, origin: str | None = None) -> None:
        """RFC 7009 §2.2: the answer is the same whether or not there was anything to revoke. A page of an origin
        the client did not register is refused first (``identity/clients/web_origins.py``)."""
        params = single_values(pairs)
        caller = self.authenticator.authenticate(params, authorization)
        self.origins.check(caller, origin)
        token = required(params, "token")
        refresh = self.refresh_tokens.find(token)
        if refresh is not None:
            if self.clients.same_organization(refresh.client_id, caller):
                # Revoking a refresh token revokes its family and the access tokens issued from it.
                self.revoker.revoke_grant(refresh.grant_id)
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
            claims = self.verifier.decode(token, audience=self.issuer.url, typ=ACCESS_TOKEN_TYPE, verify_exp=False)
        except InvalidToken:
            return None
        client_id, jti = claims.get("client_id"), claims.get("jti")
        if not (
            isinstance(client_id, str) and isinstance(jti, str) and self.clients.same_organization(client_id, caller)
        ):
            return None
        self.access_tokens.revoke(jti)
        return jti
