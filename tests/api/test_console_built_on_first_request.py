"""The developer console's app is built when its first request arrives, not at start-up (service/app.py):
a node that serves only the APIs never builds it. Its Jinja templates too are loaded on the first page."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from starlette.responses import PlainTextResponse
from starlette.testclient import TestClient
from starlette.types import ASGIApp

from service.app import BuiltOnFirstRequest
from service.console_api import rendering
from service.settings import Settings
from tests.support.apps import make_app


def counted(builds: list[int]) -> Callable[[], ASGIApp]:
    """A build that notes each time it runs in ``builds``."""

    def build() -> ASGIApp:
        builds.append(1)
        return PlainTextResponse("built")

    return build


def test_the_app_is_built_once_on_its_first_request_and_not_before() -> None:
    builds: list[int] = []
    lazy = BuiltOnFirstRequest(counted(builds))
    assert builds == [] and not lazy.built
    client = TestClient(lazy)  # no lifespan: the console's requests are all this wrapper sees
    assert client.get("/").text == "built"
    assert client.get("/").text == "built"
    assert builds == [1] and lazy.built


def test_two_first_requests_at_once_build_it_once() -> None:
    builds: list[int] = []
    lazy = BuiltOnFirstRequest(counted(builds))

    async def request() -> None:
        scope = {"type": "http", "method": "GET", "path": "/", "headers": [], "query_string": b""}

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(_: Any) -> None:
            return None

        await lazy(scope, receive, send)

    async def both() -> None:
        await asyncio.gather(request(), request())

    asyncio.run(both())
    assert builds == [1]


def test_the_console_answers_its_first_request(app: Any) -> None:
    with TestClient(app, follow_redirects=False) as client:
        welcome = client.get("/console/")
    assert welcome.status_code == 200
    assert 'href="/console/sign-in?prompt=create">Create an account</a>' in welcome.text


def test_the_console_templates_are_loaded_on_its_first_page_not_at_start_up(
    settings: Settings, engine: Any, catalog: Any, clock: Any
) -> None:
    rendering._environment.cache_clear()
    app = make_app(settings, catalog=catalog, clock=clock)
    assert rendering._environment.cache_info().currsize == 0
    with TestClient(app) as client:
        assert client.get("/console/").status_code == 200
    assert rendering._environment.cache_info().currsize == 1
