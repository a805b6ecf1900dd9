"""Clocks for tests: handed to the provider (``create_app(clock=…)``) or to a store, instead of patching time."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta


class MovableClock:
    """The system's time, moved by ``advance``: time passes for every object that reads this clock."""

    def __init__(self) -> None:
        self._offset = timedelta(0)
        self._held: datetime | None = None  # the system's time where ``hold`` stopped it, or None

    def now(self) -> datetime:
        return (self._held or datetime.now(UTC)) + self._offset

    def hold(self) -> None:
        """Stop the wall clock where it is (``now`` moves only by ``advance`` from then on; ``monotonic`` runs on):
        for a test whose answer depends on the second a token was issued in."""
        self._held = datetime.now(UTC)

    def monotonic(self) -> float:
        """``time.monotonic()``, moved by ``advance`` as ``now`` is: for the objects that measure intervals."""
        return time.monotonic() + self._offset.total_seconds()

    def advance(self, seconds: float) -> None:
        """Move the clock by ``seconds`` (back, if negative)."""
        self._offset += timedelta(seconds=seconds)


class FixedClock:
    """Always the same instant."""

    def __init__(self, moment: datetime) -> None:
        self._moment = moment

    def now(self) -> datetime:
        return self._moment

    def monotonic(self) -> float:
        return self._moment.timestamp()


class MovableTimer:
    """A ``Timer`` of the background jobs (service/ops/periodic.py) whose time moves only by ``advance``: a job's
    wait ends when the timer has been moved past its end (or when the job is told to stop), never by itself."""

    def __init__(self) -> None:
        self.now = 0.0
        self._waits: list[tuple[float, asyncio.Future[None]]] = []
        self._new_wait = asyncio.Event()

    async def wait(self, seconds: float, stopping: asyncio.Event) -> None:
        wait = (self.now + seconds, asyncio.get_running_loop().create_future())
        self._waits.append(wait)
        self._new_wait.set()
        stopped = asyncio.ensure_future(stopping.wait())
        try:
            await asyncio.wait({wait[1], stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
            self._waits.remove(wait)

    def advance(self, seconds: float) -> None:
        """Move the time by ``seconds``: every wait that ends by then ends."""
        self.now += seconds
        for end, done in self._waits:
            if end <= self.now and not done.done():
                done.set_result(None)

    async def waiting(self, count: int) -> None:
        """Until ``count`` waits are under way and not yet ended (each job is between two rounds)."""
        while sum(not done.done() for _, done in self._waits) < count:
            self._new_wait.clear()
            await self._new_wait.wait()


def window_not_ending(seconds: float = 60.0, margin: float = 5.0) -> None:
    """Return at least ``margin`` seconds before the current window of ``seconds`` of Unix time ends, waiting for the
    next window to begin if need be. The rate limits count in windows of the system's clock that no test can move
    (the ``limits`` library's memory storage reads ``time.time()``, its Redis scripts the server's ``TIME``): a
    request just after a window turns is weighed against the window before as a share of it, and can be admitted
    where one just before the turn was refused. A test that counts a limit's requests to the refusal starts here."""
    left = seconds - time.time() % seconds
    if left < margin:
        time.sleep(left + 0.01)
