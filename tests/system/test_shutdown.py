"""Graceful shutdown (docs/operations.md, Stopping): SIGTERM stops accepting, finishes the requests in flight,
runs the lifespan shutdown (the purge task awaited, the engine disposed) and exits 0.

Two kinds of requests are in flight when the signal arrives. Held requests are deterministic: sign-ins (an
Argon2 verification each) and token requests whose headers and all but the last byte of the body were sent
a moment before the signal, so the server has accepted them and is reading them; their last byte goes out after
the server has stopped listening, and each must still get its complete answer. (A moment: a body that stops
coming is answered 408 after a few seconds, service/web/body_arrival.py.) Around them, client threads keep
sending menus reads, sign-ins, token requests, introspections and directory reads, each on a new connection,
until they are refused: none of those may fail or get a 5xx; a connection refused, or closed before the
server read its request, is allowed only after the signal (see ``tests.support.request_outcomes``).
"""

from __future__ import annotations

import asyncio
import http.client
import signal
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urljoin, urlsplit

import pytest
import requests
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from service.app import Dispatcher
from service.ops.periodic import BackgroundJobs, PeriodicJob
from tests.support.live import LiveService, live_service
from tests.support.request_outcomes import CLOSED_UNREAD, REFUSED, Ledger
from tests.support.traffic import PASSWORD, TIMEOUT, Tenant, application_token, provision, sign_in_page

HELD_SIGN_INS = 4
HELD_TOKEN_REQUESTS = 2
LOAD_THREADS = 4
SIGN_INS_PER_THREAD = 6  # sign-in pages opened before the load starts; each thread posts them in turn
REQUESTS_BEFORE_SIGNAL = 40  # completed load requests (all threads) before SIGTERM


@dataclass
class Held:
    """A request sent whole but for its last byte."""

    kind: str
    connection: http.client.HTTPConnection
    rest: bytes
    expected: int


@dataclass
class Prepared:
    """A POST ready to be held: made before the load (a sign-in's page is fetched then), sent just before the signal."""

    kind: str
    path: str
    body: bytes
    headers: dict[str, str]
    expected: int


def hold(url: str, request: Prepared) -> Held:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=TIMEOUT)
    connection.putrequest("POST", request.path)
    for name, value in {**request.headers, "Content-Length": str(len(request.body))}.items():
        connection.putheader(name, value)
    connection.endheaders()
    connection.send(request.body[:-1])
    return Held(request.kind, connection, request.body[-1:], request.expected)


def held_sign_in(tenant: Tenant) -> Prepared:
    browser, page, _ = sign_in_page(tenant)
    body = urlencode({**page.form.fields, "email": tenant.email, "password": PASSWORD}).encode()
    cookies = "; ".join(f"{cookie.name}={cookie.value}" for cookie in browser.http.cookies)
    browser.http.close()
    path = urlsplit(urljoin(page.url, page.form.action)).path
    headers = {"Content-Type": "application/x-www-form-urlencoded", "Cookie": cookies}
    return Prepared("sign-in", path, body, headers, expected=302)


def held_token_request(tenant: Tenant) -> Prepared:
    body = urlencode({"grant_type": "client_credentials", "scope": "members:read"}).encode()
    credentials = requests.auth._basic_auth_str(*tenant.basic)
    headers = {"Content-Type": "application/x-www-form-urlencoded", "Authorization": credentials}
    return Prepared("token", "/oauth2/token", body, headers, expected=200)


def listening(url: str) -> bool:
    parts = urlsplit(url)
    try:
        socket.create_connection((parts.hostname, parts.port), timeout=5).close()
    except ConnectionRefusedError:
        return False
    return True


def client_thread(tenant: Tenant, ledger: Ledger, stop: threading.Event) -> Callable[[], None]:
    """A client that cycles through the service's kinds of request until a connection is refused."""
    pages = [sign_in_page(tenant) for _ in range(SIGN_INS_PER_THREAD)]
    app_token = application_token(tenant)
    menus = {"Authorization": f"Bearer {tenant.api_key}"}
    bearer = {"Authorization": f"Bearer {app_token}"}

    def post_sign_in() -> requests.Response:
        browser, page, _ = pages.pop()
        action = urljoin(page.url, page.form.action)
        data = {**page.form.fields, "email": tenant.email, "password": PASSWORD}
        cookies = {cookie.name: cookie.value for cookie in browser.http.cookies}
        browser.http.close()
        return requests.post(action, data=data, cookies=cookies, allow_redirects=False, timeout=TIMEOUT)

    calls: list[tuple[str, Callable[[], requests.Response]]] = [
        ("menus", lambda: requests.get(f"{tenant.url}/v1/menus/dishes?course=main&limit=5", headers=menus,
                                       timeout=TIMEOUT)),
        ("token", lambda: requests.post(f"{tenant.url}/oauth2/token", auth=tenant.basic, timeout=TIMEOUT,
                                        data={"grant_type": "client_credentials", "scope": "members:read"})),
        ("introspection", lambda: requests.post(f"{tenant.url}/oauth2/introspect", data={"token": app_token},
                                                auth=tenant.basic, timeout=TIMEOUT)),
        ("directory", lambda: requests.get(f"{tenant.url}/directory/members", headers=bearer, timeout=TIMEOUT)),
    ]  # fmt: skip

    def run() -> None:
        turn = 0
        while not stop.is_set() and turn < 10_000:
            kind, call = ("sign-in", post_sign_in) if pages and turn % 3 == 0 else calls[turn % len(calls)]
            turn += 1
            if ledger.record(kind, call) is None and ledger.snapshot()[-1].error == REFUSED:
                return

    return run


