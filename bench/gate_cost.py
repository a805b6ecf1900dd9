"""Time per authenticated menus request through the whole ASGI app, in process, with and without the key cache.

    python -m bench.gate_cost [--requests 3000]

The app is ``create_app`` over a fresh SQLite database in a temporary folder, driven directly as an ASGI
callable (no server, no HTTP client): the same URL each time, so after the first request the answer cache
serves it and what is left is the edge and the gate (API key, rate limit, ETag). "SQL per request" puts back
what the gate did before the key cache: ``ApiKeyStore.authenticate`` (one indexed query) on every request.
A micro-benchmark in one process, not a load test (``python -m bench`` is that).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from identity.api_keys.keys import ApiKeyStore
from service.app import create_app
from service.database.db import make_engine
from service.database.schema import upgrade
from service.menus_api.key_cache import KeyCache
from service.settings import Settings

PATH = "/v1/menus/regions"
LIMIT = 100_000_000  # the limiter counts every request and never refuses one


async def timed(app: Any, key: str, requests: int, clock: Any = time.perf_counter) -> float:
    """Microseconds per request, over ``requests`` sequential requests (``clock``: wall or CPU time)."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": PATH,
        "raw_path": PATH.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1"), (b"authorization", f"Bearer {key}".encode())],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }
    statuses: list[int] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    for _ in range(50):  # warm: the answer cache, the key cache, the first revocation-count read
        await app(dict(scope), receive, send)
    started = clock()
    for _ in range(requests):
        await app(dict(scope), receive, send)
    elapsed = clock() - started
    assert set(statuses) == {200}, set(statuses)
    return elapsed / requests * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.gate_cost", description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3_000, help="timed requests per figure")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(database_url=f"sqlite:///{Path(folder) / 'state.sqlite3'}", rate_limit_per_minute=LIMIT)
        engine = make_engine(settings.database_url, settings.database_pool())
        upgrade(engine)
        _, key = ApiKeyStore(engine).create("bench")
        app = create_app(settings)
        cached = asyncio.run(timed(app, key, args.requests))
        # CPU time, the median of seven: steadier than wall time on a shared machine (the figure to compare A/B)
        cpu = sorted(asyncio.run(timed(app, key, args.requests, time.process_time)) for _ in range(7))[3]
        store = ApiKeyStore(engine)

        async def per_request(self: KeyCache, token: str) -> str | None:
            return store.authenticate(token)  # before: one query per request, on the event loop

        original = KeyCache.authenticate
        KeyCache.authenticate = per_request  # type: ignore[method-assign]
        try:
            uncached = asyncio.run(timed(app, key, args.requests))
        finally:
            KeyCache.authenticate = original  # type: ignore[method-assign]
        engine.dispose()
    print(f"µs per request ({PATH}, answer cache warm, {args.requests:,} requests)")
    print(f"{'key cache (now)':<28}{cached:>10.1f}")
    print(f"{'key cache, CPU µs (median)':<28}{cpu:>10.1f}")
    print(f"{'SQL per request (before)':<28}{uncached:>10.1f}")


if __name__ == "__main__":
    main()
