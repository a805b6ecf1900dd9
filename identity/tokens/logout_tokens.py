"""OpenID Connect Back-Channel Logout 1.0 §2.4: the logout token of a message the outbox claimed, signed at
delivery, and the URI it is posted to (what is queued, and when: ``identity/sessions/backchannel_logout.py``).

A module of its own above the client store and the token minter, so that the back-channel bookkeeping, which
the code store calls, imports neither.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from identity.clients.registry import ClientStore
from identity.mail.outbox import Claimed, Undeliverable
from identity.tokens.minting import TokenMinter

LOGOUT_TOKEN_TTL = timedelta(minutes=2)  # a logout token's exp, from the attempt that posts it


@dataclass(frozen=True, slots=True)
class LogoutPost:
    """What to post for one claimed message: where, the signed token, and whether the client's URI may reach
    internal addresses (``--allow-internal``, identity/common/outbound_uris.py)."""

    uri: str
    token: str
    internal: bool = False


class LogoutTokens:
    """What the delivery worker posts for a claimed message: the client's URI now, and a token signed now."""

    def __init__(self, clients: ClientStore, minter: TokenMinter, lifetime: timedelta = LOGOUT_TOKEN_TTL) -> None:
        self._clients = clients
        self._minter = minter
        self.lifetime = lifetime

    def prepare(self, claimed: Claimed) -> LogoutPost:
        """The URI to post to and the logout token; ``Undeliverable`` when the client is gone or has no URI."""
        client = self._clients.get(claimed.mail.recipient)
        if client is None or client.backchannel_logout_uri is None:
            raise Undeliverable("the client was deleted or no longer has a back-channel logout URI")
        params = claimed.mail.params
        token = self._minter.logout_token(
            client_id=client.id,
            jti=claimed.id,
            subject=params.get("sub"),
            session_id=params.get("sid"),
            lifetime=self.lifetime,
        )
        return LogoutPost(client.backchannel_logout_uri, token, client.backchannel_logout_internal)
