"""Calls made at the same instant from threads of this process, each on its own database connection."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

TIMEOUT = 30  # seconds a thread may wait at the barrier, or for its call


def at_once(*calls: Callable[[], Any]) -> list[Any]:
    """Run every call in a thread of its own, released together by a ``threading.Barrier``: what each returned, or
    the exception it raised, in the order of ``calls``."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def run(index: int, call: Callable[[], Any]) -> None:
        barrier.wait(timeout=TIMEOUT)
        try:
            results[index] = call()
        except Exception as error:  # noqa: BLE001 - the caller looks at what each call came to
            results[index] = error

    threads = [threading.Thread(target=run, args=(index, call)) for index, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=2 * TIMEOUT)
    return results
