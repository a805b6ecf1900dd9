"""The tests' wait for a window of the system's clock with time left in it (tests/support/clocks.py), which the rate
limit's tests start from (the ``counting_minute`` fixture)."""

from __future__ import annotations

import time

from tests.support.clocks import window_not_ending


def test_returns_with_at_least_the_margin_left_in_the_window() -> None:
    for _ in range(5):  # a window of a fifth of a second: several turns of it in a second
        window_not_ending(0.2, margin=0.15)
        assert 0.2 - time.time() % 0.2 > 0.1  # the margin, less what this line itself took


def test_returns_at_once_when_the_margin_is_left() -> None:
    started = time.monotonic()
    window_not_ending(3600.0, margin=0.0)  # any time of an hour leaves more than nothing of it
    assert time.monotonic() - started < 0.05
