"""The app factory: one ASGI callable serving every API of the service.

``create_app(settings)`` opens the state database, loads and validates the
dataset, and joins the APIs with a small dispatcher that routes by path and
answers the ASGI lifespan itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlalchemy.engine import Engine
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from data.catalog import load_catalog
from service.api_keys import ApiKeyStore
from service.db import ensure_schema, make_engine, service_secret
from service.gate import send_problem
from service.menus import create_menus_app
from service.problems import nothing_here, to_problem
from service.ratelimit import RateLimiter
from service.settings import Settings

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass
class Dispatcher:
    """Routes ``/v1`` to the menus API and answers everything else with 404."""

    menus: ASGIApp
    engine: Engine

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        path = scope["path"]
        if _CONTROL.search(path):
            # A decoded control character (%0A…) is never a path of ours; Connexion would answer 500.
            await send_problem(send, nothing_here())
        elif path == "/v1" or path.startswith("/v1/"):
            await _guarded(self.menus, scope, receive, send)
        else:
            await send_problem(send, nothing_here())

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                self.engine.dispose()
                await send({"type": "lifespan.shutdown.complete"})
                return


async def _guarded(app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
    """Last line of defence: an error that escapes an app is answered as a problem, never a bare 500."""
    started = False

    async def tracking(message: Message) -> None:
        nonlocal started
        started = started or message["type"] == "http.response.start"
        await send(message)

    try:
        await app(scope, receive, tracking)
    except Exception as error:
        if started:
            raise
        await send_problem(send, to_problem(error))


def create_app(settings: Settings | None = None) -> Dispatcher:
    settings = settings or Settings.from_env()
    engine = make_engine(settings.database_url)
    ensure_schema(engine)
    catalog = load_catalog(cursor_key=service_secret(engine, "menus-cursor-key"))
    menus = create_menus_app(
        catalog=catalog,
        keys=ApiKeyStore(engine),
        limiter=RateLimiter(settings.rate_limit_per_minute),
        validate_responses=settings.validate_responses,
    )
    return Dispatcher(menus=menus, engine=engine)
