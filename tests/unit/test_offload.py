"""The one way off the event loop (service/web/offload.py): worker threads that run each call in its request's
context, and run the calls queued together in a row, their reads together."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Iterator

from service.web.offload import Workers, in_thread

REQUEST = contextvars.ContextVar[str]("request")


def test_workers_run_each_call_off_the_loop_in_its_requests_context() -> None:
    threads = Workers(2)
    loop_thread = threading.current_thread()

    def work(n: int) -> tuple[int, str, bool]:
        if n == 7:
            raise LookupError("seven")
        return n * n, REQUEST.get(), threading.current_thread() is not loop_thread

    async def request(n: int) -> tuple[int, str, bool]:
        REQUEST.set(f"request-{n}")
        return await threads.run(work, n)

    async def main() -> list[object]:
        return await asyncio.gather(*(request(n) for n in range(20)), return_exceptions=True)

    answers = asyncio.run(main())
    assert answers[:7] == [(n * n, f"request-{n}", True) for n in range(7)]
    assert isinstance(answers[7], LookupError) and str(answers[7]) == "seven"
    assert answers[8:] == [(n * n, f"request-{n}", True) for n in range(8, 20)]
    assert threads.size == 2


def _queued_behind_a_busy_thread(read: object, items: int) -> tuple[list[object], list[str]]:
    """Calls queued while the only thread is busy, each naming ``read`` with its item; their answers, and what
    happened in order."""
    threads = Workers(1)
    busy, happened = threading.Event(), []
    loop: asyncio.AbstractEventLoop
    running: asyncio.Event

    def first() -> str:
        loop.call_soon_threadsafe(running.set)  # the only thread has taken this call: the others must queue
        busy.wait(5)
        return "first"

    def call(item: str) -> str:
        happened.append(f"call {item}")
        return item.upper()

    async def main() -> list[object]:
        nonlocal loop, running
        loop, running = asyncio.get_running_loop(), asyncio.Event()
        blocker = asyncio.ensure_future(threads.run(first))
        await running.wait()  # not a turn of the loop: the thread may start after more calls were queued
        queued = [asyncio.ensure_future(threads.run(call, f"t{n}", together=(read, f"t{n}"))) for n in range(items)]
        await asyncio.sleep(0)  # every call is in the queue now
        busy.set()
        return await asyncio.gather(blocker, *queued, return_exceptions=True)

    return asyncio.run(main()), happened


def test_calls_queued_together_read_together_once_before_they_run() -> None:
    happened: list[str] = []

    @contextlib.contextmanager
    def read(items: list[str]) -> Iterator[None]:
        happened.append("read " + " ".join(items))
        yield
        happened.append("done")

    answers, calls = _queued_behind_a_busy_thread(read, 3)
    assert answers == ["first", "T0", "T1", "T2"]
    assert happened == ["read t0 t1 t2", "done"]
    assert calls == ["call t0", "call t1", "call t2"]


def test_a_failed_read_together_leaves_each_call_to_read_on_its_own() -> None:
    def read(items: list[str]) -> contextlib.AbstractContextManager[None]:
        raise OSError("the database is away")

    answers, calls = _queued_behind_a_busy_thread(read, 2)
    assert answers == ["first", "T0", "T1"]
    assert calls == ["call t0", "call t1"]


def test_the_shared_workers_run_a_call_off_the_loop_and_raise_its_exception_in_the_caller() -> None:
    loop_thread = threading.current_thread()

    def where() -> bool:
        return threading.current_thread() is not loop_thread

    def fails() -> None:
        raise LookupError("nothing")

    async def main() -> bool:
        with contextlib.suppress(LookupError):
            await in_thread(fails)
            raise AssertionError("the call's exception was not raised")
        return await in_thread(where)

    assert asyncio.run(main()) is True
