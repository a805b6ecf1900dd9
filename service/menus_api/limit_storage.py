"""Where the rate limits' windows live (``MENUS_RATE_LIMIT_STORAGE``), and whether that storage answers.

- unset or ``memory://``: in each process; with ``serve --workers N`` on several nodes a key may
  make ``limit`` requests a minute on each process;
- ``redis://host:port/db`` (or ``rediss://``, ``redis+unix://``): in Redis, one limit for every
  worker of every node. The sign-in throttle (``identity.accounts.throttle``) never counts here: its one source of
  truth is the state database.

Redis unreachable: the menus API fails open. Requests are answered without a limit, the outage is
logged at most once a minute and counted in ``regional_menus_rate_limit_storage_errors_total``,
Redis is not asked again for ``RedisTuning.retry_after_outage`` seconds (no timeout on every request), and
``/readyz`` answers "degraded" (200) until Redis answers its ping again (``StorageHealth``).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from prometheus_client import Counter

from service.settings import DEFAULT_RATE_LIMIT_STORAGE as MEMORY
from service.settings import Settings, check_storage_url

log = logging.getLogger("service.ratelimit")  # the name operators filter on (kept from before the re-layout)

KEY_PREFIX = "regional-menus"  # every key this service writes to Redis starts with it

STORAGE_ERRORS = Counter(
    "regional_menus_rate_limit_storage_errors",
    "Failed calls to the shared rate-limit storage (Redis), by use: api_key (failed open).",
    ["use"],
)


@dataclass(frozen=True, slots=True)
class RedisTuning:
    """How the service waits for Redis and batches its calls (the values: ``service/settings/table.py``)."""

    timeout: float  # seconds a connection or command may take before the limit fails open
    retry_after_outage: float  # seconds after a failure during which requests do not wait for Redis
    log_every: float  # seconds between two log lines about the same outage
    max_batch: int  # rate-limit requests in one pipeline at most
    allowance_share: int  # a worker asks for at most limit // this permits beyond the requests waiting
    allowance_max_age: float  # seconds a worker keeps permits before it gives back those unspent

    @classmethod
    def of(cls, settings: Settings) -> RedisTuning:
        return cls(
            timeout=settings.redis_timeout,
            retry_after_outage=settings.redis_retry_after_outage,
            log_every=settings.redis_log_every,
            max_batch=settings.redis_max_batch,
            allowance_share=settings.redis_allowance_share,
            allowance_max_age=settings.redis_allowance_max_age,
        )


def is_shared(url: str) -> bool:
    return check_storage_url(url) != MEMORY


def redis_pool(url: str, timeout: float) -> Any:
    """The asyncio connection pool of redis-py to a Redis ``url`` (the menus gate runs on the event loop), with
    timeouts, so that an unreachable Redis costs ``timeout`` (half a second), not a hung request."""
    import redis.asyncio

    url = check_storage_url(url)
    return redis.asyncio.ConnectionPool.from_url(
        url.replace("redis+unix://", "unix://"), socket_timeout=timeout, socket_connect_timeout=timeout
    )


class StorageHealth:
    """Whether the shared storage answers, as this process last saw it; one per process, thread-safe.

    ``failed`` counts every failure, logs at most once a minute, and makes ``usable`` false for
    ``retry_after`` seconds; ``recovered`` logs once when Redis answers again.
    """

    def __init__(
        self,
        retry_after: float,
        log_every: float,
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

    def failed(self, error: Exception, use: str, calls: int = 1) -> None:
        """``calls`` calls failed with ``error`` (the requests of one Redis round trip)."""
        STORAGE_ERRORS.labels(use).inc(calls)
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
            "until it returns",
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
