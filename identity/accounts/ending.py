"""What a change of credential ends, as the accounts see it.

A password reset, a password changed from the console and a disable end every browser session and revoke every
refresh and access token of the user, in the transaction that changes the credential (RFC 9700 §4.14). The accounts
do not know sessions or tokens: they are handed a ``Revoking`` (``identity.tokens.revoked_grants.Revoker``, wired by
the provider), as fosite's storage takes the interfaces a handler needs.
"""

from __future__ import annotations

from typing import Protocol

from sqlalchemy.engine import Connection


class Revoking(Protocol):
    def revoke_user_in(self, connection: Connection, user_id: str) -> int:
        """End the user's sessions and tokens in the caller's transaction; how many logout tokens were written."""
        ...

    def written(self, logout_tokens: int) -> None:
        """After the commit: ring for the logout tokens that were written."""
        ...
