"""A per-key token bucket: ``limit`` requests a minute, refilled continuously.

Buckets live in the process. With several workers or nodes each keeps its own
buckets, so a key may make up to ``limit`` requests a minute on each of them.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    limit: int
    remaining: int
    reset: int  # seconds until the bucket is full again
    retry_after: int  # seconds until the next request will be allowed (0 when allowed)

    def headers(self) -> list[tuple[bytes, bytes]]:
        return [
            (b"ratelimit-limit", str(self.limit).encode()),
            (b"ratelimit-remaining", str(self.remaining).encode()),
            (b"ratelimit-reset", str(self.reset).encode()),
        ]


class RateLimiter:
    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic, max_keys: int = 100_000) -> None:
        if per_minute < 1:
            raise ValueError("the rate limit must be at least one request a minute")
        self.limit = per_minute
        self._rate = per_minute / 60.0  # tokens a second
        self._clock = clock
        self._max_keys = max_keys
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, time of last update)

    def take(self, key: str) -> Decision:
        now = self._clock()
        tokens, then = self._buckets.get(key, (float(self.limit), now))
        tokens = min(float(self.limit), tokens + (now - then) * self._rate)
        allowed = tokens >= 1.0
        if allowed:
            tokens -= 1.0
        if len(self._buckets) >= self._max_keys and key not in self._buckets:
            self._forget_full(now)
        self._buckets[key] = (tokens, now)
        reset = math.ceil((self.limit - tokens) / self._rate)
        retry_after = 0 if allowed else max(1, math.ceil((1.0 - tokens) / self._rate))
        return Decision(allowed, self.limit, int(tokens), reset, retry_after)

    def _forget_full(self, now: float) -> None:
        """Drop buckets that have refilled: forgetting them changes nothing."""
        full = [k for k, (tokens, then) in self._buckets.items() if tokens + (now - then) * self._rate >= self.limit]
        for key in full:
            del self._buckets[key]
