"""The sliding window counters of the rate limits in Redis, and the allowances a worker spends from memory.

In Redis, the counters are the ``limits`` library's: its two keys per counted key (this minute's count and the
last one's, under our prefix), with its expiries, so the library reads what we write. What is ours is how a
worker asks: one script, ``LEASE``, admits and reads both counters in one call (the library sends two), and
may grant a few permits more than the requests waiting, which the worker then spends from memory without
asking Redis again (an *allowance*). Its approximation, which the contract states (``openapi/menus.yaml``,
docs/nodes.md "Rate limits across nodes"):

- nothing passes the limit: every permit is granted by Redis, atomically, by the counter's own rule;
- a worker asks for at most ``limit // allowance_share`` permits beyond the requests waiting (none below a
  limit of ``allowance_share``: such limits are counted request by request, exactly), as many as the key
  spent from its last allowance, twice that when it spent all of it;
- permits not spent within ``allowance_max_age`` (or by the end of the minute they were counted in) are
  given back to that minute's counter; until then, the key may be refused while other workers hold permits
  of it, at most ``limit // allowance_share`` each;
- a permit counts from when it was granted, so a request spent from an allowance is counted up to
  ``allowance_max_age`` early, in the minute of its grant;
- ``RateLimit-Remaining`` is computed from the counters as Redis answered this worker's last grant, aged to
  now, with this worker's unspent permits not counted: it does not see what other workers admitted since.

A worker keeps one pipeline in flight; the requests that need Redis meanwhile (a key with no allowance left)
go together in the next one, one command per key, however many requests of it wait.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from limits import RateLimitItem

from service.menus_api.limit_storage import KEY_PREFIX, RedisTuning, StorageHealth

if TYPE_CHECKING:  # redis-py is imported where Redis is used: a process whose limits are in memory never loads it
    import redis.asyncio

Command = tuple[bytes | str | int | float, ...]
# What Redis answered one command: its reply, or the error of that command alone (raise_on_error=False).
Reply = Any
RoundTrip = Callable[[list[Command]], Awaitable[list[Reply]]]

# KEYS[1], KEYS[2]: the previous and the current minute's counters, as the library lays them out and expires
# them (a minute's counter lives a window past the minute's end: its time to live names the minute).
# ARGV: the limit, the window in seconds, the permits wanted, the permits given back, and the end of the minute
# those were counted in (milliseconds since the epoch, as this script answered it when it granted them).
# Answers {granted, previous count, its ms to live, current count, its ms to live, the current minute's end}.
LEASE = b"""
if redis.replicate_commands then redis.replicate_commands() end
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2]) * 1000
local wanted = tonumber(ARGV[3])
local unspent = tonumber(ARGV[4])
local counted_in = tonumber(ARGV[5])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)

if unspent > 0 then
    for _, key in ipairs(KEYS) do
        local ttl = tonumber(redis.call('pttl', key))
        if ttl > 0 and math.abs(now + ttl - window - counted_in) < math.min(1000, window / 4) then
            local count = tonumber(redis.call('get', key)) or 0
            if count > 0 then
                redis.call('decrby', key, math.min(unspent, count))
            end
            break
        end
    end
end

local current_ttl = tonumber(redis.call('pttl', KEYS[2]))
if current_ttl > 0 and current_ttl < window then
    redis.call('rename', KEYS[2], KEYS[1])
    redis.call('set', KEYS[2], 0, 'PX', current_ttl + window)
end
local previous_count = tonumber(redis.call('get', KEYS[1])) or 0
local previous_ttl = math.max(0, tonumber(redis.call('pttl', KEYS[1])))
local current_count = tonumber(redis.call('get', KEYS[2])) or 0
current_ttl = math.max(0, tonumber(redis.call('pttl', KEYS[2])))
local weighted = math.floor(previous_count * previous_ttl / window) + current_count
local granted = math.max(0, math.min(wanted, limit - weighted))
if granted > 0 then
    if redis.call('exists', KEYS[2]) == 1 then
        current_count = redis.call('incrby', KEYS[2], granted)
    else
        redis.call('set', KEYS[2], granted, 'PX', window * 2)
        current_count = granted
        current_ttl = window * 2
    end
