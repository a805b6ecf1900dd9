"""Posting logout tokens to clients (OpenID Connect Back-Channel Logout 1.0 §2.5), from the outbox's
``backchannel_logout`` channel (identity/outbox.py, identity/backchannel_logout.py).

Each claimed message becomes one POST of ``logout_token=…`` (``application/x-www-form-urlencoded``) to the
client's registered URI, with httpx: one deadline for the whole exchange (connecting, sending, and the answer's
status line and headers: httpx's own timeouts bound each read and write alone, so an endpoint that trickles its
answer a byte at a time would otherwise hold the worker past the claim's lease), no redirect followed (a 3xx is
an answer like any other), no proxy from the environment, and the answer's body never read.
§2.8: a 200 (or a 204, which some frameworks send for it) means the client logged out; anything else, or no
answer, is tried again with the outbox's backoff until its attempts run out.
"""

from __future__ import annotations

import asyncio
import logging
from urllib.parse import urlsplit

import httpx

from identity.logout_tokens import LogoutTokens
from identity.outbox import Claimed, Outbox

logger = logging.getLogger(__name__)
SUCCESS = frozenset({200, 204})


class RefusedLogout(Exception):
    """The client's endpoint answered something else than 200 or 204; the token is posted again later."""


class LogoutPoster:
    """The outbox transport of logout tokens: signs each at delivery and posts it (blocking: the worker calls it
    in a thread, never on the event loop)."""

    def __init__(
        self, tokens: LogoutTokens, *, timeout: float, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self.tokens = tokens
        self.timeout = timeout  # the whole exchange's deadline, in seconds
        self._transport = transport  # tests may give one; else httpx's own

    def __call__(self, claimed: Claimed) -> None:
        uri, token = self.tokens.prepare(claimed)  # Undeliverable when the client or its URI is gone
        status = asyncio.run(self._post(uri, token))  # the worker's thread: its own short-lived event loop
        if status not in SUCCESS:
            raise RefusedLogout(f"{_host(uri)} answered {status}")

    async def _post(self, uri: str, token: str) -> int:
        """The answer's status; TimeoutError past the deadline, httpx's errors when there is no answer."""
        async with (
            asyncio.timeout(self.timeout),
            httpx.AsyncClient(
                timeout=self.timeout, follow_redirects=False, trust_env=False, transport=self._transport
            ) as http,
            http.stream("POST", uri, data={"logout_token": token}, headers={"Cache-Control": "no-store"}) as answer,
        ):
            return answer.status_code


class LogoutCourier:
    """The logout worker's round (run in a thread every poll interval by the app's lifespan): the outbox's due
    logout tokens, with a log line for what did not go (hosts and statuses, never a token)."""

    def __init__(self, outbox: Outbox, poster: LogoutPoster) -> None:
        self.outbox = outbox
        self.poster = poster

    def __call__(self) -> dict[str, int]:
        counts = self.outbox.deliver(self.poster)
        if counts["retrying"] or counts["failed"]:
            logger.warning(
                "back-channel logout tokens: %d delivered, %d to retry, %d given up",
                counts["sent"],
                counts["retrying"],
                counts["failed"],
            )
        return counts


def _host(uri: str) -> str:
    """The URI's scheme, host and port, for messages (its path or query may carry something of the client's)."""
    parts = urlsplit(uri)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"
