"""Request bodies are capped while read, against ``regional-menus serve`` on real sockets: 50 MB of form is refused
with 413 without ever being held in the server's memory. The 64 KiB caps, in each endpoint's own error form, are
tests/api/test_request_body_limits.py."""

from __future__ import annotations

import contextlib
import select
import socket
from pathlib import Path

from tests.support.live import live_service

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
