"""The token endpoint (RFC 6749 §3.2): one request, one client, one grant."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from identity.clients.client_auth import ClientAuthenticator
from identity.clients.web_origins import WebOrigins
from identity.common.errors import InvalidRequest, UnauthorizedClient, UnsupportedGrantType
from identity.common.fields import RepeatedField, once_each
from identity.tokens.grants import Grant, required

if TYPE_CHECKING:
    from identity.tokens.unit_of_work import UnitOfWork


def single_values(pairs: Sequence[tuple[str, str]]) -> dict[str, str]:
    """RFC 6749 §3.2: parameters sent without a value are omitted; a repeated one is ``invalid_request``."""
    try:
        return once_each((name, value) for name, value in pairs if value != "")
    except RepeatedField as repeated:
        raise InvalidRequest(f"The parameter {repeated.name} is repeated.") from None


class TokenEndpoint:
    def __init__(self, authenticator: ClientAuthenticator, grants: Sequence[Grant], origins: WebOrigins) -> None:
        self._authenticator = authenticator
        self._origins = origins
        self._grants: Mapping[str, Grant] = {grant.grant_type: grant for grant in grants}

    @property
    def grant_types(self) -> list[str]:
        return list(self._grants)

    def exchange(
        self,
        pairs: Sequence[tuple[str, str]],
        authorization: str | None,
        origin: str | None = None,
        work: UnitOfWork | None = None,
    ) -> dict[str, Any]:
        """``origin``: the request's ``Origin`` header; a page of an origin the client did not register is
        refused here, after client authentication and before the grant spends a code or a refresh token.
        ``work``: the request's unit of work, handed to the grant (``identity.tokens.unit_of_work``)."""
        params = single_values(pairs)
        client = self._authenticator.authenticate(params, authorization)
        self._origins.check(client, origin)
        grant_type = required(params, "grant_type")
        grant = self._grants.get(grant_type)
        if grant is None:
            # The grant type sent is not repeated (docs/security.md): the ones supported are named instead.
            raise UnsupportedGrantType(f"The grant type is not supported; send one of: {', '.join(self._grants)}.")
        if grant_type not in client.grants or client.public and grant_type == "client_credentials":
            # RFC 6749 §4.4: client_credentials "MUST only be used by confidential clients".
            raise UnauthorizedClient(f"This client may not use the {grant_type} grant.")
        return grant.exchange(client, params, work)
