"""The UserInfo endpoint (OpenID Connect Core §5.3); its access token as presented: identity/tokens/bearer_tokens.py.

The token's record and the user's row are read as before (two statements and the memberships', no more): a token
issued under a credential version that is no longer the user's (a password changed or reset, or the user disabled,
as it was issued) is ``invalid_token``, as a revoked one is (docs/identity.md, "Credential versions").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from identity.accounts.users import UserStore
from identity.clients.registry import ClientStore
from identity.common.errors import InsufficientScope, InvalidToken
from identity.tokens.bearer_tokens import presented_token
from identity.tokens.minting import profile_claims
from identity.tokens.verification import AccessToken, TokenVerifier


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
        if user.credential_version != access.credential_version:  # issued in a race with the change: revoked
            raise InvalidToken("The access token was revoked.")
        return {
            "sub": user.id,
            **profile_claims(user, access.scope),
            "org_id": member.org.id,
            "org_name": member.org.name,
        }
