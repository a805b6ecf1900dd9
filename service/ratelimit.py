"""The per-key rate limit of the menus API: a moving window of one minute, counted by the ``limits`` library.

Why ``limits``: a well-kept library with an async API whose moving-window strategy runs the same
way in process memory and in Redis (one Lua script: count and admit atomically), so one class
counts per process or for the whole deployment. A moving window never admits more than
``limit`` requests in any 60 seconds, with no burst at a window's edge.

Where the windows live (``MENUS_RATE_LIMIT_STORAGE``):

- unset or ``memory://``: in each process; with ``serve --workers N`` on several nodes a key may
  make ``limit`` requests a minute on each process;
- ``redis://host:port/db`` (or ``rediss://``, ``redis+unix://``): in Redis, one limit for every
  worker of every node. The sign-in throttle (``identity.throttle``) keeps its counters there too.

Redis unreachable: the menus API fails open. Requests are answered without a limit, the outage is
logged at most once a minute and counted in ``regional_menus_rate_limit_storage_errors_total``,
Redis is not asked again for ``RETRY_AFTER_OUTAGE`` seconds (no timeout on every request), and
``/readyz`` answers "degraded" (200) until Redis answers its ping again.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis.asyncio
from limits import RateLimitItemPerSecond
from limits.aio.storage import RedisStorage as AsyncRedisStorage
from limits.aio.strategies import MovingWindowRateLimiter as AsyncMovingWindow
from limits.errors import StorageError
from limits.storage import storage_from_string
from limits.strategies import MovingWindowRateLimiter as MovingWindow
from prometheus_client import Counter
from sqlalchemy.engine import Engine

from identity.throttle import Counters, FallbackCounters, SqlCounters, StorageCounters
from service.settings import DEFAULT_RATE_LIMIT_STORAGE as MEMORY
from service.settings import check_storage_url

log = logging.getLogger(__name__)

REDIS_TIMEOUT = 0.5  # seconds a Redis connection or command may take before the limit fails open
RETRY_AFTER_OUTAGE = 2.0  # seconds after a Redis failure during which requests do not wait for Redis
LOG_EVERY = 60.0  # seconds between two log lines about the same Redis outage
KEY_PREFIX = "regional-menus"  # every key this service writes to Redis starts with it

STORAGE_ERRORS = Counter(
    "regional_menus_rate_limit_storage_errors",
    "Failed calls to the shared rate-limit storage (Redis), by use: api_key (failed open) or sign_in.",
    ["use"],
)


def is_shared(url: str) -> bool:
    return check_storage_url(url) != MEMORY


def redis_options() -> dict[str, Any]:
    """Timeouts for redis-py, so that an unreachable Redis costs half a second, not a hung request."""
    return {
        "socket_timeout": REDIS_TIMEOUT,
        "socket_connect_timeout": REDIS_TIMEOUT,
        "key_prefix": KEY_PREFIX,
        "wrap_exceptions": True,
    }


def sync_storage(url: str) -> Any:
    """The blocking ``limits`` storage for ``url`` (the sign-in throttle runs in a thread)."""
    url = check_storage_url(url)
    if url == MEMORY:
        return storage_from_string(MEMORY)
    return storage_from_string(url, **redis_options())


def async_storage(url: str) -> tuple[Any, Any]:
    """The asyncio ``limits`` storage of a Redis ``url`` (the menus gate runs on the event loop), over redis-py,
    and its connection pool (ours, so that shutting down can close it)."""
    url = check_storage_url(url)
    options = redis_options()
    pool = redis.asyncio.ConnectionPool.from_url(
        url.replace("redis+unix://", "unix://"),
        socket_timeout=options.pop("socket_timeout"),
        socket_connect_timeout=options.pop("socket_connect_timeout"),
    )
    options["connection_pool"] = pool  # typed as a plain option by limits; its redis-py bridge takes a pool
    storage = AsyncRedisStorage("async+" + url, implementation="redispy", **options)
    return storage, pool


class StorageHealth:
    """Whether the shared storage answers, as this process last saw it; one per process, thread-safe.

    ``failed`` counts every failure, logs at most once a minute, and makes ``usable`` false for
    ``retry_after`` seconds; ``recovered`` logs once when Redis answers again.
    """

    def __init__(
        self,
        retry_after: float = RETRY_AFTER_OUTAGE,
        log_every: float = LOG_EVERY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._retry_after = retry_after
        self._log_every = log_every
        self._clock = clock
        self._lock = threading.Lock()
        self._down_until = -math.inf
        self._logged_at = -math.inf
        self._down = False

    def usable(self) -> bool:
        return self._clock() >= self._down_until

    @property
    def down(self) -> bool:
        """True from a failure until the next successful call."""
        return self._down

    def failed(self, error: Exception, use: str) -> None:
        STORAGE_ERRORS.labels(use).inc()
        with self._lock:
            now = self._clock()
            self._down = True
            self._down_until = now + self._retry_after
            if now - self._logged_at < self._log_every:
                return
            self._logged_at = now
        cause = error.__cause__ or error
        log.warning(
            "the rate-limit storage (Redis) cannot be reached (%s); the menus API answers without a rate limit "
            "and sign-in throttling uses the database until it returns",
            type(cause).__name__,
        )

    def recovered(self) -> None:
        if not self._down:
            return
        with self._lock:
            if not self._down:
                return
            self._down = False
            self._logged_at = -math.inf  # the next outage is logged at once
        log.warning("the rate-limit storage (Redis) answers again")


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    limit: int
    remaining: int
    reset: int  # seconds until the oldest request counted in the window leaves it
    retry_after: int  # seconds until the next request will be allowed (0 when allowed)

    def headers(self) -> list[tuple[bytes, bytes]]:
        return [
            (b"ratelimit-limit", str(self.limit).encode()),
            (b"ratelimit-remaining", str(self.remaining).encode()),
            (b"ratelimit-reset", str(self.reset).encode()),
        ]


class RateLimiter:
    """``limit`` requests per API key in any window of ``window_seconds`` (60: the contract's minute)."""

    def __init__(
        self,
        per_minute: int,
        storage: str = MEMORY,
        *,
        window_seconds: int = 60,
        health: StorageHealth | None = None,
        ping_timeout: float = REDIS_TIMEOUT,
    ) -> None:
        if per_minute < 1:
            raise ValueError("the rate limit must be at least one request a minute")
        self.limit = per_minute
        self.shared = is_shared(storage)
        self.health = health or StorageHealth()
        self._item = RateLimitItemPerSecond(per_minute, window_seconds)
        # In memory, the blocking strategy: it never waits, and the asyncio memory storage would start an
        # expiry task (and a thread hop) on nearly every request. Redis: the asyncio strategy.
        self._pool: Any = None
        if self.shared:
            self._storage, self._pool = async_storage(storage)
        else:
            self._storage = storage_from_string(MEMORY)
        self._memory = None if self.shared else MovingWindow(self._storage)
        self._redis = AsyncMovingWindow(self._storage) if self.shared else None
        self._ping_timeout = ping_timeout
        self._open = Decision(True, per_minute, per_minute, 0, 0)  # failing open: nothing is counted

    async def take(self, key: str) -> Decision:
        """Count one request of ``key``: allowed while the window holds fewer than ``limit``."""
        if self._memory is not None:
            allowed = self._memory.hit(self._item, key)
            reset_at, remaining = self._memory.get_window_stats(self._item, key)
        else:
            assert self._redis is not None
            if not self.health.usable():
                return self._open
            try:
                allowed = await self._redis.hit(self._item, key)
                reset_at, remaining = await self._redis.get_window_stats(self._item, key)
            except StorageError as error:
                self.health.failed(error, "api_key")
                return self._open
            self.health.recovered()
        reset = max(0, math.ceil(reset_at - time.time()))
        retry_after = 0 if allowed else max(1, reset)
        return Decision(allowed, self.limit, max(0, remaining), reset, retry_after)

    async def aclose(self) -> None:
        """Close the Redis connections (at shutdown)."""
        if self._pool is not None:
            await self._pool.disconnect()

    async def reachable(self) -> bool:
        """For ``/readyz``: True in memory; with Redis, whether it answers a ping within the timeout."""
        if not self.shared:
            return True
        try:
            answered = bool(await asyncio.wait_for(self._storage.check(), self._ping_timeout))
        except (TimeoutError, StorageError):
            answered = False
        if answered:
            self.health.recovered()
        return answered


def throttle_counters(engine: Engine, storage: str, health: StorageHealth) -> Counters:
    """The sign-in throttle's counters: the database's, or Redis's with the database while Redis is down."""
    if not is_shared(storage):
        return SqlCounters(engine)
    return FallbackCounters(StorageCounters(sync_storage(storage)), SqlCounters(engine), health)
