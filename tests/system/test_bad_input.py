"""Bad input at the browser-facing endpoints that no HTTP library sends, on raw sockets against
``regional-menus serve``: raw non-UTF-8 bytes in the request line and the body, a CR LF splitting the request line.
The answer is never a 5xx, never a header the input made up, never markup. The rest of the bad input, through the
ASGI app in process, is tests/api/test_bad_input.py."""

from __future__ import annotations

import socket
from pathlib import Path
from urllib.parse import urlsplit

from tests.support.live import live_service

RAW_REQUESTS = [
    b"GET /oauth2/authorize?client_id=\xff\xfe&redirect_uri=\xc0\xaf&state=\xe2\x82 HTTP/1.1\r\nHost: h\r\n\r\n",
    b"GET /oauth2/authorize?redirect_uri=https://app.example/callback\r\nX-Injected: 1 HTTP/1.1\r\nHost: h\r\n\r\n",
    b"GET /sign-in?interaction=\xff HTTP/1.1\r\nHost: h\r\n\r\n",
    b"GET /oauth2/end-session?state=\xff%0d%0aX-Injected:%201&post_logout_redirect_uri=\x00 HTTP/1.1\r\n"
    b"Host: h\r\n\r\n",
    b"GET /\xff\xfe HTTP/1.1\r\nHost: h\r\n\r\n",
    b"POST /sign-in HTTP/1.1\r\nHost: h\r\nContent-Type: application/x-www-form-urlencoded\r\n"
    b"Content-Length: 6\r\n\r\n\xff\xfe\xc0\xaf\xe2\x82",
    b"POST /sign-in HTTP/1.1\r\nHost: h\r\nContent-Type: application/x-www-form-urlencoded; charset=\xff\r\n"
    b"Content-Length: 3\r\n\r\na=\xff",
]


def raw_exchange(url: str, request: bytes) -> bytes:
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as connection:
        connection.sendall(request.replace(b"HTTP/1.1\r\nHost: h\r\n", b"HTTP/1.1\r\nHost: h\r\nConnection: close\r\n"))
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    return answer


def test_raw_non_utf8_bytes_in_the_request_line_and_body_get_no_5xx(tmp_path: Path) -> None:
    """What a TestClient cannot send: raw bytes in the request line, a CR LF splitting it, a raw body."""
    with live_service(tmp_path) as service:
        answers = [raw_exchange(service.url, request) for request in RAW_REQUESTS]
    for request, answer in zip(RAW_REQUESTS, answers, strict=True):
        head = answer.split(b"\r\n\r\n", 1)[0]
        status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/1.1 ") else None
        assert status is not None and status < 500, (request, answer[:500])
        assert b"\r\nx-injected" not in head.lower(), (request, head)
        assert b"<script" not in answer.lower(), (request, answer[:500])
