"""Bounded request heads (service/server/bounded_http.py), against ``regional-menus serve`` on real sockets.

A header line over 16 KiB, a request line or a head over 64 KiB, or a head with more than 100 header lines is
refused before any app sees it (414 or 431, RFC 6585 §5, and the connection is closed); a connection that does not
deliver a whole head within ``MENUS_HEAD_TIMEOUT`` seconds is closed, while other clients are answered as usual.
"""

from __future__ import annotations

import socket
import time
import urllib.request
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from tests.support.defaults import DEFAULTS, HEAD_FIELDS_LIMIT, HEAD_LIMIT, HEAD_LINE_LIMIT
from tests.support.live import LiveService, live_service

HEAD_TIMEOUT = 2  # seconds, for the live server of these tests (MENUS_HEAD_TIMEOUT)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    with live_service(tmp_path_factory.mktemp("heads"), {"MENUS_HEAD_TIMEOUT": str(HEAD_TIMEOUT)}) as service:
        yield service


@pytest.fixture(scope="module")
def live_workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    env = {"MENUS_HEAD_TIMEOUT": str(HEAD_TIMEOUT)}
    with live_service(tmp_path_factory.mktemp("heads-workers"), env, args=("--workers", "1")) as service:
        yield service


def connect(service: LiveService) -> socket.socket:
    address = urlsplit(service.url)
    return socket.create_connection((address.hostname, address.port), timeout=10)


def exchange(service: LiveService, head: bytes) -> bytes:
    """Send ``head`` and read until the server closes: its answer, or b"" when it closed (or reset) without one."""
    received = b""
    with connect(service) as sock:
        try:
            sock.sendall(head)
            while chunk := sock.recv(65536):
                received += chunk
        except (ConnectionResetError, BrokenPipeError):
            pass  # closed while we were still sending: refused all the same
    return received


def status_of(answer: bytes) -> int | None:
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else None


def head_with(*header_lines: bytes, target: bytes = b"/healthz") -> bytes:
    return b"GET " + target + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + b"".join(header_lines) + b"\r\n"


def test_a_header_line_just_under_the_line_bound_is_answered(live: LiveService) -> None:
    line = b"X-Big: " + b"a" * (HEAD_LINE_LIMIT - 16) + b"\r\n"
    assert status_of(exchange(live, head_with(line))) == 200


@pytest.mark.parametrize("size", [HEAD_LINE_LIMIT + 1, 8 * 1024 * 1024], ids=["just-over", "8-mib"])
def test_a_header_line_over_the_line_bound_is_refused_with_431(live: LiveService, size: int) -> None:
    answer = exchange(live, head_with(b"X-Big: " + b"a" * size + b"\r\n"))
    assert status_of(answer) in (431, None)  # a 431, or closed before we finished sending 8 MiB


def test_a_request_line_over_the_head_bound_is_refused_with_414(live: LiveService) -> None:
    answer = exchange(live, head_with(target=b"/v1/menus/dishes?q=" + b"a" * HEAD_LIMIT))
    assert status_of(answer) == 414


def test_a_request_line_longer_than_a_header_line_reaches_the_api_and_its_own_400(live: LiveService) -> None:
    # The contracts' own parameter bounds allow URLs over 16 KiB (authorize's state, nonce, redirect_uri):
    # the request line may take the head's bound, and a parameter over its bound is the operation's 400.
    answer = exchange(live, head_with(target=b"/v1/menus/dishes?q=" + b"a" * (HEAD_LINE_LIMIT + 1)))
    assert status_of(answer) == 401  # the menus API answered (its key check comes before the parameters)


