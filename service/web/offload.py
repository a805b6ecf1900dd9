"""One way off the event loop: worker threads that run the blocking work (SQL, commits that wait for the disk,
RSA signing, Argon2 hashing) of requests and background jobs, so that one slow call never holds the event loop.

Two calls make the whole API:

- ``Workers(threads).run(call, *args)``: ``call(*args)`` on one of at most ``threads`` threads, its result or its
  exception. The client endpoints (token, introspection, revocation, userinfo, directory) have a pool of their
  own, as many threads as the database pool has connections (``service/database/db.py``: one on SQLite);
- ``in_thread(call, *args)``: the same on the shared pool (``SHARED``) of the other requests: pages, the
  console, health checks, the API key cache and the browsers' CORS checks;
- ``in_background(call, *args)``: the same on the pool of the background rounds (``BACKGROUND``: the purge, the
  key refresh, the mail and back-channel workers…), whose threads are named for it (``background-worker``).

Handing each call to a thread through ``anyio.to_thread`` wakes a sleeping thread every time and takes a
capacity token; under load that hand-off cost more than an introspection's own work (docs/performance.md). Here
the threads are kept, and a call that arrives while they are busy waits in a queue that the next free thread
drains, without waking anybody; the answers of the calls a thread ran in a row go back to the event loop
together. Each call runs in the context of the request that made it (its request id is on the log lines it
writes), and its exception is raised in the request, as ``anyio.to_thread.run_sync`` would. A request cancelled
while its call runs leaves the call to finish (as ``asyncio.to_thread``); its answer is dropped.

A call may name what it will read (``together``: a function and an item): a thread about to run several calls
that name the same function gives it all their items first, and runs the calls inside what it returns, e.g. one
SQL statement reading the records of every token being introspected (``TokenVerifier.read_together``). Each
read still starts after its request was queued. If that read fails, each call reads on its own, and meets the
error in its own request's form.

A call may name what writes together (``writes``, e.g. ``identity.minting.IssuedTogether``): the calls of a
thread's run that name it have their writes kept from ``begin`` and made at ``end``, after the last call of
the run and before any answer goes back; ``call(key)`` before each call says whose writes follow (None for a
call that does not name it, whose writes are made at once). A call whose write ``end`` refuses answers that
error instead of its result.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections import deque
from collections.abc import Callable, Hashable, Mapping
from contextlib import AbstractContextManager, ExitStack
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
_Done = tuple[asyncio.Future[Any], Any, BaseException | None]
ReadTogether = Callable[[list[Any]], AbstractContextManager[Any]]  # the items of several calls: a block to run them in
Together = tuple[ReadTogether, Hashable]


class WritesTogether(Protocol):
    def begin(self) -> None: ...

    def call(self, key: Hashable) -> None: ...

    def end(self) -> Mapping[Hashable, BaseException]: ...


_Job = tuple[
    contextvars.Context,
    Callable[..., Any],
    tuple[Any, ...],
    asyncio.Future[Any],
    Together | None,
    WritesTogether | None,
]
BATCH = 32  # calls a thread runs before it hands their answers back, when that many wait
IDLE = 10.0  # seconds a thread waits for a call before it ends (the next call starts one again)
SHARED_THREADS = 40  # the shared pool's bound: anyio's default thread limit, which pages and jobs had before


class Workers:
    """At most ``threads`` worker threads, started when calls wait and ended after ``IDLE`` seconds without one;
    a thread runs at most ``batch`` waiting calls in a row before their answers go back (1: each call's answer goes
    back as soon as it is done, for calls of unequal length: pages that hash passwords, background rounds)."""

    def __init__(self, threads: int, name: str = "worker", *, batch: int = BATCH) -> None:
        self._size = max(1, threads)
        self._name = name
        self._batch = max(1, batch)
        self._jobs: deque[_Job] = deque()
        self._ready = threading.Condition(threading.Lock())
        self._idle = 0  # threads waiting for a call
        self._started = 0  # threads running

    @property
    def size(self) -> int:
        return self._size

    async def run(
        self, call: Callable[..., T], *args: Any, together: Together | None = None, writes: WritesTogether | None = None
    ) -> T:
        """``call(*args)`` on one of the threads; its result, or its exception. ``together``, ``writes``: see
        above."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        with self._ready:
            self._jobs.append((contextvars.copy_context(), call, args, future, together, writes))
            if self._idle:
                self._ready.notify()
            elif self._started < self._size:
                self._started += 1
                threading.Thread(target=self._work, name=self._name, daemon=True).start()
        return await future

    def _work(self) -> None:
        while True:
            with self._ready:
                while not self._jobs:
                    self._idle += 1
                    called = self._ready.wait(IDLE)
                    self._idle -= 1
                    if not called and not self._jobs:
                        self._started -= 1
                        return
                batch = [self._jobs.popleft() for _ in range(min(self._batch, len(self._jobs)))]
            outcomes = _run(batch)
            done: dict[asyncio.AbstractEventLoop, list[_Done]] = {}
            for outcome in outcomes:
                done.setdefault(outcome[0].get_loop(), []).append(outcome)
            for loop, settled in done.items():
                if not loop.is_closed():
                    loop.call_soon_threadsafe(_settle, settled)


