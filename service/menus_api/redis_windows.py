"""The sliding window counters of the rate limits in Redis, the requests of a worker sharing round trips.

In Redis, the counters are the ``limits`` library's: its keys (``limits``' key layout and our prefix) and its
two Lua scripts, admit and read the counters. Only the calls are ours (``RedisWindows``): a worker keeps
one pipeline in flight, and the requests taken meanwhile go together in the next one, one round trip
for all of them, where the library's strategy makes two round trips per request.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from limits import RateLimitItem
from limits.aio.storage import RedisStorage as AsyncRedisStorage
from limits.aio.storage.redis.bridge import RedisBridge

from service.menus_api.limit_storage import StorageHealth

if TYPE_CHECKING:  # redis-py is imported where Redis is used: a process whose limits are in memory never loads it
    import redis.asyncio

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
