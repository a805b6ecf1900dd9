"""The ceiling: a bare Starlette route answering the same constant bytes on the same server, for every path.

No key, no limit, no parameters, no work: what uvicorn, Starlette and one ASGI call cost on this machine, so
that every menus figure also reads as a share of what the stack can do at all. The body is the service's own
answer to scenario 1's query, read from ``--body-file`` (bench/__main__.py fetches it once per run), with its
content type. Run as ``python -m bench.ceiling --port P --body-file F [--workers N]``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from bench.servers import run_app


def from_env() -> Starlette:
    body = Path(os.environ["BENCH_CEILING_BODY"]).read_bytes()
    headers = {"Content-Type": "application/json", "Cache-Control": "private, max-age=300"}

    async def constant(_request: Request) -> Response:
        return Response(body, headers=headers)

    return Starlette(routes=[Route("/{path:path}", constant)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--body-file", type=Path, required=True)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    os.environ["BENCH_CEILING_BODY"] = str(args.body_file.resolve())
    run_app("bench.ceiling:from_env", from_env, workers=args.workers, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
