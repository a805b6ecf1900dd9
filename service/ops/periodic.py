"""A worker's background jobs: one list, started when the app's lifespan starts and stopped when it shuts down,
in one place (``BackgroundJobs``).

A job is one of two kinds:

- ``PeriodicJob``: a round of blocking work (a purge, a usage write, a mail round) run off the event loop every
  ``interval`` seconds, the first at start-up or after one interval. A failed round is logged and the next one
  runs at its time (the database may be down). It stops at shutdown: a round under way finishes, and a job
  with ``last_round`` runs one more (the usage counted since the last write).
- ``LoopingJob``: a coroutine that keeps its own time (the back-channel logout courier, woken early by a
  revocation; the admission's watch of the event loop's lag, which measures how late a timer runs). It runs
  until the ``stopping`` event it is given is set, and finishes what it has under way before it returns; one
  that never has anything under way (``interruptible``: the lag's watch, asleep between two looks) is
  cancelled at shutdown instead, so that stopping a worker never waits out its sleep.

The time a periodic job waits comes from a ``Timer``: the event loop's (``LOOP_TIMER``) in the service, one the
test moves (``tests/support/clocks.py``) in the tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from service.web.offload import in_background

logger = logging.getLogger(__name__)


class Timer(Protocol):
    async def wait(self, seconds: float, stopping: asyncio.Event) -> None:
        """Return once ``seconds`` have passed, or as soon as ``stopping`` is set."""
        ...


class LoopTimer:
    """The event loop's time."""

    async def wait(self, seconds: float, stopping: asyncio.Event) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), seconds)


LOOP_TIMER = LoopTimer()


@dataclass(frozen=True, slots=True)
class PeriodicJob:
    """Blocking ``work`` run off the event loop every ``interval`` seconds until shutdown."""

    name: str  # what it does, for the log: "purging" ("purging failed (OperationalError); retrying in 3600 s")
    interval: float  # seconds between two rounds
    work: Callable[[], object]  # one round; run in a thread
    first_at_start: bool = True  # a round at start-up; else the first one interval after it
    last_round: bool = False  # at shutdown, once the other rounds have stopped: one more round

    async def run(self, stopping: asyncio.Event, timer: Timer) -> None:
        if not self.first_at_start:
            await timer.wait(self.interval, stopping)
        while not stopping.is_set():
            await _attempt(self.work, self.name, self.interval)
            await timer.wait(self.interval, stopping)

    async def stop(self) -> None:
        if self.last_round:
            await _attempt(self.work, f"{self.name} at shutdown")


@dataclass(frozen=True, slots=True)
class LoopingJob:
    """A coroutine that keeps its own time, about every ``interval`` seconds, until ``stopping`` is set."""

    name: str
    interval: float  # seconds between two turns when nothing wakes it (what its own loop waits)
    loop: Callable[[asyncio.Event], Awaitable[None]]  # runs until the event is set; finishes what is under way
    interruptible: bool = False  # nothing is ever under way: cancelled at shutdown rather than awaited

    async def run(self, stopping: asyncio.Event, timer: Timer) -> None:
        await self.loop(stopping)

    async def stop(self) -> None:
        return None


Job = PeriodicJob | LoopingJob


class BackgroundJobs:
    """The jobs of one worker: ``start()`` at the lifespan's start-up gives the jobs running, which the lifespan's
    shutdown stops (``await running.stop()``). Each lifespan runs its own (tests run several on one app, each
    on an event loop of its own)."""

    def __init__(self, jobs: Sequence[Job] = (), timer: Timer = LOOP_TIMER) -> None:
        self.jobs = tuple(jobs)
        self._timer = timer
        self._running: list[RunningJobs] = []

    @property
    def running(self) -> tuple[RunningJobs, ...]:
        """The jobs started and not yet stopped, one ``RunningJobs`` per lifespan."""
        return tuple(self._running)

    def start(self) -> RunningJobs:
        """Start every job, each in a task of its own, in the order of the list (on the running event loop)."""
        running = RunningJobs(self.jobs, self._timer, on_stopped=self._running.remove)
        self._running.append(running)
        return running


class RunningJobs:
    """The jobs of one lifespan, started; ``stop()`` ends them."""

    def __init__(self, jobs: tuple[Job, ...], timer: Timer, on_stopped: Callable[[RunningJobs], object]) -> None:
        self.jobs = jobs
        self._stopping = asyncio.Event()
        self.tasks = tuple(asyncio.create_task(job.run(self._stopping, timer), name=job.name) for job in jobs)
        self._on_stopped = on_stopped

    async def stop(self) -> None:
        """Tell every job to stop, wait for each (a round under way finishes first; an interruptible job is
        cancelled), then run the last rounds."""
        self._stopping.set()
        for job, task in zip(self.jobs, self.tasks, strict=True):
            if isinstance(job, LoopingJob) and job.interruptible:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            else:
                await task
        for job in self.jobs:
            await job.stop()
        self._on_stopped(self)


async def _attempt(work: Callable[[], object], what: str, interval: float | None = None) -> None:
    try:
        await in_background(work)  # the one way off the event loop (service/web/offload.py)
    except Exception as error:  # the database may be down: the next round tries again
        retry = f"; retrying in {interval} s" if interval else ""
        logger.warning("%s failed (%s)%s", what, type(error).__name__, retry)
