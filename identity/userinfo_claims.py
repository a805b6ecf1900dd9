"""The UserInfo endpoint (OpenID Connect Core §5.3) and bearer tokens (RFC 6750)."""

from __future__ import annotations

import re
from typing import Any

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


class UserInfo:
    def __init__(self, verifier: TokenVerifier, users: UserStore) -> None:
        self._verifier = verifier
        self._users = users

    def claims(self, authorization: str | None) -> dict[str, Any]:
        """The user's claims, by the token's scopes, with the organization chosen at sign-in."""
        access: AccessToken = self._verifier.verify_access_token(bearer_token(authorization))
        if access.user_id is None:
            raise InvalidToken("An application token has no user.")
        if "openid" not in access.scope:
            raise InsufficientScope("This token lacks the scope openid.", scope="openid")
        found = self._users.member(access.user_id, access.org_id)
        if found is None:
            raise InvalidToken("The user no longer exists or no longer belongs to the organization.")
        user, member = found
        return {
            "sub": user.id,
            **profile_claims(user, access.scope),
            "org_id": member.org.id,
            "org_name": member.org.name,
        }
