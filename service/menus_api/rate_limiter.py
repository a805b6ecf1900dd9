"""The per-key rate limit of the menus API: a sliding window counter of one minute, by the ``limits`` library.

Why ``limits``: a well-kept library with an async API whose sliding-window-counter strategy runs the same
way in process memory and in Redis (one Lua script: count and admit atomically), so one class counts per
process or for the whole deployment. Its cost per request and its memory per key are constant: two
counters per key (this minute's and the last one's), whatever the limit and the traffic.

The semantics (docs/nodes.md): a request is admitted while ``floor(previous × (1 − elapsed) + current)``
is below the limit, where ``current`` counts the requests admitted in the current minute, ``previous``
those of the minute before, and ``elapsed`` is the share of the current minute gone by. It approximates a
moving window by assuming the previous minute's requests were spread evenly over it: in any 60 seconds it
admits at most twice the limit in the worst case (a burst at the very end of one minute and another at the
start of the next), and exactly the limit when traffic is even; over two minutes never more than twice.

Where the windows live, in process memory or in Redis, and how an outage of Redis is met (the limit fails
open): ``limit_storage.py``. How a worker spends allowances of the counters in Redis from memory, and how the
requests that must ask share their round trips: ``redis_windows.py``.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from limits import RateLimitItemPerSecond
from limits.storage import MemoryStorage
from limits.strategies import SlidingWindowCounterRateLimiter as SlidingWindowCounter

from service.menus_api.limit_storage import RedisTuning, StorageHealth, is_shared, redis_pool
from service.menus_api.redis_windows import Counted, Pipelines, RedisWindows, RoundTrip
from service.settings import DEFAULT_RATE_LIMIT_STORAGE as MEMORY


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    limit: int
    remaining: int
    reset: int  # seconds until the window admits one request more than now (0: it admits its whole limit)
    retry_after: int  # seconds until the next request will be allowed (0 when allowed)

    def headers(self) -> list[tuple[bytes, bytes]]:
        return [
            (b"ratelimit-limit", str(self.limit).encode()),
            (b"ratelimit-remaining", str(self.remaining).encode()),
            (b"ratelimit-reset", str(self.reset).encode()),
        ]


class RateLimiter:
    """``limit`` requests per API key per window of ``window_seconds`` (60: the contract's minute), as a sliding
    window counter (the module's docstring)."""

    def __init__(
        self,
        per_minute: int,
        storage: str = MEMORY,
        *,
        redis: RedisTuning,
        window_seconds: int = 60,
        health: StorageHealth | None = None,
        clock: Callable[[], float] = time.monotonic,
        round_trips: Callable[[RoundTrip], RoundTrip] | None = None,
    ) -> None:
        """``clock`` times the allowances of a limit in Redis; ``round_trips`` wraps each round trip to Redis (a
        test counts or holds them)."""
        if per_minute < 1:
            raise ValueError("the rate limit must be at least one request a minute")
        self.limit = per_minute
        self.shared = is_shared(storage)
        self.health = health or StorageHealth(redis.retry_after_outage, redis.log_every)
        self._item = RateLimitItemPerSecond(per_minute, window_seconds)
        self._window = float(window_seconds)
        # In memory, the blocking strategy: it never waits, and the asyncio memory storage would start an
        # expiry task (and a thread hop) on nearly every request. Redis: the library's scripts, pipelined.
        self._pool: Any = None
        self._memory: SlidingWindowCounter | None = None
        self._redis: RedisWindows | None = None
        if self.shared:
            self._pool = redis_pool(storage, redis.timeout)
            round_trip: RoundTrip = Pipelines(self._pool)
            if round_trips is not None:
                round_trip = round_trips(round_trip)
            self._redis = RedisWindows(round_trip, self._item, self.health, redis, clock=clock)
        else:
            self._storage = MemoryStorage()  # what storage_from_string("memory://") makes
            self._memory = SlidingWindowCounter(self._storage)
        self._ping_timeout = redis.timeout
        self._open = Decision(True, per_minute, per_minute, 0, 0)  # failing open: nothing is counted

    async def take(self, key: str) -> Decision:
        """Count one request of ``key``: admitted while the weighted count is below ``limit``."""
        if self._memory is not None:
            allowed = self._memory.hit(self._item, key)
            window = self._storage.get_sliding_window(self._item.key_for(key), self._item.get_expiry())
            return self._decide(Counted(allowed, *window))
        assert self._redis is not None
        counted = self._redis.spend(key)  # this worker's allowance of the key: no round trip
        if counted is None:
            if not self.health.usable():
                return self._open
            counted = await self._redis.take(key)
        return self._open if counted is None else self._decide(counted)

    def _decide(self, counted: Counted) -> Decision:
        """The headers' numbers: ``remaining`` is what the library's ``get_window_stats`` reports; ``reset`` the
        seconds until one request more is admitted than now; ``retry_after`` the seconds until the next is."""
        weighted = self._weighted(counted, 0.0)
        remaining = max(0, self.limit - math.floor(weighted))
        # Remaining grows by one once the weighted count falls below its whole part; with all of it left, no wait.
        reset = 0 if remaining >= self.limit else max(1, _whole(self._until_below(counted, math.floor(weighted))))
        retry_after = 0 if counted.allowed else max(1, _whole(self._until_below(counted, self.limit)))
        return Decision(counted.allowed, self.limit, remaining, max(reset, retry_after), retry_after)

    def _weighted(self, counted: Counted, later: float) -> float:
        """The library's weighted count ``later`` seconds from now, while the current minute lasts."""
        return counted.previous * max(0.0, counted.previous_ttl - later) / self._window + counted.current

    def _until_below(self, counted: Counted, target: int) -> float:
        """Seconds until the weighted count is below ``target`` (then a request is admitted with ``target`` free)."""
        if self._weighted(counted, 0.0) < target:
            return 0.0
        if counted.current < target:  # the previous minute's weight decays linearly until the minute ends
            return counted.previous_ttl - (target - counted.current) * self._window / counted.previous
        # Only after the current minute ends: it becomes the previous one, and its own weight decays.
        minute_ends = max(0.0, counted.current_ttl - self._window)
        return minute_ends + self._window * (1 - target / counted.current)

    async def aclose(self) -> None:
        """Close the Redis connections (at shutdown)."""
        if self._pool is not None:
            await self._pool.disconnect()

    async def reachable(self) -> bool:
        """For ``/readyz``: True in memory; with Redis, whether it answers a ping within the timeout."""
        if not self.shared:
            return True
        import redis.asyncio
        from redis.exceptions import RedisError

        try:
            client = redis.asyncio.Redis(connection_pool=self._pool)
            answered = bool(await asyncio.wait_for(client.ping(), self._ping_timeout))
        except (TimeoutError, RedisError, OSError):
            answered = False
        if answered:
            self.health.recovered()
        return answered


def _whole(seconds: float) -> int:
    """Whole seconds, rounded up (a header never says "now" before it is so)."""
    return max(0, math.ceil(seconds - 1e-9))
