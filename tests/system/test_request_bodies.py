"""Stalled request bodies against ``regional-menus serve`` on real sockets (service/web/body_arrival.py): a body
still on the way holds no place in the worker's bound of requests in flight, and one that does not arrive within
``MENUS_BODY_TIMEOUT`` is answered 408 and its connection closed."""

from __future__ import annotations

import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from urllib.parse import urlsplit

import pytest

from tests.support.defaults import DEFAULTS
from tests.support.live import LiveService, live_service

BODY_TIMEOUT = 1  # seconds, for the live server of these tests (MENUS_BODY_TIMEOUT)
HEAD = (
    b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
    b"Content-Length: 60000\r\n\r\ng"
)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    with live_service(tmp_path_factory.mktemp("bodies"), {"MENUS_BODY_TIMEOUT": str(BODY_TIMEOUT)}) as service:
        yield service


def stall(service: LiveService, path: bytes = b"/oauth2/token") -> socket.socket:
    """A connection that sends a head announcing 60,000 bytes of form, then one byte of it, and no more."""
    address = urlsplit(service.url)
    sock = socket.create_connection((address.hostname, address.port), timeout=30)
    sock.sendall(HEAD % path)
    return sock


def until_closed(sock: socket.socket) -> bytes:
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


def status(url: str, headers: dict[str, str], data: bytes | None = None) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data, headers), timeout=10) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as error:
        return error.code


@pytest.mark.parametrize(("path", "media_type"), [(b"/oauth2/token", b"application/json"), (b"/sign-in", b"text/html")])
def test_a_stalled_body_is_answered_408_and_its_connection_closed_after_the_body_timeout(
    live: LiveService, path: bytes, media_type: bytes
) -> None:
    started = time.monotonic()
    with stall(live, path) as sock:
        answer = until_closed(sock)  # returns once the server closes
    took = time.monotonic() - started
    head = answer.split(b"\r\n\r\n", 1)[0].lower()
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    assert b"connection: close" in head and media_type in head
    assert BODY_TIMEOUT <= took < BODY_TIMEOUT + 3


def test_stalled_bodies_past_the_in_flight_bound_hold_no_place_while_others_are_answered(live: LiveService) -> None:
    """More stalled forms than the worker answers at once (``max_in_flight``): menus and token requests sent
    meanwhile are answered, not refused 503; then every stalled connection is answered 408 and closed."""
    key = live.api_key("probe")
    with ExitStack() as stack:
        stalled = [stack.enter_context(stall(live)) for _ in range(DEFAULTS.max_in_flight + 12)]
        menus = [status(live.url + "/v1/menus/regions", {"Authorization": f"Bearer {key}"}) for _ in range(3)]
        token = status(live.url + "/oauth2/token", {}, b"grant_type=client_credentials")
        answers = {until_closed(sock)[:12] for sock in stalled}
    assert menus == [200, 200, 200]
    assert token == 400  # answered by the endpoint (invalid_client, no credentials), not refused for load
    assert answers == {b"HTTP/1.1 408"}
