"""The per-key rate limit of the menus API: a moving window of one minute, counted by the ``limits`` library.

Why ``limits``: a well-kept library with an async API whose moving-window strategy runs the same
way in process memory and in Redis (one Lua script: count and admit atomically), so one class
counts per process or for the whole deployment. A moving window never admits more than
``limit`` requests in any 60 seconds, with no burst at a window's edge.

In Redis, the windows are the library's: its keys (``limits``' key layout and our prefix) and its two
Lua scripts, admit and read the window. Only the calls are ours (``RedisWindows``): a worker keeps
one pipeline in flight, and the requests taken meanwhile go together in the next one, one round trip
for all of them, where the library's strategy makes two round trips per request (``bench --only
redis``: from 0.45-0.71 of the limit in memory to about 0.9).

Where the windows live (``MENUS_RATE_LIMIT_STORAGE``):

- unset or ``memory://``: in each process; with ``serve --workers N`` on several nodes a key may
  make ``limit`` requests a minute on each process;
- ``redis://host:port/db`` (or ``rediss://``, ``redis+unix://``): in Redis, one limit for every
  worker of every node. The sign-in throttle (``identity.throttle``) never counts here: its one source of
  truth is the state database.

Redis unreachable: the menus API fails open. Requests are answered without a limit, the outage is
logged at most once a minute and counted in ``regional_menus_rate_limit_storage_errors_total``,
Redis is not asked again for ``RedisTuning.retry_after_outage`` seconds (no timeout on every request), and
``/readyz`` answers "degraded" (200) until Redis answers its ping again.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis.asyncio
from limits import RateLimitItem, RateLimitItemPerSecond
from limits.aio.storage import RedisStorage as AsyncRedisStorage
from limits.aio.storage.redis.bridge import RedisBridge
from limits.errors import StorageError
from limits.storage import storage_from_string
from limits.strategies import MovingWindowRateLimiter as MovingWindow
from prometheus_client import Counter
from redis.exceptions import NoScriptError, RedisError

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
    """How the service waits for Redis and batches its calls (the values: ``service/settings.py``)."""

    timeout: float  # seconds a connection or command may take before the limit fails open
    retry_after_outage: float  # seconds after a failure during which requests do not wait for Redis
    log_every: float  # seconds between two log lines about the same outage
    max_batch: int  # rate-limit requests in one pipeline at most

    @classmethod
    def of(cls, settings: Settings) -> RedisTuning:
        return cls(
            timeout=settings.redis_timeout,
            retry_after_outage=settings.redis_retry_after_outage,
            log_every=settings.redis_log_every,
            max_batch=settings.redis_max_batch,
        )


def is_shared(url: str) -> bool:
    return check_storage_url(url) != MEMORY


def redis_options(timeout: float) -> dict[str, Any]:
    """Timeouts for redis-py, so that an unreachable Redis costs ``timeout`` (half a second), not a hung request."""
    return {
        "socket_timeout": timeout,
        "socket_connect_timeout": timeout,
        "key_prefix": KEY_PREFIX,
        "wrap_exceptions": True,
    }


def sync_storage(url: str, timeout: float) -> Any:
    """The blocking ``limits`` storage for ``url`` (the sign-in throttle runs in a thread)."""
    url = check_storage_url(url)
    if url == MEMORY:
        return storage_from_string(MEMORY)
    return storage_from_string(url, **redis_options(timeout))


def async_storage(url: str, timeout: float) -> tuple[Any, Any]:
    """The asyncio ``limits`` storage of a Redis ``url`` (the menus gate runs on the event loop), over redis-py,
    and its connection pool (ours, so that shutting down can close it)."""
    url = check_storage_url(url)
    options = redis_options(timeout)
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


Command = tuple[bytes | str | int | float, ...]
# What Redis answered one command: its reply, or the error of that command alone (raise_on_error=False).
Reply = Any
# One request counted in its window: admitted or not, when the window's oldest entry leaves it (epoch
# seconds), how many more the window admits. None: Redis could not count it (the request fails open).
Counted = tuple[bool, float, int] | None
Batch = list[tuple[str, asyncio.Future[Counted]]]  # the Redis key of each request, and its answer


class RedisWindows:
    """``limits``' moving windows in Redis, the requests of a worker sharing round trips.

    Per request, a pipeline holds the library's own two scripts on the key its strategy uses:
    ``acquire_moving_window`` (admit, atomically) then ``moving_window`` (count and oldest entry), as
    ``MovingWindowRateLimiter.hit`` and ``get_window_stats`` would send them, so Redis holds exactly what
    the library would write and reads the same. What differs is only how they travel: ``take`` queues
    the request; one task sends the queue as one pipeline (on the next event-loop iteration, so the
    requests of this one go together) and, while it waits for Redis, new requests queue for the next
    pipeline. Commands are ``EVALSHA``, and ``EVAL`` for a script Redis no longer holds (redis-py's
    pipelined ``Script`` objects would send ``SCRIPT EXISTS`` before every pipeline). A failed round
    trip answers every request of it None (fail open), counted in ``health``, and the requests queued
    behind it do not wait for Redis again; an error of one command fails that request alone.
    """

    def __init__(
        self,
        storage: AsyncRedisStorage,
        pool: redis.asyncio.ConnectionPool,
        item: RateLimitItem,
        health: StorageHealth,
        max_batch: int,
    ) -> None:
        self._bridge = storage.bridge
        self._max_batch = max_batch
        self._client = redis.asyncio.Redis(connection_pool=pool)  # the storage's pool: its connections, closed with it
        self._item = item
        self._health = health
        self._scripts = {  # by SHA1, the name Redis caches a script under
            hashlib.sha1(script).hexdigest(): script
            for script in (RedisBridge.SCRIPT_ACQUIRE_MOVING_WINDOW, RedisBridge.SCRIPT_MOVING_WINDOW)
        }
        self._acquire, self._window = self._scripts
        self._queue: Batch = []  # requests waiting for the next pipeline
        self._sender: asyncio.Task[None] | None = None  # sends the queue, one pipeline at a time, while it fills

    def take(self, key: str) -> asyncio.Future[Counted]:
        """Queue one request of ``key``; it goes to Redis in the next pipeline, with every other request queued."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Counted] = loop.create_future()
        self._queue.append((self._bridge.prefixed_key(self._item.key_for(key)), future))
        if self._sender is None:
            self._sender = loop.create_task(self._send_queued())
            self._sender.add_done_callback(self._never_started)
        return future

    async def _send_queued(self) -> None:
        """Send the queue, one pipeline at a time, until it is empty: the requests taken while a pipeline is in
        flight go together in the next one, so the busier the worker, the more requests share a round trip."""
        batch: Batch = []
        try:
            while self._queue:
                batch, self._queue = self._queue[: self._max_batch], self._queue[self._max_batch :]
                await self._send(batch)
        except asyncio.CancelledError:  # the loop is closing: so are the requests
            for _, future in batch + self._queue:
                future.cancel()
            self._queue = []
            raise
        finally:
            self._sender = None

    def _never_started(self, task: asyncio.Task[None]) -> None:
        if self._sender is task:  # cancelled before its first step (its loop closed): no one else would answer these
            self._sender = None
            for _, future in self._queue:
                future.cancel()
            self._queue = []

    async def _send(self, batch: Batch) -> None:
        """One pipeline for ``batch``; each request's future gets its answer."""
        if not self._health.usable():  # Redis failed while these waited: do not wait for it again
            counted: list[Counted] = [None] * len(batch)
        else:
            try:
                counted = await self._count([key for key, _ in batch])
            except Exception as error:  # not Redis's (a bug): each request gets it, as it would have alone
                for _, future in batch:
                    if not future.done():
                        future.set_exception(error)
                return
        for (_, future), answer in zip(batch, counted, strict=True):
            if not future.done():  # a request cancelled while waiting has no one to answer
                future.set_result(answer)

    async def _count(self, keys: list[str]) -> list[Counted]:
        now = time.time()
        limit, expiry = self._item.amount, self._item.get_expiry()
        commands: list[Command] = []
        for key in keys:
            commands.append(("EVALSHA", self._acquire, 1, key, now, limit, expiry, 1))
            commands.append(("EVALSHA", self._window, 1, key, now - expiry, limit))
        try:
            replies = await self._pipeline(commands)
        except RedisError as error:
            self._health.failed(error, "api_key", len(keys))
            return [None] * len(keys)
        counted: list[Counted] = []
        failed: RedisError | None = None
        for acquired, window in zip(replies[::2], replies[1::2], strict=True):
            if isinstance(acquired, RedisError) or isinstance(window, RedisError):
                failed = acquired if isinstance(acquired, RedisError) else window
                counted.append(None)
            elif window:  # the oldest entry of the window, and how many it holds
                counted.append((bool(acquired), float(window[0]) + expiry, limit - int(window[1])))
            else:
                counted.append((bool(acquired), now + expiry, limit))
        failures = counted.count(None)
        if failed is not None:
            self._health.failed(failed, "api_key", failures)
        if failures < len(keys):
            self._health.recovered()
        return counted

    async def _pipeline(self, commands: list[Command]) -> list[Reply]:
        """The replies to ``commands``, sent in one round trip; ``EVAL`` again those whose script was unknown."""
        replies = await self._run(commands)
        unknown = [index for index, reply in enumerate(replies) if isinstance(reply, NoScriptError)]
        if unknown:  # Redis restarted or its scripts were flushed: EVAL sends the script and caches it again
            again = [("EVAL", self._scripts[str(commands[i][1])], *commands[i][2:]) for i in unknown]
            for index, reply in zip(unknown, await self._run(again), strict=True):
                replies[index] = reply
        return replies

    async def _run(self, commands: list[Command]) -> list[Reply]:
        pipeline = self._client.pipeline(transaction=False)
        for command in commands:
            pipeline.execute_command(*command)
        return list(await pipeline.execute(raise_on_error=False))