end
return {granted, previous_count, previous_ttl, current_count, current_ttl, now + current_ttl - window}
"""


@dataclass(frozen=True, slots=True)
class Counted:
    """One request counted: admitted or not, and the counters as they stand after it."""

    allowed: bool
    previous: int  # requests admitted in the previous minute
    previous_ttl: float  # seconds the previous minute still weighs (its weight: this / the window)
    current: int  # requests admitted in the current minute
    current_ttl: float  # seconds until the current minute's counter expires (a window after the minute ends)


@dataclass(slots=True)
class Allowance:
    """Permits of one key that Redis granted this worker and it has not spent yet."""

    unspent: int
    spent: int  # permits of this grant spent, the requests that waited for it included
    granted_at: float  # the clock's time when the grant arrived
    expires: float  # after it, the unspent permits are given back (at most allowance_max_age, or the minute's end)
    minute: int  # the end of the minute the permits were counted in, as Redis named it (what a give-back names)
    previous: int  # the counters as Redis answered the grant
    previous_ttl: float
    current: int
    current_ttl: float


Waiting = tuple[str, asyncio.Future[Counted | None]]  # a request's key, and its answer


class Pipelines:
    """One round trip to Redis: the commands as one pipeline (no transaction), each answered by its reply or by
    its own error, over the rate limiter's connection pool (closed with it)."""

    def __init__(self, pool: redis.asyncio.ConnectionPool) -> None:
        import redis.asyncio

        self._client = redis.asyncio.Redis(connection_pool=pool)

    async def __call__(self, commands: list[Command]) -> list[Reply]:
        pipeline = self._client.pipeline(transaction=False)
        for command in commands:
            pipeline.execute_command(*command)
        return list(await pipeline.execute(raise_on_error=False))


