"""CPU time per identity request (introspection, a client_credentials token, or the JWKS) through the whole ASGI app,
in process.

    python -m bench.request_cost [--endpoint introspect|token|jwks] [--requests 2000] [--rounds 7] [--together 1]
                                 [--profile [--top 25] [--dump FILE]]

The app is ``create_app`` over a fresh SQLite database in a temporary folder (the benchmark's setting), with one
``client_secret_basic`` client of ``client_credentials``; it is driven directly as an ASGI callable on one event
loop (no server, no HTTP client), one request after another (``--together N``: N at a time, as the benchmark's 16
connections keep them coming, so that the worker threads run several in a row), each the same form wrk sends
(``token=…`` to ``/oauth2/introspect``, ``grant_type=client_credentials&scope=members%3Aread`` to
``/oauth2/token``; ``GET /jwks`` without a body, answered by the edge from memory). Logging is not set up here, so
no access line is written (``serve`` writes one per request). Reported per request, the median of ``--rounds``
rounds:

- **event loop CPU**: ``time.thread_time()`` of the loop's thread: what a worker's one core spends on the request
  outside the handler's worker thread (routing, Connexion's middlewares, validation, the handler's coroutine);
- **process CPU**: ``time.process_time()``: the same plus the worker threads' SQL and signing;
- wall time, for reference only.

CPU time does not move with the other processes on a shared machine the way requests a second do, so it is the
figure to compare before and after a change. ``--profile``: one more round under cProfile (the loop's thread only),
summarised by layer: each layer's inclusive time per request, and what it adds to the layer inside it. A
micro-benchmark in one process, not a load test (``python -m bench`` is that).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import cProfile
import json
import pstats
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from identity.accounts.organizations import OrganizationStore
from identity.clients.registry import ClientStore
from service.app import create_app
from service.database.db import make_engine
from service.database.schema import upgrade
from service.settings import Settings

HOST = "127.0.0.1:8000"
TOKEN_FORM = b"grant_type=client_credentials&scope=members%3Aread"


def layers() -> list[tuple[str, int, Any]]:
    """The layers of an identity request, outermost first: (label, depth, the function whose inclusive time is the
    layer's). A function that two layers share (Starlette's ``Router.__call__``, Connexion's
    ``RoutedMiddleware.__call__``) is left out: cProfile counts a function's outermost call only."""
    from connexion.middleware.context import ContextOperation
    from connexion.middleware.exceptions import ExceptionMiddleware
    from connexion.middleware.lifespan import LifespanMiddleware
    from connexion.middleware.request_validation import RequestValidationOperation
    from connexion.middleware.routing import RoutingMiddleware, RoutingOperation
    from starlette.middleware.errors import ServerErrorMiddleware
    from starlette.responses import Response

    from handlers.introspection import introspect
    from handlers.token import exchange
    from service.app import Dispatcher
    from service.identity_api.client_cors import ClientCrossOrigin
    from service.identity_api.identity_app import IdentityEntry
    from service.web import connexion_adapter
    from service.web.body_limit import BodyLimit
    from service.web.edge import answer

    return [
        ("dispatcher", 0, Dispatcher.__call__),
        ("edge (observer, admission, steps)", 1, answer),
        ("client CORS", 2, ClientCrossOrigin.__call__),
        ("body limit", 3, BodyLimit.__call__),
        ("identity entry", 4, IdentityEntry.__call__),
        ("ConnexionMiddleware", 5, connexion_adapter.ConnexionMiddleware.__call__),
        ("server error middleware", 6, ServerErrorMiddleware.__call__),
        ("exception middleware", 7, ExceptionMiddleware.__call__),
        ("routing middleware (first router)", 8, RoutingMiddleware.__call__),
        ("routing operation (second router's)", 9, RoutingOperation.__call__),
        ("request validation operation", 10, RequestValidationOperation.__call__),
        *[  # the tree's own, where it has one
            ("request validation operation (ours)", 10, own.__call__)
            for own in [getattr(connexion_adapter, "_OnceValidationOperation", None)]
            if own is not None
        ],
        ("lifespan middleware", 11, LifespanMiddleware.__call__),
        ("context operation", 12, ContextOperation.__call__),
        ("operations (dispatch by id)", 13, connexion_adapter._OnceOperations.__call__),
        ("operation (decorated handler, response)", 14, connexion_adapter._OnceOperation.__call__),
        ("handler: introspect", 15, introspect),
        ("handler: token", 15, exchange),
        ("response sent", 15, Response.__call__),
    ]


