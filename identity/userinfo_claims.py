"""The UserInfo endpoint (OpenID Connect Core §5.3) and bearer tokens (RFC 6750)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from identity.clients import ClientStore
from identity.errors import InsufficientScope, InvalidToken, MalformedBearerRequest
from identity.minting import profile_claims
from identity.users import UserStore
from identity.verification import AccessToken, TokenVerifier

TOKEN68 = re.compile(r"[A-Za-z0-9\-._~+/]+=*")  # RFC 6750 §2.1 b64token


def bearer_token(authorization: str | None) -> str:
    """RFC 6750 §2.1: the token of an ``Authorization: Bearer`` header."""
    if not authorization or authorization[:7].lower() not in ("bearer ", "bearer"):
        raise InvalidToken("An access token is required.", token_sent=False)
    token = authorization[7:].strip()
    if not TOKEN68.fullmatch(token):
        raise MalformedBearerRequest("The Authorization header is malformed.")
    return token


def presented_token(authorization: str | None, form: Sequence[tuple[str, str]] = ()) -> str:
    """The access token of a request to a protected resource, sent in exactly one way.

    RFC 6750 §2.1: an ``Authorization: Bearer`` header; §2.2 (and OpenID Connect Core §5.3.1 for UserInfo):
    the ``access_token`` field of a form-encoded POST body. RFC 6750 §2: "Clients MUST NOT use more than one
    method to transmit the token in each request", so a Bearer header beside a body token is
    ``invalid_request`` (400), and so is a repeated ``access_token`` field."""
    in_body = [value for name, value in form if name == "access_token"]
    if len(in_body) > 1:
        raise MalformedBearerRequest("The parameter access_token is repeated.")
    if not in_body:
        return bearer_token(authorization)
    if authorization and authorization[:7].lower() in ("bearer ", "bearer"):
        raise MalformedBearerRequest(
            "Send the access token one way only: in the Authorization header or in the body, not both."
        )
    return in_body[0]


class UserInfo:
    def __init__(
        self, verifier: TokenVerifier, users: UserStore, clients: ClientStore, *, public_clients: bool = False
    ) -> None:
        self._verifier = verifier
        self._users = users
        self._clients = clients
        self._public_clients = public_clients  # MENUS_PUBLIC_CLIENTS: whether public clients' tokens are served

    def claims(self, authorization: str | None, form: Sequence[tuple[str, str]] = ()) -> dict[str, Any]:
        """The user's claims, by the token's scopes, with the organization chosen at sign-in; the token comes
        from the ``Authorization`` header or from the ``form`` of a POST body (``presented_token``)."""
        access: AccessToken = self._verifier.verify_access_token(presented_token(authorization, form))
        if access.user_id is None:
            raise InvalidToken("An application token has no user.")
        if "openid" not in access.scope:
            raise InsufficientScope("This token lacks the scope openid.", scope="openid")
        if not self._public_clients:
            # A node without MENUS_PUBLIC_CLIENTS treats a public client as unknown at every endpoint, so a token
            # issued to one on another node (or before the setting was turned off) is not served here.
            client = self._clients.get(access.client_id)
            if client is not None and client.public:
                raise InvalidToken("Public clients are off on this node.")
        found = self._users.member(access.user_id, access.org_id)
        if found is None:
            raise InvalidToken("The user no longer exists, is disabled, or no longer belongs to the organization.")
        user, member = found
        return {
            "sub": user.id,
            **profile_claims(user, access.scope),
            "org_id": member.org.id,
            "org_name": member.org.name,
        }
