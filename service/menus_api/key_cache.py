"""Verified API keys answered from memory: no SQL on a request whose key this process has seen live.

A key's digest is remembered with its id once the database said it is live (``ApiKeyStore.authenticate``,
run in a worker thread, never on the event loop). Only live keys are remembered: an unknown or revoked key
is looked up every time, so it still goes through the key-failure throttle
(``service/menus_api/key_failures.py``). At most ``entries`` keys are remembered; the oldest is dropped first.

Revocation, what every process guarantees:

- the process that revokes (the console, in this process) forgets every key as soon as the revocation
  commits (``ApiKeyStore.on_revoke``): the next request with that key is looked up, and refused;
- every other process and node reads the revocation generation (``ApiKeyStore.revocations``: how many keys
  were ever revoked) in a worker thread, at most once per ``check_every`` (0.25 s) while requests come in,
  and forgets every key when it has grown. A remembered key is trusted only while the last read *started*
  less than ``bound`` (1 s) ago; past it, the request waits for a fresh read. A key revoked at ``T`` is
  therefore refused everywhere from ``T + bound`` on, and under steady traffic from about
  ``T + check_every`` plus one read.

A lookup that began before the cache was emptied does not put its answer back (``_epoch``), so a key
revoked while its lookup was in flight is never remembered as live.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

from identity.api_keys.keys import KEY_FORMAT, ApiKeyStore, hash_key
from service.web.offload import in_thread


class KeyCache:
    def __init__(
        self,
        keys: ApiKeyStore,
        *,
        entries: int,
        check_every: float,
        bound: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if entries < 1 or not 0 < check_every <= bound:
            raise ValueError("the key cache needs room for a key and 0 < check_every <= bound")
        self._keys = keys
        self._entries = entries
        self._check_every = check_every
        self._bound = bound
        self._clock = clock
        self._live: dict[str, str] = {}  # digest -> key id, oldest first
        self._lock = threading.Lock()  # writers: the event loop and the threads that revoke
        self._epoch = 0  # grows each time the cache is emptied
        self._generation: int | None = None  # the revocation count as last read
        self._read_at = -float("inf")  # when that read started (monotonic)
        self._reading: asyncio.Future[None] | None = None
        keys.on_revoke(self.forget_all)

    def __len__(self) -> int:
        return len(self._live)

    async def authenticate(self, token: str) -> str | None:
        """The id of the live key ``token``, or None when it is malformed, unknown or revoked."""
        if not KEY_FORMAT.fullmatch(token):
            return None
        age = self._clock() - self._read_at
        if age >= self._check_every:
            reading = self._reading
            if reading is None or reading.get_loop() is not asyncio.get_running_loop():
                reading = self._start_reading()  # none in flight (or one of a loop that has closed)
            if age >= self._bound:
                await asyncio.shield(reading)  # too old to trust: wait for the read (others wait for the same)
        digest = hash_key(token)
        key_id = self._live.get(digest)
        if key_id is not None:
            return key_id
        epoch = self._epoch
        key_id = await in_thread(self._keys.authenticate, token)
        if key_id is not None:
            self._remember(digest, key_id, epoch)
        return key_id

    def forget_all(self) -> None:
        """Empty the cache (a revocation): every key is looked up again. Safe from any thread."""
        with self._lock:
            self._epoch += 1
            self._live = {}

    def _remember(self, digest: str, key_id: str, epoch: int) -> None:
        with self._lock:
            if epoch != self._epoch:  # emptied since the lookup began: its answer may predate a revocation
                return
            if len(self._live) >= self._entries:
                del self._live[next(iter(self._live))]
            self._live[digest] = key_id

    def _start_reading(self) -> asyncio.Future[None]:
        self._reading = asyncio.ensure_future(self._read())
        self._reading.add_done_callback(_retrieved)
        return self._reading

    async def _read(self) -> None:
        """Read the revocation generation in a worker thread; forget every key when it grew."""
        started = self._clock()
        try:
            generation = await in_thread(self._keys.revocations)
            if generation != self._generation:
                if self._generation is not None:
                    self.forget_all()
                self._generation = generation
            self._read_at = started
        finally:
            if self._reading is asyncio.current_task():
                self._reading = None


def _retrieved(reading: asyncio.Future[None]) -> None:
    """A read no request waited for failed (the database is down): the next request past the bound reads
    again, and waits, so the failure reaches a request as 503 then."""
    if not reading.cancelled():
        reading.exception()
