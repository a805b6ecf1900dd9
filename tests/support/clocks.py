"""Clocks for tests: handed to the provider (``create_app(clock=…)``) or to a store, instead of patching time."""

from __future__ import annotations

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
