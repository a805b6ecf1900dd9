"""The ``client_credentials`` grant (RFC 6749 §4.4): application tokens.

The token's subject is the client and its organization the client's; there is
no refresh token and no ID token. ``scope`` may ask only for application scopes
the client is allowed (``members:read``); unknown scopes are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from identity.accounts.organizations import OrganizationStore
from identity.clients.registry import APPLICATION_SCOPES, SCOPES, Client
from identity.common.errors import InvalidScope, UnknownRecord
from identity.tokens.grants import issued, token_response
from identity.tokens.minting import TokenMinter

if TYPE_CHECKING:
    from identity.tokens.unit_of_work import UnitOfWork


class ClientCredentialsGrant:
    grant_type = "client_credentials"

    def __init__(self, minter: TokenMinter, organizations: OrganizationStore) -> None:
        self._minter = minter
        self._organizations = organizations

    def exchange(self, client: Client, params: Mapping[str, str], work: UnitOfWork | None = None) -> dict[str, Any]:
        """With ``work``, the token's record and its audit line are written when the unit commits."""
        allowed = [s for s in client.scopes if s in APPLICATION_SCOPES]
        if "scope" in params:
            asked = [s for s in dict.fromkeys(params["scope"].split()) if s in SCOPES]
            refused = [s for s in asked if s not in allowed]
            if refused:
                raise InvalidScope(f"This client may not request the scope {refused[0]} with client_credentials.")
            scope = tuple(asked)
        else:
            scope = tuple(allowed)
        if not scope:
            raise InvalidScope("This client may not request any scope with client_credentials.")
        org = self._organizations.known(client.org_id)
        if org is None:
            raise UnknownRecord(client.org_id)
        access = self._minter.access_token(
            client_id=client.id, org=org, scope=scope, user_id=None, secret_hash=client.secret_hash, work=work
        )
        issued(self.grant_type, client, None, org.id, None, work)
        return token_response(access, scope)
