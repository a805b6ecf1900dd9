"""The token endpoint (RFC 6749 §3.2): one request, one client, one grant."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from identity.client_auth import ClientAuthenticator
from identity.errors import InvalidRequest, UnauthorizedClient, UnsupportedGrantType
from identity.grants import Grant, required


def single_values(pairs: Sequence[tuple[str, str]]) -> dict[str, str]:
    """RFC 6749 §3.2: parameters sent without a value are omitted; a repeated one is ``invalid_request``."""
    params: dict[str, str] = {}
    for name, value in pairs:
        if value == "":
            continue
        if name in params:
            raise InvalidRequest(f"The parameter {name} is repeated.")
        params[name] = value
    return params


class TokenEndpoint:
    def __init__(self, authenticator: ClientAuthenticator, grants: Sequence[Grant]) -> None:
        self._authenticator = authenticator
        self._grants: Mapping[str, Grant] = {grant.grant_type: grant for grant in grants}

    @property
    def grant_types(self) -> list[str]:
        return list(self._grants)

    def exchange(self, pairs: Sequence[tuple[str, str]], authorization: str | None) -> dict[str, Any]:
        params = single_values(pairs)
        client = self._authenticator.authenticate(params, authorization)
        grant_type = required(params, "grant_type")
        grant = self._grants.get(grant_type)
        if grant is None:
            # The grant type sent is not repeated (docs/security.md): the ones supported are named instead.
            raise UnsupportedGrantType(f"The grant type is not supported; send one of: {', '.join(self._grants)}.")
        if grant_type not in client.grants:
            raise UnauthorizedClient(f"This client may not use the {grant_type} grant.")
        return grant.exchange(client, params)
