"""A request body is awaited before the request is admitted, within a time bound (service/web/body_arrival.py):
a body still on the way holds no place in the worker's bound, one too slow is answered 408 in the operation's
own error form with ``Connection: close``, and a client that leaves in the middle of its body is recorded as 499,
never as a 5xx. Driven through the ASGI app with a ``receive`` the test scripts, so no body is ever late by
the clock: a stalled body is one whose next message never comes."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from prometheus_client import REGISTRY
from sqlalchemy.engine import Engine

from data.catalog import Catalog
from identity.api_keys.keys import ApiKeyStore
from service.app import Dispatcher
from service.settings import Settings
from tests.support.apps import make_app
from tests.support.clocks import MovableClock

FORM = b"application/x-www-form-urlencoded"
DECLARED = 10_000  # bytes a stalled body announces (under the caps of the identity and console forms)
GUARD = 10.0  # seconds a request may take in these tests before the test fails (a stalled body is never answered)
# The bound of these tests: a body that has sent nothing is cut after the grace (0.05 s), never by the total.
QUICK = {"body_rate_grace": 0.05, "body_timeout": 10}

Received = Callable[[], Awaitable[dict[str, Any]]]


def scope_of(method: str, path: str, headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1:8000"), *headers],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }


class Stalled:
    """A body whose first bytes come and whose rest never does; ``leave()``: the client goes away."""

    def __init__(self, first: bytes = b"g") -> None:
        self.first: bytes | None = first
        self.waiting = asyncio.Event()  # someone waits for the rest of the body
        self._gone = asyncio.Event()

    async def receive(self) -> dict[str, Any]:
        if self.first is not None:
            first, self.first = self.first, None
            return {"type": "http.request", "body": first, "more_body": True}
        self.waiting.set()
        await self._gone.wait()
        return {"type": "http.disconnect"}

    def leave(self) -> None:
        self._gone.set()


def leaving(first: bytes = b"grant_type=client_") -> Received:
    """A client that sends part of its body and goes away."""
    messages = [{"type": "http.request", "body": first, "more_body": True}, {"type": "http.disconnect"}]

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if len(messages) > 1 else messages[0]

    return receive


def whole(body: bytes) -> Received:
    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


class Answer:
    """What the app sent for one request."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    async def send(self, message: dict[str, Any]) -> None:
        self.messages.append(message)

    @property
    def status(self) -> int | None:
        return next((m["status"] for m in self.messages if m["type"] == "http.response.start"), None)

    @property
    def headers(self) -> dict[str, str]:
        start = next(m for m in self.messages if m["type"] == "http.response.start")
        return {k.decode().lower(): v.decode() for k, v in start["headers"]}

    @property
    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.messages if m["type"] == "http.response.body")


async def request(app: Dispatcher, method: str, path: str, receive: Received, **headers: str) -> Answer:
    answer = Answer()
    raw = [(name.replace("_", "-").encode(), value.encode()) for name, value in headers.items()]
    await asyncio.wait_for(app(scope_of(method, path, raw), receive, answer.send), GUARD)
    return answer


def form_post(length: int = DECLARED) -> dict[str, str]:
    return {"content_type": FORM.decode(), "content_length": str(length)}


def requests_counted(status: str) -> float:
    return sum(
        sample.value
        for metric in REGISTRY.collect()
        if metric.name == "regional_menus_http_requests"
        for sample in metric.samples
        if sample.name.endswith("_total") and sample.labels.get("status") == status
    )


@pytest.fixture
def quick(settings: Settings, engine: Engine, catalog: Catalog, clock: MovableClock) -> Dispatcher:
    """The app with a short grace, so that a stalled body is cut at once; and a bound of two requests in flight."""
    return make_app(settings.with_changes(max_in_flight=2, **QUICK), catalog=catalog, clock=clock)