def _run(batch: list[_Job]) -> list[_Done]:
    """Run the calls of ``batch`` in turn: each one's future and its result or its exception."""
    writers = list(dict.fromkeys(job[5] for job in batch if job[5] is not None))
    for writer in writers:
        writer.begin()
    outcomes: list[_Done] = []
    try:
        with _read_together(batch):
            for index, (context, call, args, future, _, writes) in enumerate(batch):
                for writer in writers:
                    writer.call(index if writer is writes else None)
                try:
                    outcomes.append((future, context.run(call, *args), None))
                except BaseException as error:  # handed to the request, which raises it
                    outcomes.append((future, None, error))
    finally:
        for writer in writers:
            try:
                refused: dict[Hashable, BaseException] = dict(writer.end())
            except Exception as failure:  # noqa: BLE001 - every call that wrote through it answers the error
                refused = {index: failure for index, job in enumerate(batch) if job[5] is writer}
            for key, refusal in refused.items():
                if isinstance(key, int) and key < len(outcomes):
                    outcomes[key] = (outcomes[key][0], None, refusal)
    return outcomes


def _read_together(batch: list[_Job]) -> ExitStack:
    """The blocks of the calls of ``batch`` that read together, entered (only where two or more calls do)."""
    stack = ExitStack()
    items: dict[ReadTogether, list[Any]] = {}
    for *_, together, _writes in batch:
        if together is not None:
            items.setdefault(together[0], []).append(together[1])
    for read, named in items.items():
        if len(named) > 1:
            try:
                stack.enter_context(read(named))
            except Exception:  # noqa: BLE001 - each call then reads on its own, and answers its own error
                continue
    return stack


def _settle(done: list[_Done]) -> None:
    for future, result, error in done:
        if future.done():  # the request was cancelled meanwhile
            continue
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)


BACKGROUND_THREADS = 8  # the background pool's bound: every periodic round and both outbound workers at once
SHARED = Workers(SHARED_THREADS, "shared-worker", batch=1)  # no thread runs until a call comes
BACKGROUND = Workers(BACKGROUND_THREADS, "background-worker", batch=1)


async def in_thread(call: Callable[..., T], *args: Any) -> T:
    """``call(*args)`` on the shared worker threads (see above): its result, or its exception."""
    return await SHARED.run(call, *args)


async def in_background(call: Callable[..., T], *args: Any) -> T:
    """``call(*args)`` on the background rounds' worker threads (see above): its result, or its exception."""
    return await BACKGROUND.run(call, *args)
