"""Posting logout tokens to clients (OpenID Connect Back-Channel Logout 1.0 §2.5), from the outbox's
``backchannel_logout`` channel (identity/outbox.py, identity/backchannel_logout.py).

Each claimed message becomes one POST of ``logout_token=…`` (``application/x-www-form-urlencoded``) to the
client's registered URI, with httpx: a bounded timeout for connecting and for each read and write, no redirect
followed (a 3xx is an answer like any other), no proxy from the environment, and the answer's body never read.
§2.8: a 200 (or a 204, which some frameworks send for it) means the client logged out; anything else, or no
answer, is tried again with the outbox's backoff until its attempts run out.
"""

from __future__ import annotations

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

    def __init__(self, tokens: LogoutTokens, *, timeout: float, http: httpx.Client | None = None) -> None:
        self.tokens = tokens
        self.http = http or httpx.Client(timeout=timeout, follow_redirects=False, trust_env=False)

    def __call__(self, claimed: Claimed) -> None:
        uri, token = self.tokens.prepare(claimed)  # Undeliverable when the client or its URI is gone
        with self.http.stream(
            "POST",
            uri,
            data={"logout_token": token},
            headers={"Cache-Control": "no-store"},
        ) as answer:
            if answer.status_code not in SUCCESS:
                raise RefusedLogout(f"{_host(uri)} answered {answer.status_code}")


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
