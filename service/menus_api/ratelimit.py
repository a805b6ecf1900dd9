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

In Redis, the counters are the library's: its keys (``limits``' key layout and our prefix) and its two
Lua scripts, admit and read the counters. Only the calls are ours (``RedisWindows``): a worker keeps
one pipeline in flight, and the requests taken meanwhile go together in the next one, one round trip
for all of them, where the library's strategy makes two round trips per request.

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
from typing import TYPE_CHECKING, Any

from limits import RateLimitItem, RateLimitItemPerSecond
from limits.aio.storage import RedisStorage as AsyncRedisStorage
from limits.aio.storage.redis.bridge import RedisBridge
from limits.errors import StorageError
from limits.storage import storage_from_string
from limits.strategies import SlidingWindowCounterRateLimiter as SlidingWindowCounter
from prometheus_client import Counter

from service.settings import DEFAULT_RATE_LIMIT_STORAGE as MEMORY
from service.settings import Settings, check_storage_url

if TYPE_CHECKING:  # redis-py is imported where Redis is used: a process whose limits are in memory never loads it
    import redis.asyncio

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
    import redis.asyncio

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
    reset: int  # seconds until the window admits one request more than now (0: it admits its whole limit)
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


@dataclass(frozen=True, slots=True)
class Counted:
    """One request counted: admitted or not, and the counters as they stand after it."""

    allowed: bool
    previous: int  # requests admitted in the previous minute
    previous_ttl: float  # seconds the previous minute still weighs (its weight: this / the window)
    current: int  # requests admitted in the current minute
    current_ttl: float  # seconds until the current minute's counter expires (a window after the minute ends)


Batch = list[tuple[tuple[str, str], asyncio.Future[Counted | None]]]  # each request's two keys, and its answer


class RedisWindows:
    """``limits``' sliding window counters in Redis, the requests of a worker sharing round trips.

    Per request, a pipeline holds the library's own two scripts on the two keys its strategy uses:
    ``acquire_sliding_window`` (admit, atomically) then ``sliding_window`` (both counters and their
    expiries), as ``SlidingWindowCounterRateLimiter.hit`` and ``get_window_stats`` would send them, so
    Redis holds exactly what
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
        import redis.asyncio

        self._bridge = storage.bridge
        self._storage = storage
        self._max_batch = max_batch
        self._client = redis.asyncio.Redis(connection_pool=pool)  # the storage's pool: its connections, closed with it
        self._item = item
        self._health = health
        self._scripts = {  # by SHA1, the name Redis caches a script under
            hashlib.sha1(script).hexdigest(): script
            for script in (RedisBridge.SCRIPT_ACQUIRE_SLIDING_WINDOW, RedisBridge.SCRIPT_SLIDING_WINDOW)
        }
        self._acquire, self._window = self._scripts
        self._queue: Batch = []  # requests waiting for the next pipeline
        self._sender: asyncio.Task[None] | None = None  # sends the queue, one pipeline at a time, while it fills

    def take(self, key: str) -> asyncio.Future[Counted | None]:
        """Queue one request of ``key``; it goes to Redis in the next pipeline, with every other request queued."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Counted | None] = loop.create_future()
        self._queue.append((self._keys(self._item.key_for(key)), future))
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
            counted: list[Counted | None] = [None] * len(batch)
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

    def _keys(self, key: str) -> tuple[str, str]:
        """The previous and current minute's Redis keys of ``key``, laid out and prefixed as the library does."""
        storage: Any = self._storage
        prefixed = self._bridge.prefixed_key
        return prefixed(storage._previous_window_key(key)), prefixed(storage._current_window_key(key))

    async def _count(self, keys: list[tuple[str, str]]) -> list[Counted | None]:
        from redis.exceptions import RedisError

        limit, expiry = self._item.amount, self._item.get_expiry()
        commands: list[Command] = []
        for last_minute, this_minute in keys:
            commands.append(("EVALSHA", self._acquire, 2, last_minute, this_minute, limit, expiry, 1))
            commands.append(("EVALSHA", self._window, 2, last_minute, this_minute, expiry))
        try:
            replies = await self._pipeline(commands)
        except RedisError as error:
            self._health.failed(error, "api_key", len(keys))
            return [None] * len(keys)
        counted: list[Counted | None] = []
        failed: RedisError | None = None
        for acquired, window in zip(replies[::2], replies[1::2], strict=True):
            if isinstance(acquired, RedisError) or isinstance(window, RedisError):
                failed = acquired if isinstance(acquired, RedisError) else window
                counted.append(None)
            else:  # [previous count, its pttl, current count, its pttl]: as the library's get_sliding_window reads them
                previous, previous_ttl, current, current_ttl = (max(0, int(value or 0)) for value in window)
                counted.append(Counted(bool(acquired), previous, previous_ttl / 1000, current, current_ttl / 1000))
        failures = counted.count(None)
        if failed is not None:
            self._health.failed(failed, "api_key", failures)
        if failures < len(keys):
            self._health.recovered()
        return counted

    async def _pipeline(self, commands: list[Command]) -> list[Reply]:
        """The replies to ``commands``, sent in one round trip; ``EVAL`` again those whose script was unknown."""
        from redis.exceptions import NoScriptError

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
    ) -> None:
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
            self._storage, self._pool = async_storage(storage, redis.timeout)
            self._redis = RedisWindows(self._storage, self._pool, self._item, self.health, redis.max_batch)
        else:
            self._storage = storage_from_string(MEMORY)
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
        try:
            answered = bool(await asyncio.wait_for(self._storage.check(), self._ping_timeout))
        except (TimeoutError, StorageError):
            answered = False
        if answered:
            self.health.recovered()
        return answered


def _whole(seconds: float) -> int:
    """Whole seconds, rounded up (a header never says "now" before it is so)."""
    return max(0, math.ceil(seconds - 1e-9))
