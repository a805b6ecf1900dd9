"""Time and identifiers, in one place so tests can reason about them.

Every domain object that reads the time takes a ``Clock`` (the system's by default); the provider hands
its own to each, so a test moves time for all of them at once instead of patching modules.
"""

import secrets
import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware (UTC)."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back, for the objects that measure intervals (``time.monotonic``)."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    monotonic = staticmethod(time.monotonic)  # the builtin itself: no call of ours on the request path


SYSTEM_CLOCK: Clock = SystemClock()


def utc(moment: datetime) -> datetime:
    """SQLite returns naive datetimes; every stored time is UTC."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def epoch(moment: datetime) -> int:
    """RFC 7519 §2 NumericDate: whole seconds since the epoch."""
    return int(moment.timestamp())


def new_id(prefix: str) -> str:
    """A random public identifier such as ``org_5f3a9c0e1b2d4f67``."""
    return f"{prefix}_{secrets.token_hex(8)}"
