"""Request bodies are capped while read: over 64 KiB is a 413 in each endpoint's own error form, and 50 MB
is refused without ever being held in memory."""

from __future__ import annotations

import contextlib
import select
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.organizations import Organization
from tests.support import token_flows
from tests.support.live import live_service

# Request bodies: capped while read, 413 in each endpoint's own form


BIG_FORM = b"grant_type=client_credentials&pad=" + b"a" * (64 * 1024)


def chunks_of(body: bytes, size: int = 8192) -> Iterator[bytes]:
    for start in range(0, len(body), size):
        yield body[start : start + size]


@pytest.mark.parametrize("path", ["/oauth2/token", "/oauth2/introspect", "/oauth2/revoke"])
def test_form_over_64_kib_at_a_client_endpoint_is_413_oauth_json(http: TestClient, path: str) -> None:
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    for response in (
        http.post(path, content=BIG_FORM, headers=form),  # Content-Length over the cap: refused at once
        http.post(path, content=chunks_of(BIG_FORM), headers=form),  # chunked: cut once the cap is crossed
    ):
        assert response.status_code == 413, response.text
        assert response.json()["error"] == "invalid_request"
        assert response.headers["cache-control"] == "no-store"
        assert response.headers["connection"] == "close"


@pytest.mark.parametrize("path", ["/sign-in", "/sign-up", "/consent", "/oauth2/authorize", "/oauth2/end-session"])
def test_form_over_64_kib_at_a_page_is_a_413_error_page(http: TestClient, path: str) -> None:
    response = http.post(path, content=BIG_FORM, headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert response.status_code == 413
    assert response.headers["content-type"].startswith("text/html")
    assert "Request too large" in response.text
    assert response.headers["x-frame-options"] == "DENY"


def test_form_within_64_kib_sent_chunked_is_read_as_usual(http: TestClient, engine: Engine, acme: Organization) -> None:
    reporter = token_flows.register(engine, acme, "Reporter", grants=["client_credentials"], scopes=["members:read"])
    body = b"grant_type=client_credentials&pad=" + b"a" * 30000
    response = http.post(
        "/oauth2/token",
        content=chunks_of(body),
        headers={**reporter.basic, "Content-Type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 200, response.text


def test_a_console_form_over_its_cap_is_a_413_page_chunked_or_not(http: TestClient) -> None:
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    for content in (BIG_FORM, chunks_of(BIG_FORM)):
        response = http.post("/console/keys", content=content, headers=form)
        assert response.status_code == 413, response.text
        assert response.headers["content-type"].startswith("text/html")
        assert "Request too large" in response.text
        assert response.headers["connection"] == "close"


@pytest.mark.parametrize("path", ["/v1/menus/regions", "/healthz"])
def test_a_body_sent_to_the_menus_or_operations_api_is_a_413_problem(http: TestClient, path: str) -> None:
    for content in (b"x" * 10, chunks_of(b"x" * 10)):
        response = http.request("GET", path, content=content)
        assert response.status_code == 413, response.text
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json()["code"] == "content_too_large"


FIFTY_MB = 50 * 1024 * 1024


def resident_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")))


def send_fifty_mb(port: int, path: str, *, chunked: bool) -> bytes:
    """Send 50 MB of form fields (declared up front, or chunked), stopping once the server has answered; its
    answer."""
    framing = b"Transfer-Encoding: chunked" if chunked else f"Content-Length: {FIFTY_MB}".encode()
    head = b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n%s\r\n\r\n"
    piece = b"&p=" + b"a" * 16381  # many fields, each well under the form parser's 1 MiB limit
    frame = b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        connection.sendall(head % (path.encode(), framing) + (b"4\r\npad=\r\n" if chunked else b"pad="))
        sent = 0
        while sent < FIFTY_MB and not select.select([connection], [], [], 0)[0]:
            try:
                connection.sendall(frame)
            except OSError:  # the server answered and closed: the rest is never read
                break
            sent += len(piece)
        answer = b""
        with contextlib.suppress(OSError):
            while chunk := connection.recv(65536):
                answer += chunk
    return answer


def test_fifty_megabytes_of_form_are_refused_with_413_and_never_held_in_memory(tmp_path: Path) -> None:
    with live_service(tmp_path) as service:
        assert service.process is not None
        port = int(service.url.rsplit(":", 1)[1])
        before = resident_kib(service.process.pid)
        answers = {
            (path, chunked): send_fifty_mb(port, path, chunked=chunked)
            for path in ("/oauth2/token", "/sign-in", "/oauth2/revoke")
            for chunked in (False, True)
        }
        grown = resident_kib(service.process.pid) - before
    for (path, _), answer in answers.items():
        assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
        expected = b"text/html" if path == "/sign-in" else b"application/json"
        assert expected in answer.split(b"\r\n\r\n", 1)[0]
    print(f"\nresident memory of the server: {before} KiB before, grown by {grown} KiB after six 50 MB bodies")
    assert grown < 8 * 1024, f"the server grew by {grown} KiB"