@dataclass(frozen=True)
class Figures:
    loop_us: float
    process_us: float
    wall_us: float


class Driver:
    """Sends one form to one path of ``app`` again and again, as raw ASGI calls."""

    def __init__(self, app: Any, path: str, body: bytes, authorization: str, method: str = "POST") -> None:
        self.app = app
        headers = [(b"host", HOST.encode())]
        if method == "POST":
            headers += [
                (b"authorization", authorization.encode()),
                (b"content-type", b"application/x-www-form-urlencoded"),
                (b"content-length", str(len(body)).encode()),
            ]
        self.scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": headers,
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8000),
        }
        self.body = body
        self.statuses: dict[int, int] = {}
        self.last = b""

    async def one(self) -> None:
        sent = False

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if sent:
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": self.body, "more_body": False}

        chunks: list[bytes] = []

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                self.statuses[message["status"]] = self.statuses.get(message["status"], 0) + 1
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.app({**self.scope, "headers": list(self.scope["headers"])}, receive, send)
        self.last = b"".join(chunks)

    async def round(self, requests: int, together: int = 1) -> Figures:
        """``requests`` requests, ``together`` at a time (as many connections would send them)."""
        loop, process, wall = time.thread_time(), time.process_time(), time.perf_counter()
        for _ in range(requests // together):
            if together == 1:
                await self.one()
            else:
                await asyncio.gather(*(self.one() for _ in range(together)))
        requests = requests // together * together
        return Figures(
            (time.thread_time() - loop) / requests * 1e6,
            (time.process_time() - process) / requests * 1e6,
            (time.perf_counter() - wall) / requests * 1e6,
        )


def _setup(folder: Path) -> tuple[Any, str]:
    """The app over a fresh database, and the ``Authorization`` of its one client."""
    settings = Settings(
        database_url=f"sqlite:///{folder / 'state.sqlite3'}",
        base_url=f"http://{HOST}",
        issuer=f"http://{HOST}",
    )
    engine = make_engine(settings.database_url, settings.database_pool())
    upgrade(engine)
    org = OrganizationStore(engine).create("Bench")
    client, secret = ClientStore(engine).create(
        name="Bench job",
        org_id=org.id,
        auth_method="client_secret_basic",
        grants=["client_credentials"],
        scopes=["members:read"],
    )
    engine.dispose()
    basic = base64.b64encode(f"{client.id}:{secret}".encode()).decode()
    return create_app(settings), f"Basic {basic}"


async def _driver(app: Any, authorization: str, endpoint: str) -> Driver:
    if endpoint == "jwks":
        return Driver(app, "/jwks", b"", authorization, method="GET")
    if endpoint == "token":
        return Driver(app, "/oauth2/token", TOKEN_FORM, authorization)
    minting = Driver(app, "/oauth2/token", TOKEN_FORM, authorization)
    await minting.one()
    token = json.loads(minting.last)["access_token"]
    return Driver(app, "/oauth2/introspect", f"token={token}".encode(), authorization)


def _key(function: Any) -> tuple[str, int, str]:
    code = function.__code__
    return code.co_filename, code.co_firstlineno, code.co_name


def _print_profile(stats: pstats.Stats, requests: int, top: int, out: Callable[[str], None]) -> None:
    table = stats.stats  # type: ignore[attr-defined]
    total = stats.total_tt  # type: ignore[attr-defined]
    out(
        f"\nprofile (cProfile with the thread's CPU clock, the event loop's thread; its own cost inflates each "
        f"figure): {total / requests * 1e6:.0f} µs per request in all"
    )
    found = [(label, depth, table[_key(f)][3] / requests * 1e6) for label, depth, f in layers() if _key(f) in table]
    out(f"{'layer (inclusive µs; own: less the layers inside)':<54}{'µs':>8}{'own':>8}")
    for index, (label, depth, inclusive) in enumerate(found):
        inside = []  # the layers nested in this one, up to the next that is not
        for entry in found[index + 1 :]:
            if entry[1] <= depth:
                break
            inside.append(entry)
        nearest = min((entry[1] for entry in inside), default=0)  # a layer absent from a tree is skipped
        inner = sum(entry[2] for entry in inside if entry[1] == nearest)
        out(f"{' ' * depth}{label:<{54 - depth}}{inclusive:>8.0f}{inclusive - inner:>8.0f}")
    out(f"\nthe {top} functions with the most own time (µs per request, calls per request):")
    rows = sorted(table.items(), key=lambda item: item[1][2], reverse=True)[:top]
    for (filename, line, name), row in rows:
        where = "/".join(Path(filename).parts[-2:])
        out(f"{row[2] / requests * 1e6:>8.1f}{row[1] / requests:>7.1f}  {where}:{line} {name}")


def main(argv: list[str] | None = None, out: Callable[[str], None] = print) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.request_cost", description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", choices=["introspect", "token", "jwks"], default="introspect")
    parser.add_argument("--requests", type=int, default=2_000, help="requests per round")
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds (the median is reported)")
    parser.add_argument(
        "--together", type=int, default=1, help="requests sent at once (the benchmark's wrk keeps 16 connections busy)"
    )
    parser.add_argument("--profile", action="store_true", help="one more round under cProfile, by layer")
    parser.add_argument("--top", type=int, default=25, help="with --profile: functions listed by own time")
    parser.add_argument("--dump", type=Path, help="with --profile: write the raw profile (pstats) here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="request-cost-") as folder:
        app, authorization = _setup(Path(folder))

        async def run() -> tuple[list[Figures], Driver, pstats.Stats | None]:
            driver = await _driver(app, authorization, args.endpoint)
            await driver.round(min(200, args.requests), args.together)  # warm: decorators, rules, caches, first reads
            rounds = [await driver.round(args.requests, args.together) for _ in range(args.rounds)]
            stats = None
            if args.profile:
                profile = cProfile.Profile(time.thread_time)
                profile.enable()
                await driver.round(args.requests, args.together)
                profile.disable()
                stats = pstats.Stats(profile)
                if args.dump:
                    stats.dump_stats(args.dump)
            return rounds, driver, stats

        rounds, driver, stats = asyncio.run(run())
        app.engine.dispose()
    if set(driver.statuses) != {200}:
        raise SystemExit(f"not every answer was 200: {driver.statuses}; last: {driver.last[:300]!r}")
    at_once = "one at a time" if args.together == 1 else f"{args.together} at a time"
    request = f"{driver.scope['method']} {driver.scope['path']}"
    out(f"{request}: {args.rounds} rounds of {args.requests:,} requests, {at_once}")
    out(f"{'µs per request':<22}{'median':>9}{'min':>9}{'max':>9}")
    for label, pick in (
        ("event loop CPU", lambda f: f.loop_us),
        ("process CPU", lambda f: f.process_us),
        ("wall", lambda f: f.wall_us),
    ):
        values = [pick(f) for f in rounds]
        out(f"{label:<22}{statistics.median(values):>9.0f}{min(values):>9.0f}{max(values):>9.0f}")
    if stats is not None:
        _print_profile(stats, args.requests, args.top, out)


if __name__ == "__main__":
    main()
