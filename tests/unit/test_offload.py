"""The one way off the event loop (service/web/offload.py): worker threads that run each call in its request's
context, and run the calls queued together in a row, their reads together."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading

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


class Reads:
    """Units of work that record how they were opened and committed; ``fail``: opening raises."""

    def __init__(self, happened: list[str], fail: bool = False) -> None:
        self.happened, self.fail = happened, fail

    def open(self, hints: list[str]) -> list[str]:
        if self.fail:
            raise OSError("the database is away")
        self.happened.append("read " + " ".join(hints))
        return [f"unit of {hint}" for hint in hints]

    def commit(self, units: list[str]) -> list[BaseException | None]:
        self.happened.append("commit " + ", ".join(units))
        return [LookupError(unit) if unit.endswith("t1") else None for unit in units]


def _queued_behind_a_busy_thread(units: Reads, items: int) -> tuple[list[object], list[str]]:
    """Calls queued while the only thread is busy, each naming ``units`` with its item; their answers, and the
    calls in order."""
    threads = Workers(1)
    busy, happened = threading.Event(), []
    loop: asyncio.AbstractEventLoop
    running: asyncio.Event

    def first() -> str:
        loop.call_soon_threadsafe(running.set)  # the only thread has taken this call: the others must queue
        busy.wait(5)
        return "first"

    def call(item: str, unit: str) -> str:
        happened.append(f"call {item} with {unit}")
        return item.upper()

    async def main() -> list[object]:
        nonlocal loop, running
        loop, running = asyncio.get_running_loop(), asyncio.Event()
        blocker = asyncio.ensure_future(threads.run(first))
        await running.wait()  # not a turn of the loop: the thread may start after more calls were queued
        queued = [asyncio.ensure_future(threads.run(call, f"t{n}", units=units, hint=f"t{n}")) for n in range(items)]
        await asyncio.sleep(0)  # every call is in the queue now
        busy.set()
        return await asyncio.gather(blocker, *queued, return_exceptions=True)

    return asyncio.run(main()), happened


def test_calls_queued_together_open_their_units_once_before_they_run_and_commit_them_after() -> None:
    happened: list[str] = []
    answers, calls = _queued_behind_a_busy_thread(Reads(happened), 3)
    assert answers[:2] == ["first", "T0"] and answers[3] == "T2"
    assert isinstance(answers[2], LookupError)  # its unit was refused at commit: its answer is the refusal
    assert happened == ["read t0 t1 t2", "commit unit of t0, unit of t1, unit of t2"]
    assert calls == ["call t0 with unit of t0", "call t1 with unit of t1", "call t2 with unit of t2"]


def test_units_that_cannot_be_opened_leave_their_calls_to_answer_the_error() -> None:
    answers, calls = _queued_behind_a_busy_thread(Reads([], fail=True), 2)
    assert answers[0] == "first" and all(isinstance(answer, OSError) for answer in answers[1:])
    assert calls == []


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
