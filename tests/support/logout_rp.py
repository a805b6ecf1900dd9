"""A relying party's back-channel logout endpoint on loopback, and the checks a relying party makes of each logout
token it receives (OpenID Connect Back-Channel Logout 1.0 §2.6), with PyJWT against the provider's JWKS."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

import jwt
from starlette.testclient import TestClient

from tests.support.live import free_port
from tests.support.token_flows import ISSUER, Registered

EVENT = "http://schemas.openid.net/event/backchannel-logout"


class RelyingParty:
    """A relying party's back-channel logout endpoint on 127.0.0.1:``port``: it keeps each POST's form and answers
    ``statuses`` in turn (then 200). Started only when told (``start``): until then the port refuses. ``asleep``:
    an endpoint that takes each POST and answers none (until ``stop``)."""

    def __init__(self, port: int | None = None, statuses: tuple[int, ...] = (), *, asleep: bool = False) -> None:
        self.port = port or free_port()
        self.received: list[tuple[str, str, dict[str, list[str]]]] = []  # (path, content type, form)
        self.hosts: list[str] = []  # the Host header of each POST answered
        self.taken = 0  # POSTs whose request was read (answered or not)
        self._asleep = threading.Event() if asleep else None
        self._statuses = list(statuses)
        self._arrived = threading.Condition()
        self._server: ThreadingHTTPServer | None = None

    def uri(self, path: str = "/backchannel-logout") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def start(self) -> None:
        party = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802  # http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode("ascii")
                with party._arrived:
                    party.taken += 1
                    party._arrived.notify_all()
                if party._asleep is not None:
                    party._asleep.wait(30)  # never answers while the test runs
                    return
                with party._arrived:
                    status = party._statuses.pop(0) if party._statuses else 200
                    if status == 200:
                        party.received.append((self.path, self.headers.get("Content-Type", ""), parse_qs(body)))
                        party.hosts.append(self.headers.get("Host", ""))
                    party._arrived.notify_all()
                self.send_response(status)
                self.send_header("Cache-Control", "no-store")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._asleep is not None:
            self._asleep.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def wait_taken(self, count: int, timeout: float = 10) -> None:
        """Until ``count`` POSTs have been read, answered or not (fails after ``timeout`` seconds)."""
        with self._arrived:
            self._arrived.wait_for(lambda: self.taken >= count, timeout)
        assert self.taken >= count, f"{self.taken} of {count} POSTs arrived"

    def wait_for(self, count: int, timeout: float = 10) -> list[tuple[str, str, dict[str, list[str]]]]:
        """The POSTs answered 200, once ``count`` have arrived (fails after ``timeout`` seconds)."""
        with self._arrived:
            self._arrived.wait_for(lambda: len(self.received) >= count, timeout)
        assert len(self.received) >= count, f"{len(self.received)} of {count} logout tokens arrived"
        return list(self.received)


def verified(browser: TestClient, token: str, client: Registered) -> dict[str, Any]:
    """§2.6: the logout token checked as a relying party must, against the provider's JWKS."""
    header = jwt.get_unverified_header(token)
    assert header["typ"] == "logout+jwt" and header["alg"] == "RS256"
    jwks = jwt.PyJWKSet.from_dict(browser.get("/jwks").json())
    key = next(k for k in jwks.keys if k.key_id == header["kid"])
    claims: dict[str, Any] = jwt.decode(
        token,
        key=key,
        algorithms=["RS256"],
        audience=client.id,
        issuer=ISSUER,
        options={"require": ["iss", "aud", "iat", "exp", "jti", "events"]},
    )
    assert claims["events"] == {EVENT: {}} and "nonce" not in claims
    assert 0 < claims["exp"] - claims["iat"] <= 120
    return claims


def the_token(post: tuple[str, str, dict[str, list[str]]]) -> str:
    path, content_type, form = post
    assert content_type == "application/x-www-form-urlencoded" and list(form) == ["logout_token"]
    return form["logout_token"][0]
