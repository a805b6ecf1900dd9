"""The rate limit's headers from the sliding window counter's counts (service/menus_api/rate_limiter.py): the
previous minute's requests weigh as much as is left of it, so the seconds to wait shrink as it passes. The counts
are given as a Redis round trip or the memory storage would report them, at an instant the test chooses (the
windows themselves read the system clock, which a test cannot move)."""

from __future__ import annotations

import pytest

from service.menus_api.rate_limiter import RateLimiter
from service.menus_api.redis_windows import Counted
from tests.support.defaults import REDIS


def decided(limit: int, counted: Counted) -> tuple[bool, int, int, int]:
    decision = RateLimiter(limit, redis=REDIS)._decide(counted)
    return decision.allowed, decision.remaining, decision.reset, decision.retry_after


@pytest.mark.parametrize(
    ("limit", "counted", "expected"),
    [
        # 12 admitted last minute, 45 s of it left to weigh (9), 3 this minute: 12 of 10. The next request
        # waits until the weight is 7: 45 - (10 - 3) * 60 / 12 = 10 s.
        (10, Counted(False, 12, 45.0, 3, 90.0), (False, 0, 10, 10)),
        # Half a second of last minute's 60 requests left (0.5) and 9 now: 9.5 of 10, one request left; one more
        # free once this minute's 9 weigh less than 9, when it ends, 40 s from now.
        (10, Counted(True, 60, 0.5, 9, 100.0), (True, 1, 40, 0)),
        # 12 counted this minute under a limit lowered to 10: wait until the minute ends (30 s) and its weight
        # is down to 10 of 12 (another 10 s).
        (10, Counted(False, 0, 0.0, 12, 90.0), (False, 0, 40, 40)),
        # The same with the minute ending in a tenth of a second: 0.1 + 60 * (1 - 10 / 13) = 13.95 s, 14 whole.
        (10, Counted(False, 0, 0.0, 13, 60.1), (False, 0, 14, 14)),
        # Nothing counted: the whole limit, nothing to wait for.
        (10, Counted(True, 0, 0.0, 0, 120.0), (True, 10, 0, 0)),
    ],
    ids=["previous-minute-weighs", "previous-minute-almost-gone", "limit-lowered", "minute-ending", "nothing-counted"],
)
def test_the_headers_follow_the_weight_of_the_previous_minute(
    limit: int, counted: Counted, expected: tuple[bool, int, int, int]
) -> None:
    assert decided(limit, counted) == expected