def test_a_body_still_on_the_way_holds_no_place_in_the_workers_bound(
    settings: Settings, engine: Engine, catalog: Catalog, clock: MovableClock
) -> None:
    """Three stalled token forms on a worker that answers two requests at once: menus and token requests are still
    answered (each of the stalled ones would have held a place, and the third been refused 503)."""
    app = make_app(settings.with_changes(max_in_flight=2), catalog=catalog, clock=clock)
    key = ApiKeyStore(engine).create("probe")[1]

    async def drill() -> tuple[list[int | None], int, int]:
        stalls = [Stalled() for _ in range(3)]
        pending = [
            asyncio.ensure_future(request(app, "POST", "/oauth2/token", each.receive, **form_post())) for each in stalls
        ]
        await asyncio.wait_for(asyncio.gather(*(each.waiting.wait() for each in stalls)), GUARD)
        assert app.admission is not None
        held = app.admission.in_flight
        menus = await request(app, "GET", "/v1/menus/regions", whole(b""), authorization=f"Bearer {key}")
        token = await request(app, "POST", "/oauth2/token", whole(b"grant_type=client_credentials"), **form_post(29))
        for each in stalls:
            each.leave()
        await asyncio.gather(*pending)
        return [menus.status, token.status], held, app.admission.in_flight

    (menus_status, token_status), held, after = asyncio.run(drill())
    assert held == 0
    assert menus_status == 200
    assert token_status == 400  # answered (invalid_client: no credentials), not refused for load
    assert after == 0


@pytest.mark.parametrize(
    ("path", "media_type"),
    [
        ("/oauth2/token", "application/json"),
        ("/oauth2/introspect", "application/json"),
        ("/oauth2/revoke", "application/json"),
        ("/oauth2/userinfo", "application/json"),
        ("/sign-in", "text/html"),
        ("/console/keys", "text/html"),
    ],
)
def test_a_body_too_slow_is_answered_408_in_the_operations_form_and_the_connection_closed(
    quick: Dispatcher, path: str, media_type: str
) -> None:
    answer = asyncio.run(request(quick, "POST", path, Stalled().receive, **form_post()))
    assert answer.status == 408
    assert answer.headers["connection"] == "close"
    assert answer.headers["content-type"].startswith(media_type)
    if media_type == "application/json":
        assert json.loads(answer.body)["error"] == "invalid_request"
        assert answer.headers["cache-control"] == "no-store"
    else:
        assert b"Request timeout" in answer.body


def test_a_chunked_body_too_slow_is_answered_408_too(quick: Dispatcher) -> None:
    chunked = {"content_type": FORM.decode(), "transfer_encoding": "chunked"}
    answer = asyncio.run(request(quick, "POST", "/oauth2/token", Stalled().receive, **chunked))
    assert answer.status == 408 and answer.headers["connection"] == "close"


def test_a_body_that_keeps_the_minimum_rate_is_read_whole_and_answered(
    settings: Settings, engine: Engine, catalog: Catalog, clock: MovableClock
) -> None:
    """Bytes that come as fast as the loop can take them meet any bound: the form is answered by its endpoint."""
    app = make_app(settings, catalog=catalog, clock=clock)
    body = b"grant_type=client_credentials&pad=" + b"a" * 30_000
    pieces = [body[start : start + 1000] for start in range(0, len(body), 1000)]

    async def receive() -> dict[str, Any]:
        piece = pieces.pop(0)
        return {"type": "http.request", "body": piece, "more_body": bool(pieces)}

    answer = asyncio.run(request(app, "POST", "/oauth2/token", receive, **form_post(len(body))))
    assert answer.status == 400  # the endpoint's own answer to a form without client credentials (invalid_client)


@pytest.mark.parametrize("path", ["/oauth2/token", "/oauth2/introspect", "/sign-in", "/console/keys"])
def test_a_client_that_leaves_in_the_middle_of_its_body_is_recorded_499_never_a_5xx(
    app: Dispatcher, path: str, caplog: pytest.LogCaptureFixture
) -> None:
    errors_before, left_before = requests_counted("500"), requests_counted("499")
    with caplog.at_level(logging.INFO):
        answer = asyncio.run(request(app, "POST", path, leaving(), **form_post()))
    assert answer.messages == []  # nobody to answer
    assert requests_counted("500") == errors_before
    assert requests_counted("499") == left_before + 1
    assert all(record.levelno <= logging.INFO for record in caplog.records), [r.getMessage() for r in caplog.records]
    lines = [getattr(record, "fields", {}) for record in caplog.records if record.name == "regional_menus.access"]
    assert [line["status"] for line in lines] == [499]