def drain(service: LiveService, tenant: Tenant) -> tuple[Ledger, list[tuple[Held, int]], float]:
    """Load, held requests, SIGTERM, the held requests finished; the ledger, each held request's status, when."""
    assert service.process is not None
    ledger, stop = Ledger(), threading.Event()
    runs = [client_thread(tenant, ledger, stop) for _ in range(LOAD_THREADS)]
    prepared = [held_sign_in(tenant) for _ in range(HELD_SIGN_INS)]
    prepared += [held_token_request(tenant) for _ in range(HELD_TOKEN_REQUESTS)]
    threads = [threading.Thread(target=run, daemon=True) for run in runs]
    for thread in threads:
        thread.start()
    try:
        deadline = time.monotonic() + 120
        while ledger.count() < REQUESTS_BEFORE_SIGNAL and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ledger.count() >= REQUESTS_BEFORE_SIGNAL, "the load did not get going"
        held = [hold(tenant.url, request) for request in prepared]
        sent = ledger.count()  # a few more load requests answered: the server has had turns to read the held heads
        while ledger.count() < sent + LOAD_THREADS and time.monotonic() < deadline:
            time.sleep(0.05)
        signalled = time.monotonic()
        service.process.send_signal(signal.SIGTERM)
        while listening(service.url) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not listening(service.url), "the server still accepts connections after SIGTERM"
        answers = []
        for request in held:
            request.connection.send(request.rest)
            response = request.connection.getresponse()
            response.read()  # the whole body, or IncompleteRead
            answers.append((request, response.status))
            request.connection.close()
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=TIMEOUT)
    return ledger, answers, signalled


@pytest.mark.parametrize("workers", [None, 2], ids=["uvicorn", "gunicorn-2-workers"])
def test_sigterm_finishes_accepted_requests_and_exits_zero(tmp_path: Path, workers: int | None) -> None:
    """No request the server accepted before SIGTERM goes unanswered; the lifespan shutdown runs (in every worker);
    exit status 0. With ``--workers`` gunicorn's master passes SIGTERM on and each worker drains the same way."""
    args = ("--workers", str(workers)) if workers else ()
    with live_service(tmp_path, args=args) as service:
        assert service.process is not None
        tenant = provision(service)
        ledger, answers, signalled = drain(service, tenant)
        status = service.process.wait(timeout=120)
    log = (tmp_path / "server.log").read_text()

    assert [(held.kind, code) for held, code in answers] == [(held.kind, held.expected) for held, _ in answers]
    outcomes = ledger.snapshot()
    failed = [o for o in outcomes if o.complete and o.status is not None and o.status >= 500]
    failed += [o for o in outcomes if not o.complete and o.error not in (REFUSED, CLOSED_UNREAD)]
    assert failed == [], failed
    early = [o for o in outcomes if not o.complete and o.ended < signalled]
    assert early == [], f"refused or dropped before the signal: {early}"
    assert all(o.status in (200, 302) for o in outcomes if o.complete), [o for o in outcomes if o.complete]
    assert status == 0, log[-3000:]
    assert log.count("Application shutdown complete.") == (workers or 1), log[-3000:]
    assert "Traceback" not in log and "ERROR" not in log and "was sent SIGKILL" not in log, log[-3000:]

    in_flight = [o for o in outcomes if o.started < signalled < o.ended and o.complete]
    server = f"gunicorn, {workers} workers" if workers else "uvicorn"
    print(
        f"\ndrain ({server}): {len(answers)} held requests and {len(in_flight)} load requests in flight at SIGTERM, "
        f"{len(failed)} failed; load: {sum(o.complete for o in outcomes)} answered "
        f"({dict(ledger.by(lambda o: o.complete))}), {sum(o.error == REFUSED for o in outcomes)} refused and "
        f"{sum(o.error == CLOSED_UNREAD for o in outcomes)} closed unread after the signal; exit status {status}"
    )


def test_lifespan_shutdown_waits_for_a_purge_under_way_then_disposes_the_engine(engine: Engine) -> None:
    """What "Application shutdown complete." in the server's log vouches for: the purge task was awaited (a purge
    under way finished first) and the database connections were closed, before the lifespan said it was done."""
    purging, release, events = threading.Event(), threading.Event(), []

    def purge() -> None:
        purging.set()
        assert release.wait(TIMEOUT)
        events.append("purge finished")

    engine.connect().close()  # a connection waits in the pool: disposing the engine closes it (the pool's "close")
    sa.event.listen(engine, "close", lambda *_: events.append("engine disposed"))
    dispatcher = Dispatcher(
        menus=None,  # type: ignore[arg-type]
        identity=None,  # type: ignore[arg-type]
        operations=None,  # type: ignore[arg-type]
        identity_path="",
        engine=engine,
        background=BackgroundJobs([PeriodicJob("purging", 3600, purge)]),
    )

    async def lifespan() -> list[str]:
        inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        sent: list[str] = []

        async def send(message: dict[str, Any]) -> None:
            sent.append(message["type"])
            events.append(message["type"])

        running = asyncio.create_task(dispatcher({"type": "lifespan"}, inbox.get, send))  # type: ignore[arg-type]
        await inbox.put({"type": "lifespan.startup"})
        await asyncio.to_thread(purging.wait, TIMEOUT)  # the start-up purge is under way
        await inbox.put({"type": "lifespan.shutdown"})
        await asyncio.sleep(0.2)
        assert "lifespan.shutdown.complete" not in sent, "shutdown did not wait for the purge under way"
        release.set()
        await asyncio.wait_for(running, TIMEOUT)
        return sent

    assert asyncio.run(lifespan()) == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert events == ["lifespan.startup.complete", "purge finished", "engine disposed", "lifespan.shutdown.complete"]