class RedisWindows:
    """The sliding window counters of one limit in Redis, and this worker's allowances of them (module docstring).

    ``spend`` answers a request from the key's allowance, without Redis (None when there is none left); ``take``
    queues it for the next pipeline. One task sends the queue, one pipeline at a time, while it fills: one
    ``EVALSHA`` of ``LEASE`` per key (``EVAL`` again for a script Redis no longer holds), asking for the requests
    waiting and the key's next allowance, and giving back what its expired allowance left. A failed round trip
    answers every request of it None (fail open), counted in ``health``, and the requests queued behind it do not
    wait for Redis again; an error of one key's command fails that key's requests alone.
    """

    def __init__(
        self,
        round_trip: RoundTrip,
        item: RateLimitItem,
        health: StorageHealth,
        tuning: RedisTuning,
        *,
        clock: Callable[[], float] = time.monotonic,
        script: bytes = LEASE,
    ) -> None:
        self._round_trip = round_trip
        self._item = item
        self._health = health
        self._max_batch = tuning.max_batch
        self._most = item.amount // tuning.allowance_share  # permits asked for beyond the waiting requests, at most
        self._max_age = tuning.allowance_max_age
        self._clock = clock
        self._script = script
        self._sha = hashlib.sha1(script).hexdigest()  # the name Redis caches the script under
        self._window = item.get_expiry()
        self._allowances: dict[str, Allowance] = {}  # in the order of their grants: the oldest expire first
        self._queue: list[Waiting] = []  # requests waiting for the next pipeline
        self._sender: asyncio.Task[None] | None = None  # sends the queue, one pipeline at a time, while it fills
        # the sweep that gives back idle allowances' permits, and its loop
        self._sweep: tuple[asyncio.AbstractEventLoop, asyncio.TimerHandle] | None = None

    def spend(self, key: str) -> Counted | None:
        """One permit of ``key``'s allowance, as the request's counted window; None when it has none left."""
        allowance = self._allowances.get(key)
        if allowance is None or not allowance.unspent:
            return None
        now = self._clock()
        if now >= allowance.expires:
            return None
        allowance.unspent -= 1
        allowance.spent += 1
        age = now - allowance.granted_at
        return Counted(
            True,
            allowance.previous,
            max(0.0, allowance.previous_ttl - age),
            allowance.current - allowance.unspent,
            max(0.0, allowance.current_ttl - age),
        )

    def take(self, key: str) -> asyncio.Future[Counted | None]:
        """Queue one request of ``key``; it goes to Redis in the next pipeline, with every other request queued."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Counted | None] = loop.create_future()
        self._queue.append((key, future))
        self._start(loop)
        return future

    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._sender is None:
            self._sender = loop.create_task(self._send_queued())
            self._sender.add_done_callback(self._never_started)

    async def _send_queued(self) -> None:
        """Send the queue, one pipeline at a time, until it is empty: the requests taken while a pipeline is in
        flight go together in the next one, so the busier the worker, the more requests share a round trip."""
        batch: list[Waiting] = []
        try:
            while True:
                batch, self._queue = self._queue[: self._max_batch], self._queue[self._max_batch :]
                batch = self._spent(batch)
                expired = self._expired({key for key, _ in batch})
                if not batch and not expired:
                    break
                await self._send(batch, expired)
        except asyncio.CancelledError:  # the loop is closing: so are the requests
            for _, future in batch + self._queue:
                future.cancel()
            self._queue = []
            raise
        finally:
            self._sender = None
        self._sweep_later()

    def _spent(self, batch: list[Waiting]) -> list[Waiting]:
        """Answers the requests whose key was granted an allowance while they waited (by the pipeline before);
        the others still need Redis."""
        asking: list[Waiting] = []
        for key, future in batch:
            counted = self.spend(key)
            if counted is None:
                asking.append((key, future))
            elif not future.done():
                future.set_result(counted)
        return asking

    def _never_started(self, task: asyncio.Task[None]) -> None:
        if self._sender is task:  # cancelled before its first step (its loop closed): no one else would answer these
            self._sender = None
            for _, future in self._queue:
                future.cancel()
            self._queue = []

    def _expired(self, asking: set[str]) -> dict[str, Allowance]:
        """The allowances to end in the next pipeline: those of the keys asking for more, and every expired one."""
        ended = {key: self._allowances.pop(key) for key in asking if key in self._allowances}
        now, due = self._clock(), []
        for key, allowance in self._allowances.items():
            if allowance.granted_at + self._max_age > now:
                break  # granted in order: the rest are younger (one past its minute first waits for its age)
            due.append(key)
        for key in due:
            allowance = self._allowances.pop(key)
            if allowance.unspent:  # nothing to give back otherwise
                ended[key] = allowance
        return ended

    def _sweep_later(self) -> None:
        """While allowances are held, give back the idle ones' permits when the oldest is due, requests or not."""
        loop = asyncio.get_running_loop()
        if not self._allowances or (self._sweep is not None and self._sweep[0] is loop):
            return  # nothing held, or a sweep is due on this loop already (one of a closed loop never comes)
        due = next(iter(self._allowances.values())).granted_at + self._max_age - self._clock()
        self._sweep = loop, loop.call_later(max(0.0, due), self._swept, loop)

    def _swept(self, loop: asyncio.AbstractEventLoop) -> None:
        self._sweep = None
        if self._allowances:
            self._start(loop)

    async def _send(self, batch: list[Waiting], expired: dict[str, Allowance]) -> None:
        """One pipeline for ``batch`` (and the permits ``expired`` gives back); each request's future gets its
        answer."""
        waiting: dict[str, list[asyncio.Future[Counted | None]]] = {}
        for key, future in batch:
            waiting.setdefault(key, []).append(future)
        answers: dict[str, list[Counted | None]]
        if not self._health.usable():  # Redis failed while these waited: do not wait for it again
            answers = {key: [None] * len(futures) for key, futures in waiting.items()}
        else:
            try:
                answers = await self._lease(waiting, expired)
            except Exception as error:  # not Redis's (a bug): each request gets it, as it would have alone
                for _, future in batch:
                    if not future.done():
                        future.set_exception(error)
                return
        for key, futures in waiting.items():
            for future, answer in zip(futures, answers[key], strict=True):
                if not future.done():  # a request cancelled while waiting has no one to answer (its permit is spent)
                    future.set_result(answer)

    def _more(self, ended: Allowance | None) -> int:
        """Permits to ask for beyond the waiting requests: what the last allowance spent, twice that when it
        spent all of it; none for a key new here (its first request is counted alone)."""
        if ended is None or not self._most:
            return 0
        return min(self._most, ended.spent * (1 if ended.unspent else 2))

    def _keys(self, key: str) -> tuple[str, str]:
        """The previous and current minute's Redis keys of ``key``, laid out and prefixed as the library does."""
        current = f"{KEY_PREFIX}:{{{self._item.key_for(key)}}}"
        return current + "/-1", current

    async def _lease(
        self, waiting: dict[str, list[asyncio.Future[Counted | None]]], expired: dict[str, Allowance]
    ) -> dict[str, list[Counted | None]]:
        from redis.exceptions import RedisError

        limit = self._item.amount
        keys = list(waiting) + [key for key in expired if key not in waiting]
        wanted = {
            key: len(waiting.get(key, ())) + (self._more(expired.get(key)) if key in waiting else 0) for key in keys
        }
        commands: list[Command] = []
        for key in keys:
            given_back = expired.get(key)
            unspent, minute = (given_back.unspent, given_back.minute) if given_back else (0, 0)
            commands.append(
                ("EVALSHA", self._sha, 2, *self._keys(key), limit, self._window, wanted[key], unspent, minute)
            )
        requests = sum(len(futures) for futures in waiting.values())
        sent = self._clock()
        try:
            replies = await self._pipeline(commands)
        except RedisError as error:
            if requests:
                self._health.failed(error, "api_key", requests)
            return {key: [None] * len(futures) for key, futures in waiting.items()}
        now = self._clock()
        answers: dict[str, list[Counted | None]] = {}
        failed: RedisError | None = None
        failures = 0
        for key, reply in zip(keys, replies, strict=True):
            futures = waiting.get(key)
            if futures is None:  # permits given back: nothing waits for the answer
                continue
            if isinstance(reply, RedisError):
                failed, failures = reply, failures + len(futures)
                answers[key] = [None] * len(futures)
                continue
            answers[key] = self._granted(key, [int(value) for value in reply], len(futures), wanted[key], sent, now)
        if failed is not None:
            self._health.failed(failed, "api_key", failures)
        if failures < requests or not requests:
            self._health.recovered()
        return answers

    def _granted(
        self, key: str, reply: list[int], requests: int, wanted: int, sent: float, now: float
    ) -> list[Counted | None]:
        """The waiting requests' answers from Redis's grant, in order; the permits left over become the allowance."""
        granted, previous, previous_ms, current, current_ms, minute = reply
        previous_ttl, current_ttl = previous_ms / 1000, current_ms / 1000
        admitted = min(granted, requests)
        answers: list[Counted | None] = [
            Counted(True, previous, previous_ttl, current - granted + n, current_ttl) for n in range(1, admitted + 1)
        ]
        answers += [Counted(False, previous, previous_ttl, current, current_ttl)] * (requests - admitted)
        if admitted and self._most:  # kept while spent or not, for the size of the key's next allowance
            # It ends at its age, or when its minute ends (measured from the sending, the earliest Redis read it).
            expires = min(now + self._max_age, sent + current_ttl - self._window)
            self._allowances[key] = Allowance(
                granted - admitted, admitted, now, expires, minute, previous, previous_ttl, current, current_ttl
            )
        return answers

    async def _pipeline(self, commands: list[Command]) -> list[Reply]:
        """The replies to ``commands``, sent in one round trip; ``EVAL`` again those whose script was unknown."""
        from redis.exceptions import NoScriptError

        replies = await self._round_trip(commands)
        unknown = [index for index, reply in enumerate(replies) if isinstance(reply, NoScriptError)]
        if unknown:  # Redis restarted or its scripts were flushed: EVAL sends the script and caches it again
            again: list[Command] = [("EVAL", self._script, *commands[i][2:]) for i in unknown]
            for index, reply in zip(unknown, await self._round_trip(again), strict=True):
                replies[index] = reply
        return replies
