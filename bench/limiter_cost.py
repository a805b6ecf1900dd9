"""Cost per request of the per-key rate limit, with few or many requests already in the key's window.

    python -m bench.limiter_cost [--redis redis://127.0.0.1:6379/15]

Before: ``limits``' moving window (one entry per request of the last minute; ``hit`` inserts at the head of
a list, and the stats read the window), as ``service/menus_api/rate_limiter.py`` used it. After: the service's
``RateLimiter.take`` (a sliding window counter: two counters per key). Each is timed over ``--requests``
requests after filling the key's window with 1,000 and with 150,000 requests; in Redis also 100 at a time,
as a busy worker takes them (one pipeline for all). A micro-benchmark in one
process, not a load test (``python -m bench`` is that).
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid

from limits import RateLimitItemPerSecond
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter

from service.menus_api.rate_limiter import RateLimiter, RedisTuning
from service.settings import Settings

FILLS = (1_000, 150_000)
LIMIT = 1_000_000  # never reached: every request is admitted and counted


def moving_window(fill: int, requests: int) -> float:
    """Microseconds a request with ``fill`` requests in the window, as the moving window counted them."""
    storage = MemoryStorage()
    strategy = MovingWindowRateLimiter(storage)
    item = RateLimitItemPerSecond(LIMIT, 60)
    for _ in range(fill):
        strategy.hit(item, "k")
    started = time.perf_counter()
    for _ in range(requests):
        strategy.hit(item, "k")
        strategy.get_window_stats(item, "k")
    return (time.perf_counter() - started) / requests * 1e6


def sliding_counter(fill: int, requests: int, storage: str, *, together: int = 1) -> float:
    """Microseconds a request with ``fill`` requests in the window, through ``RateLimiter.take``; ``together``
    requests at a time (in Redis, they share a pipeline: the batching of ``RedisWindows``)."""
    limiter = RateLimiter(LIMIT, storage, redis=RedisTuning.of(Settings(database_url="sqlite://")))
    key = uuid.uuid4().hex

    async def run() -> float:
        try:
            await asyncio.gather(*(limiter.take(key) for _ in range(fill)))  # pipelined in Redis: filled quickly
            started = time.perf_counter()
            if together == 1:
                for _ in range(requests):
                    await limiter.take(key)
            else:
                for _ in range(requests // together):
                    await asyncio.gather(*(limiter.take(key) for _ in range(together)))
            return (time.perf_counter() - started) / requests * 1e6
        finally:
            await limiter.aclose()

    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.limiter_cost", description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=5_000, help="timed requests per figure")
    parser.add_argument("--redis", help="also time the sliding window counter in this Redis (a database to spare)")
    args = parser.parse_args()
    rows = [("moving window, memory (before)", lambda fill: moving_window(fill, args.requests))]
    rows.append(("sliding window counter, memory", lambda fill: sliding_counter(fill, args.requests, "memory://")))
    if args.redis:
        rows.append(("sliding window counter, Redis", lambda fill: sliding_counter(fill, args.requests, args.redis)))
        rows.append(
            (
                "  the same, 100 at a time",
                lambda fill: sliding_counter(fill, args.requests, args.redis, together=100),
            )
        )
    print(f"{'µs per request':<34}" + "".join(f"{f'{fill:,} in window':>20}" for fill in FILLS))
    for name, measure in rows:
        print(f"{name:<34}" + "".join(f"{measure(fill):>20.1f}" for fill in FILLS))


if __name__ == "__main__":
    main()
