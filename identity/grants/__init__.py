"""Grants of the token endpoint, one small unit each, picked by ``grant_type``.

Each grant reads the parameters it needs, validates them, and answers a token
response (RFC 6749 §5.1) or raises an ``OAuthError`` (§5.2).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from identity.clients import Client


class Grant(Protocol):
    grant_type: str

    def exchange(self, client: Client, params: Mapping[str, str]) -> dict[str, Any]: ...


def required(params: Mapping[str, str], name: str) -> str:
    from identity.errors import InvalidRequest

    value = params.get(name)
    if not value:
        raise InvalidRequest(f"The parameter {name} is missing.")
    return value