class RateLimiter:
    """``limit`` requests per API key in any window of ``window_seconds`` (60: the contract's minute)."""

    def __init__(
        self,
        per_minute: int,
        storage: str = MEMORY,
        *,
        redis: RedisTuning,
        window_seconds: int = 60,
        health: StorageHealth | None = None,
    ) -> None:
        if per_minute < 1:
            raise ValueError("the rate limit must be at least one request a minute")
        self.limit = per_minute
        self.shared = is_shared(storage)
        self.health = health or StorageHealth(redis.retry_after_outage, redis.log_every)
        self._item = RateLimitItemPerSecond(per_minute, window_seconds)
        # In memory, the blocking strategy: it never waits, and the asyncio memory storage would start an
        # expiry task (and a thread hop) on nearly every request. Redis: the library's scripts, pipelined.
        self._pool: Any = None
        self._memory: MovingWindow | None = None
        self._redis: RedisWindows | None = None
        if self.shared:
            self._storage, self._pool = async_storage(storage, redis.timeout)
            self._redis = RedisWindows(self._storage, self._pool, self._item, self.health, redis.max_batch)
        else:
            self._storage = storage_from_string(MEMORY)
            self._memory = MovingWindow(self._storage)
        self._ping_timeout = redis.timeout
        self._open = Decision(True, per_minute, per_minute, 0, 0)  # failing open: nothing is counted

    async def take(self, key: str) -> Decision:
        """Count one request of ``key``: allowed while the window holds fewer than ``limit``."""
        if self._memory is not None:
            allowed = self._memory.hit(self._item, key)
            reset_at, remaining = self._memory.get_window_stats(self._item, key)
            return self._decide(allowed, reset_at, remaining)
        assert self._redis is not None
        if not self.health.usable():
            return self._open
        counted = await self._redis.take(key)
        return self._open if counted is None else self._decide(*counted)

    def _decide(self, allowed: bool, reset_at: float, remaining: int) -> Decision:
        """The decision for a window whose oldest request leaves it at ``reset_at`` (epoch seconds)."""
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