def test_a_head_over_the_head_bound_is_refused_with_431_whatever_its_line_lengths(live: LiveService) -> None:
    line_size = HEAD_LINE_LIMIT // 2
    lines = [b"X-Part-%d: " % n + b"a" * line_size + b"\r\n" for n in range(HEAD_LIMIT // line_size + 1)]
    assert status_of(exchange(live, head_with(*lines))) == 431


def test_more_header_lines_than_the_bound_are_refused_with_431(live: LiveService) -> None:
    lines = [b"X-N%d: 1\r\n" % n for n in range(HEAD_FIELDS_LIMIT)]  # with Host and Connection: over the bound
    assert status_of(exchange(live, head_with(*lines))) == 431
    assert status_of(exchange(live, head_with(*lines[:-2]))) == 200  # exactly at the bound: answered


def test_a_refusal_is_a_server_answer_with_no_app_behind_it(live: LiveService) -> None:
    answer = exchange(live, head_with(b"X-Big: " + b"a" * (HEAD_LINE_LIMIT + 1) + b"\r\n"))
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b"connection: close" in head.lower() and body == b"Request Header Fields Too Large\n"


def test_the_bounds_hold_under_gunicorn_workers_too(live_workers: LiveService) -> None:
    assert status_of(exchange(live_workers, head_with(b"X-Big: " + b"a" * (HEAD_LINE_LIMIT + 1) + b"\r\n"))) == 431
    with connect(live_workers) as silent:
        started = time.monotonic()
        assert silent.recv(1) == b""
        assert time.monotonic() - started < HEAD_TIMEOUT + 2


def closed_within(sock: socket.socket, seconds: float) -> float | None:
    """Seconds until the server closed ``sock`` (reading), or None if it is still open after ``seconds``.

    Whatever the server still sends first (the rest of an answer that came in two segments) is read and passed
    over: only the end of the stream counts."""
    started = time.monotonic()
    while (left := started + seconds - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            if not sock.recv(65536):
                break
        except TimeoutError:
            return None
        except ConnectionResetError:
            break
    else:
        return None
    return time.monotonic() - started


def test_a_connection_that_sends_nothing_is_closed_after_the_head_timeout(live: LiveService) -> None:
    with connect(live) as silent:
        took = closed_within(silent, HEAD_TIMEOUT + 3)
    assert took is not None and HEAD_TIMEOUT - 0.5 < took < HEAD_TIMEOUT + 2


def test_slow_heads_are_closed_after_the_head_timeout_while_others_are_answered(live: LiveService) -> None:
    """Slowloris: fifty connections each trickle a head one line every half second, for ever."""
    slow = [connect(live) for _ in range(50)]
    try:
        started = time.monotonic()
        for sock in slow:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        open_ = list(slow)
        while open_ and time.monotonic() - started < HEAD_TIMEOUT + 3:
            with urllib.request.urlopen(f"{live.url}/healthz", timeout=2) as answer:  # others: answered meanwhile
                assert answer.status == 200
            still = []
            for n, sock in enumerate(open_):
                try:
                    sock.sendall(b"X-Slow-%d: 1\r\n" % n)
                    still.append(sock)
                except (BrokenPipeError, ConnectionResetError):
                    pass
            open_ = still
            time.sleep(0.5)
        elapsed = time.monotonic() - started
        assert elapsed > HEAD_TIMEOUT - 0.5  # none was closed before its time
        assert all(closed_within(sock, 1) is not None for sock in slow)  # and every one after it
    finally:
        for sock in slow:
            sock.close()


def test_a_kept_alive_connection_meets_the_head_bound_on_its_next_request(live: LiveService) -> None:
    with connect(live) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")  # and then nothing more
        took = closed_within(sock, HEAD_TIMEOUT + 3)
    assert took is not None and took < HEAD_TIMEOUT + 2


def test_an_idle_kept_alive_connection_is_closed_after_the_keep_alive_timeout(live: LiveService) -> None:
    with connect(live) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        took = closed_within(sock, DEFAULTS.keep_alive + 3)
    assert took is not None and DEFAULTS.keep_alive - 0.5 < took < DEFAULTS.keep_alive + 2


def test_pipelined_requests_are_answered_in_order(live: LiveService) -> None:
    one = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    answer = exchange(live, one + one + b"GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert answer.count(b"HTTP/1.1 200") == 3


@pytest.mark.parametrize("server", ["live", "live_workers"])
def test_a_websocket_handshake_is_answered_as_plain_http_never_switched(
    server: str, request: pytest.FixtureRequest
) -> None:
    """The service has no WebSocket route, and its uvicorn loads no WebSocket protocol (service/server/runner.py)."""
    service: LiveService = request.getfixturevalue(server)
    handshake = head_with(
        b"Upgrade: websocket\r\n", b"Sec-WebSocket-Version: 13\r\n", b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    ).replace(b"Connection: close", b"Connection: Upgrade, close")
    assert status_of(exchange(service, handshake)) == 200
