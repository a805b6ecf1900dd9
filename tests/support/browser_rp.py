"""A tiny relying party for the browser tests: a real HTTP server on a free loopback port.

Its home page has a "Sign in" link to the provider's authorization endpoint (code flow,
PKCE S256, ``state`` and ``nonce``, and the ``prompt`` given in the home page's own query);
``/callback`` and ``/signed-out`` record the query they are sent and show a small page.
The test redeems the code itself, with what ``RelyingParty.requests`` remembers.
"""

from __future__ import annotations

import base64
import hashlib
import html
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

SCOPE = "openid profile email"


@dataclass(frozen=True)
class AuthorizationRequest:
    """What the relying party must remember from the authorization request until the callback."""

    url: str
    state: str
    nonce: str
    code_verifier: str


@dataclass
class RelyingParty:
    url: str  # http://127.0.0.1:<port>, no trailing slash
    issuer: str = ""
    client_id: str = ""  # known once the client is registered, after the server has its port
    requests: dict[str, AuthorizationRequest] = field(default_factory=dict)  # by state
    callbacks: list[dict[str, str]] = field(default_factory=list)  # the query of each /callback
    sign_outs: list[dict[str, str]] = field(default_factory=list)  # the query of each /signed-out
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def redirect_uri(self) -> str:
        return f"{self.url}/callback"

    @property
    def post_logout_redirect_uri(self) -> str:
        return f"{self.url}/signed-out"

    def authorization_request(self, prompt: str | None, scope: str = SCOPE) -> AuthorizationRequest:
        state, nonce, verifier = secrets.token_urlsafe(16), secrets.token_urlsafe(16), secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        params = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": self.redirect_uri,
            "scope": scope,
            "state": state,
            "nonce": nonce,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
        if prompt:
            params["prompt"] = prompt
        request = AuthorizationRequest(f"{self.issuer}/oauth2/authorize?{urlencode(params)}", state, nonce, verifier)
        with self.lock:
            self.requests[state] = request
        return request


def _page(title: str, body: str) -> bytes:
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)} · Test RP</title></head>"
        f"<body><main><h1>{html.escape(title)}</h1>{body}</main></body></html>"
    ).encode()


def _query(path: str) -> dict[str, str]:
    return {name: values[-1] for name, values in parse_qs(urlsplit(path).query, keep_blank_values=True).items()}


def _handler(rp: RelyingParty) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the name http.server dispatches to)
            route, query = urlsplit(self.path).path, _query(self.path)
            if route == "/":
                request = rp.authorization_request(query.get("prompt"))
                self._send(200, _page("Test RP", f'<p><a href="{html.escape(request.url)}">Sign in</a></p>'))
            elif route == "/callback":
                with rp.lock:
                    rp.callbacks.append(query)
                outcome = "Signed in" if "code" in query else "Sign-in failed"
                self._send(200, _page(outcome, f"<p>state: <code>{html.escape(query.get('state', ''))}</code></p>"))
            elif route == "/signed-out":
                with rp.lock:
                    rp.sign_outs.append(query)
                state = html.escape(query.get("state", ""))
                self._send(200, _page("Signed out", f"<p>state: <code>{state}</code></p>"))
            else:
                self._send(404, _page("Not found", ""))

        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base class's name)
            pass

    return Handler


@contextmanager
def relying_party() -> Iterator[RelyingParty]:
    """Serve a relying party on a free 127.0.0.1 port until the block ends."""
    rp = RelyingParty(url="")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(rp))
    server.daemon_threads = True
    rp.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="test-relying-party", daemon=True)
    thread.start()
    try:
        yield rp
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
