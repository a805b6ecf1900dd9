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

A call may name its units of work (``units``, e.g. ``identity.tokens.unit_of_work.TokenWork``, with a ``hint``): the
calls of a thread's run that name the same ``units`` get one unit each from one ``units.open(hints)`` (which may
read what they will need in one statement: the records of every token being introspected), are called with it
as their last argument, and have their units committed together by ``units.commit`` after the last call of the
run and before any answer goes back. A call whose unit the commit refuses answers that error instead of its
result; a call that raised has nothing committed.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
_Done = tuple[asyncio.Future[Any], Any, BaseException | None]


class Units(Protocol):
    """Units of work for several calls run in a row (see above)."""

    def open(self, hints: Sequence[Any]) -> Sequence[Any]: ...

    def commit(self, units: Sequence[Any]) -> Sequence[BaseException | None]: ...


_Job = tuple[contextvars.Context, Callable[..., Any], tuple[Any, ...], asyncio.Future[Any], Units | None, Any]
BATCH = 32  # calls a thread runs before it hands their answers back, when that many wait
IDLE = 10.0  # seconds a thread waits for a call before it ends (the next call starts one again)
SHARED_THREADS = 40  # the shared pool's bound: anyio's default thread limit, which pages and jobs had before
BACKGROUND_THREADS = 8  # the background pool's bound: every periodic round and both outbound workers at once


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

    async def run(self, call: Callable[..., T], *args: Any, units: Units | None = None, hint: Any = None) -> T:
        """``call(*args)`` on one of the threads (``call(*args, unit)`` with ``units``: see above); its result, or
        its exception."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        with self._ready:
            self._jobs.append((contextvars.copy_context(), call, args, future, units, hint))
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
    """Run the calls of ``batch`` in turn, each with its unit of work if it names units, then commit the units:
    each call's future and its result or its exception."""
    named: dict[Units, list[int]] = {}
    for index, job in enumerate(batch):
        if job[4] is not None:
            named.setdefault(job[4], []).append(index)
    unit_of: dict[int, Any] = {}
    failed: dict[int, BaseException] = {}
    for units, indexes in named.items():
        try:
            unit_of.update(zip(indexes, units.open([batch[index][5] for index in indexes]), strict=True))
        except Exception as failure:  # noqa: BLE001 - every call of those units answers the error
            failed.update(dict.fromkeys(indexes, failure))
    outcomes: list[_Done] = []
    for index, (context, call, args, future, named_units, _) in enumerate(batch):
        if index in failed:
            outcomes.append((future, None, failed[index]))
            continue
        try:
            result = context.run(call, *args, unit_of[index]) if named_units is not None else context.run(call, *args)
            outcomes.append((future, result, None))
        except BaseException as error:  # handed to the request, which raises it
            outcomes.append((future, None, error))
    for units, indexes in named.items():  # noqa: B007 - its own loop
        done = [index for index in indexes if outcomes[index][2] is None and index not in failed]
        try:
            refusals = list(units.commit([unit_of[index] for index in done]))
        except Exception as failure:  # noqa: BLE001 - every call whose unit it was answers the error
            refusals = [failure] * len(done)
        for index, refusal in zip(done, refusals, strict=True):
            if refusal is not None:
                outcomes[index] = (outcomes[index][0], None, refusal)
    return outcomes


def _settle(done: list[_Done]) -> None:
    for future, result, error in done:
        if future.done():  # the request was cancelled meanwhile
            continue
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)


SHARED = Workers(SHARED_THREADS, "shared-worker", batch=1)  # no thread runs until a call comes
BACKGROUND = Workers(BACKGROUND_THREADS, "background-worker", batch=1)


async def in_thread(call: Callable[..., T], *args: Any) -> T:
    """``call(*args)`` on the shared worker threads (see above): its result, or its exception."""
    return await SHARED.run(call, *args)


async def in_background(call: Callable[..., T], *args: Any) -> T:
    """``call(*args)`` on the background rounds' worker threads (see above): its result, or its exception."""
    return await BACKGROUND.run(call, *args)
