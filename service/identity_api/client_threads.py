"""The worker threads of the client endpoints (token, introspection, revocation, userinfo, directory).

Their domain work (SQL, commits that wait for the disk, RSA signing) runs off the event loop, on at most as many
threads as the database pool has connections (``service/database/db.py``: one on SQLite). Handing each call to a
thread through ``anyio.to_thread`` wakes a sleeping thread every time and takes a capacity token; under load that
hand-off cost more than an introspection's own work (docs/performance.md). Here the threads are kept, and a call
that arrives while they are busy waits in a queue that the next free thread drains, without waking anybody; the
answers of the calls a thread ran in a row go back to the event loop together. Each call runs in the context of
the request that made it (its request id is on the log lines it writes), and its exception is raised in the
request, as ``anyio.to_thread.run_sync`` would.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
_Done = tuple[asyncio.Future[Any], Any, BaseException | None]
_Job = tuple[contextvars.Context, Callable[..., Any], tuple[Any, ...], asyncio.Future[Any]]
BATCH = 32  # calls a thread runs before it hands their answers back, when that many wait
IDLE = 10.0  # seconds a thread waits for a call before it ends (the next call starts one again)


class ClientThreads:
    def __init__(self, threads: int) -> None:
        self._size = max(1, threads)
        self._jobs: deque[_Job] = deque()
        self._ready = threading.Condition(threading.Lock())
        self._idle = 0  # threads waiting for a call
        self._started = 0  # threads running

    @property
    def size(self) -> int:
        return self._size

    async def run(self, call: Callable[..., T], *args: Any) -> T:
        """``call(*args)`` on one of the threads; its result, or its exception."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        with self._ready:
            self._jobs.append((contextvars.copy_context(), call, args, future))
            if self._idle:
                self._ready.notify()
            elif self._started < self._size:
                self._started += 1
                threading.Thread(target=self._work, name="client-thread", daemon=True).start()
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
                batch = [self._jobs.popleft() for _ in range(min(BATCH, len(self._jobs)))]
            done: dict[asyncio.AbstractEventLoop, list[_Done]] = {}
            for context, call, args, future in batch:
                try:
                    outcome: _Done = (future, context.run(call, *args), None)
                except BaseException as error:  # handed to the request, which raises it
                    outcome = (future, None, error)
                done.setdefault(future.get_loop(), []).append(outcome)
            for loop, settled in done.items():
                if not loop.is_closed():
                    loop.call_soon_threadsafe(_settle, settled)


def _settle(done: list[_Done]) -> None:
    for future, result, error in done:
        if future.done():  # the request was cancelled meanwhile
            continue
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)
