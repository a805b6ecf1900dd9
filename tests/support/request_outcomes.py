"""Requests under load, each on its own connection, each with its outcome recorded.

An outcome is a complete response (its status), a refused connection (nothing listens: not accepted), a
connection closed before the server read the request (RFC 9112 §9.6: a server closes connections it has not
started to read when it stops; a client retries on another), or a failure: a truncated response, a timeout,
anything else. The reliability tests count them rather than time them.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import requests

REFUSED = "refused"
CLOSED_UNREAD = "closed before read"
FAILED = "failed"


@dataclass(frozen=True)
class Outcome:
    kind: str  # which request: "menus", "sign-in", "token", …
    started: float  # time.monotonic() when it was sent
    ended: float
    status: int | None  # the response's status; None when there was no complete response
    error: str | None = None  # REFUSED, CLOSED_UNREAD or FAILED (with what happened) when status is None

    @property
    def complete(self) -> bool:
        return self.status is not None


def classify(error: BaseException) -> str:
    """What a ``requests`` exception says happened to the connection."""
    text = repr(error)
    if isinstance(error, requests.ConnectionError) and "Connection refused" in text:
        return REFUSED
    if isinstance(error, requests.ConnectionError) and (
        "RemoteDisconnected" in text or "Connection reset by peer" in text or "ConnectionResetError" in text
    ):
        return CLOSED_UNREAD
    return f"{FAILED}: {text[:300]}"


@dataclass
class Ledger:
    """Every outcome, from every thread."""

    outcomes: list[Outcome] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, kind: str, call: Callable[[], requests.Response]) -> requests.Response | None:
        started = time.monotonic()
        try:
            response = call()
        except Exception as error:
            self._add(Outcome(kind, started, time.monotonic(), None, classify(error)))
            return None
        self._add(Outcome(kind, started, time.monotonic(), response.status_code))
        return response

    def _add(self, outcome: Outcome) -> None:
        with self.lock:
            self.outcomes.append(outcome)

    def snapshot(self) -> list[Outcome]:
        with self.lock:
            return list(self.outcomes)

    def count(self) -> int:
        with self.lock:
            return len(self.outcomes)

    def by(self, predicate: Callable[[Outcome], bool]) -> Counter[str]:
        return Counter(o.kind for o in self.snapshot() if predicate(o))
