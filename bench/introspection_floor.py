"""What the introspection floor asks of a framework: stock Connexion and a bare Starlette route, each answering a
constant introspection, against node-oidc-provider introspecting a live token.

    python -m bench.introspection_floor [--seconds 4] [--repeats 3]

Issue 36 holds our introspection to 1.0x node-oidc-provider's, on Connexion's one route per operation. This measures
what that route costs before any of our code runs, the same way ``python -m bench --only identity-peer`` measures
the service (one process pinned to CPU 0, wrk on CPU 1, 16 connections, the same form and Basic header):

- **Connexion 3.3 as shipped**: ``AsyncApp`` over ``openapi/identity.yaml`` with its default middleware, every
  operation a stub, ``POST /oauth2/introspect`` answering a constant ``active`` document (no client authentication,
  no token read; request validation as Connexion does it, response validation off);
- **a bare Starlette route**: the form parsed, the same constant answered (no contract, no validation);
- **node-oidc-provider** (``bench/oidc_peer.mjs``): client authentication and an opaque token from its memory.

Each is measured ``--repeats`` times, interleaved; medians with min-max, and each as a share of the peer's.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.load import wrk
from bench.servers import Server, free_port, uvicorn_factory_command

ROOT = Path(__file__).resolve().parent.parent
CLIENT = "bench-peer"  # the peer's one client, as `--only identity-peer` registers it (bench/__main__.py)
ANSWER = {
    "active": True,
    "client_id": CLIENT,
    "scope": "members:read",
    "token_type": "Bearer",
    "exp": 1999999999,
    "iat": 1700000000,
    "iss": "http://127.0.0.1",
}


def connexion_as_shipped() -> Any:
    """``connexion.AsyncApp`` over the served identity contract, its defaults untouched, every operation a stub."""
    import connexion
    from connexion.resolver import Resolver

    async def introspect(body: dict[str, Any]) -> tuple[dict[str, Any], int, dict[str, str]]:
        return ANSWER, 200, {"Cache-Control": "no-store"}

    async def other(*_args: Any, **_kwargs: Any) -> tuple[dict[str, Any], int]:
        return {}, 200

    class Stubs(Resolver):
        def resolve_function_from_operation_id(self, operation_id: str) -> Callable[..., Any]:
            return introspect if operation_id == "introspection.introspect" else other

    app = connexion.AsyncApp(__name__)
    app.add_api(ROOT / "openapi" / "identity.yaml", resolver=Stubs(), validate_responses=False)
    return app


def starlette_route() -> Any:
    """One Starlette route: the form parsed, the constant answered; ``GET /ready`` for the start-up check."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    async def introspect(request: Request) -> Response:
        form = await request.form()
        return JSONResponse(ANSWER if form.get("token") else {"active": False}, headers={"Cache-Control": "no-store"})

    async def ready(_request: Request) -> Response:
        return Response()

    return Starlette(routes=[Route("/oauth2/introspect", introspect, methods=["POST"]), Route("/ready", ready)])


def _uvicorn(factory: str, port: int) -> list[str]:
    return uvicorn_factory_command(f"bench.introspection_floor:{factory}", port, cpus="0")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.introspection_floor", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=4.0, help="each measured run (after a 1 s warm-up)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    node = shutil.which("node")
    if node is None or not (ROOT / "node_modules" / "oidc-provider").is_dir():
        print("needs node and `npm ci` (oidc-provider in node_modules)", file=sys.stderr)
        return 2
    from bench.__main__ import PEER_SECRET, _client_credentials_token

    basic = {"Authorization": "Basic " + base64.b64encode(f"{CLIENT}:{PEER_SECRET}".encode()).decode()}
    sides = {
        "Connexion 3.3 as shipped, constant answer": (_uvicorn("connexion_as_shipped", port := free_port()), port,
                                                      "/jwks"),
        "a bare Starlette route, constant answer": (_uvicorn("starlette_route", port := free_port()), port, "/ready"),
        "node-oidc-provider, a live opaque token": (["taskset", "-c", "0", node, str(ROOT / "bench" / "oidc_peer.mjs"),
                                                    str(port := free_port()), CLIENT, PEER_SECRET], port, "/jwks"),
    }  # fmt: skip
    rates: dict[str, list[float]] = {name: [] for name in sides}
    with tempfile.TemporaryDirectory() as scratch, contextlib.ExitStack() as started:
        env = {**os.environ, "NODE_ENV": "production", "PYTHONPATH": str(ROOT)}
        servers = {
            name: started.enter_context(
                Server(name.split(",")[0].replace(" ", "-"), command, port, env, Path(scratch), ready)
            )
            for name, (command, port, ready) in sides.items()
        }
        peer = servers["node-oidc-provider, a live opaque token"]
        body = "grant_type=client_credentials&scope=members%3Aread&resource=urn%3Abench%3Aopaque"
        token = _client_credentials_token(peer.url, basic, body)
        for repeat in range(args.repeats + 1):  # the first round warms each up
            for name, server in servers.items():
                run = wrk(server.url + "/oauth2/introspect", seconds=args.seconds if repeat else 1.0,
                          connections=16, threads=2, headers=basic, script="post.lua",
                          script_args=[f"token={token}"], cpus="1")  # fmt: skip
                if run.errors:
                    raise RuntimeError(f"{name}: {run.errors} errors in {run.requests} requests")
                if repeat:
                    rates[name].append(run.requests_per_second)
    peer_rate = statistics.median(rates["node-oidc-provider, a live opaque token"])
    print("| what answers POST /oauth2/introspect | requests a second, median (min-max) | µs a request | ÷ the peer |")
    print("|---|---|---|---|")
    for name, measured in rates.items():
        median = statistics.median(measured)
        print(f"| {name} | {median:,.0f} ({min(measured):,.0f}-{max(measured):,.0f}) | {1e6 / median:.0f} | "
              f"{median / peer_rate:.2f} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
