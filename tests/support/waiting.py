"""Waiting for what a background task does (a purge round, a mail delivered), with a deadline."""

from __future__ import annotations

import time
from collections.abc import Callable


def eventually(condition: Callable[[], bool], timeout: float) -> bool:
    """Whether ``condition`` became true within ``timeout`` seconds (checked every 50 ms)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
