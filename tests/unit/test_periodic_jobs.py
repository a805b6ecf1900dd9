"""The worker's background jobs (service/ops/periodic.py): each runs at its interval on the time of its timer
(moved by the test, never slept), a failed round waits for the next, and every job stops at shutdown."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable

import pytest

from service.ops.periodic import BackgroundJobs, LoopingJob, PeriodicJob
from tests.support.clocks import MovableTimer

TIMEOUT = 10  # seconds a test waits for a round run in a thread, at most (a bound, not a pause)


def run(scenario: Callable[[MovableTimer], Awaitable[None]]) -> None:
    async def main() -> None:
        await asyncio.wait_for(scenario(MovableTimer()), TIMEOUT)

    asyncio.run(main())


class Rounds:
    """A job's work: each round notes the timer's time."""

    def __init__(self, timer: MovableTimer, fail: bool = False) -> None:
        self.timer, self.fail, self.at = timer, fail, list[float]()

    def __call__(self) -> None:
        self.at.append(self.timer.now)
        if self.fail:
            raise ConnectionError("the database is down")


def test_a_job_runs_at_start_then_once_each_time_its_interval_has_passed() -> None:
    async def scenario(timer: MovableTimer) -> None:
        rounds = Rounds(timer)
        jobs = BackgroundJobs([PeriodicJob("counting", 10, rounds)], timer)
        running = jobs.start()
        await timer.waiting(1)
        assert rounds.at == [0]  # the round at start-up
        timer.advance(9.5)
        await asyncio.sleep(0)  # the loop turns once (no time passes for the job)
        assert rounds.at == [0]
        timer.advance(0.5)
        await timer.waiting(1)
        timer.advance(10)
        await timer.waiting(1)
        assert rounds.at == [0, 10, 20]
        await running.stop()
        assert rounds.at == [0, 10, 20]  # stopping runs no other round

    run(scenario)


def test_a_job_that_waits_one_interval_first_has_no_round_at_start() -> None:
    async def scenario(timer: MovableTimer) -> None:
        rounds = Rounds(timer)
        jobs = BackgroundJobs([PeriodicJob("reading", 5, rounds, first_at_start=False)], timer)
        running = jobs.start()
        await timer.waiting(1)
        assert rounds.at == []
        timer.advance(5)
        await timer.waiting(1)
        assert rounds.at == [5]
        await running.stop()

    run(scenario)


def test_jobs_of_different_intervals_each_keep_their_own() -> None:
    async def scenario(timer: MovableTimer) -> None:
        often, seldom = Rounds(timer), Rounds(timer)
        jobs = BackgroundJobs([PeriodicJob("often", 2, often), PeriodicJob("seldom", 5, seldom)], timer)
        running = jobs.start()
        await timer.waiting(2)
        for _ in range(5):
            timer.advance(2)
            await timer.waiting(2)
        await running.stop()
        # each waits its interval after its last round: 6 is the first move past 5, and 11 is not reached
        assert (often.at, seldom.at) == ([0, 2, 4, 6, 8, 10], [0, 6])

    run(scenario)


def test_a_failed_round_is_logged_and_the_next_runs_at_its_time(caplog: pytest.LogCaptureFixture) -> None:
    async def scenario(timer: MovableTimer) -> None:
        rounds = Rounds(timer, fail=True)
        jobs = BackgroundJobs([PeriodicJob("purging", 60, rounds)], timer)
        running = jobs.start()
        await timer.waiting(1)
        timer.advance(60)
        await timer.waiting(1)
        await running.stop()
        assert rounds.at == [0, 60]

    with caplog.at_level(logging.WARNING, logger="service.ops.periodic"):
        run(scenario)
    assert [r.getMessage() for r in caplog.records] == ["purging failed (ConnectionError); retrying in 60 s"] * 2


def test_stopping_waits_for_a_round_under_way_and_then_runs_each_last_round_once() -> None:
    started, release, events = threading.Event(), threading.Event(), list[str]()

    def purge() -> None:
        started.set()
        assert release.wait(TIMEOUT)
        events.append("purge finished")

    async def scenario(timer: MovableTimer) -> None:
        jobs = BackgroundJobs(
            [
                PeriodicJob("purging", 3600, purge),
                PeriodicJob("flushing", 5, lambda: events.append("flush"), first_at_start=False, last_round=True),
            ],
            timer,
        )
        running = jobs.start()
        await asyncio.to_thread(started.wait, TIMEOUT)  # the purge at start-up is under way
        stopping = asyncio.create_task(running.stop())
        await asyncio.sleep(0)
        assert not stopping.done() and events == []
        release.set()
        await stopping
        assert events == ["purge finished", "flush"]  # the flush's last round after every job stopped, once

    run(scenario)


def test_a_looping_job_runs_until_stop_and_is_awaited_before_stop_returns() -> None:
    events: list[str] = []

    async def courier(stopping: asyncio.Event) -> None:
        events.append("started")
        await stopping.wait()
        await asyncio.sleep(0)  # what it has under way
        events.append("finished")

    async def scenario(timer: MovableTimer) -> None:
        jobs = BackgroundJobs([LoopingJob("posting logout tokens", 2, courier)], timer)
        running = jobs.start()
        await asyncio.sleep(0)
        assert events == ["started"]
        await running.stop()
        assert events == ["started", "finished"]

    run(scenario)


def test_an_interruptible_looping_job_is_cancelled_at_stop_rather_than_waited_out() -> None:
    """The lag's watch sleeps between two looks: stopping a worker must not wait for that sleep to end (it held
    every shutdown for up to its interval), and a looping job that is not interruptible is still awaited."""
    events: list[str] = []

    async def watch(stopping: asyncio.Event) -> None:
        while not stopping.is_set():
            events.append("looked")
            try:
                await asyncio.sleep(TIMEOUT * 10)  # far longer than the test's bound
            except asyncio.CancelledError:
                events.append("cancelled")
                raise

    async def courier(stopping: asyncio.Event) -> None:
        await stopping.wait()
        events.append("courier finished")

    async def scenario(timer: MovableTimer) -> None:
        jobs = BackgroundJobs(
            [LoopingJob("watching", 0.05, watch, interruptible=True), LoopingJob("posting", 2, courier)], timer
        )
        running = jobs.start()
        await asyncio.sleep(0)
        await running.stop()  # within run()'s bound: the sleep was cancelled, not waited out
        assert events[0] == "looked"
        assert sorted(events[1:]) == ["cancelled", "courier finished"]  # the courier awaited, the watch cancelled
        assert running.tasks[0].cancelled() and running.tasks[1].exception() is None
        assert jobs.running == ()

    run(scenario)


def test_each_lifespan_runs_the_jobs_of_its_own_and_stops_only_those() -> None:
    async def scenario(timer: MovableTimer) -> None:
        rounds = Rounds(timer)
        jobs = BackgroundJobs([PeriodicJob("counting", 10, rounds)], timer)
        first = jobs.start()
        await timer.waiting(1)
        second = jobs.start()  # one app, two lifespans (two TestClients entered on it)
        await timer.waiting(2)
        assert rounds.at == [0, 0] and jobs.running == (first, second)
        await first.stop()
        assert jobs.running == (second,) and all(task.done() for task in first.tasks)
        timer.advance(10)
        await timer.waiting(1)
        assert rounds.at == [0, 0, 10] and not any(task.done() for task in second.tasks)
        await second.stop()
        assert jobs.running == ()

    run(scenario)
