"""Browser and native apps for the end-to-end tests of public clients.

``bundled_spa``: the single-page app of ``tests/support/spa/`` (oidc-client-ts, from npm) bundled with
esbuild into a temporary folder (never committed), and ``serve_spa`` serving it from an origin of its own
on loopback, with its configuration (issuer, client id) in ``/config.js``. ``loopback_listener``: the
redirect listener of a native app (RFC 8252 §7.3: a loopback IP literal, a port chosen when it starts).
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from tests.support.live import ROOT

SPA_SOURCE = ROOT / "tests" / "support" / "spa"
ESBUILD = ROOT / "node_modules" / ".bin" / "esbuild"
SPA_ROUTES = ("/", "/callback", "/signed-out")  # each shows index.html; app.js reads the path


@dataclass(frozen=True)
class Bundle:
    folder: Path
    seconds: float  # how long esbuild took


def bundled_spa(folder: Path) -> Bundle:
    """``app.js`` bundled for the browser (one file, oidc-client-ts inside) beside ``index.html`` in ``folder``."""
    if not ESBUILD.exists():
        raise RuntimeError(f"{ESBUILD} is missing: run `npm ci` at the project root")
    started = time.monotonic()
    subprocess.run(
        [str(ESBUILD), str(SPA_SOURCE / "app.js"), "--bundle", "--format=iife", "--target=chrome110",
         f"--outfile={folder / 'app.js'}", "--log-level=warning"],
        check=True, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    seconds = time.monotonic() - started
    (folder / "index.html").write_bytes((SPA_SOURCE / "index.html").read_bytes())
    return Bundle(folder, seconds)


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler of a test's tiny server, which logs nothing."""

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def loopback_server(handler: type[BaseHTTPRequestHandler]) -> Iterator[ThreadingHTTPServer]:
    """``handler`` served on a free loopback port, in a thread, until the block ends."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class ServedApp:
    origin: str  # http://127.0.0.1:<port>
    requests: list[str] = field(default_factory=list)  # "GET /path" of each request it answered


@contextmanager
def serve_spa(bundle: Bundle, config: dict[str, str]) -> Iterator[ServedApp]:
    """The bundled app on a free loopback port, ``config`` given to it as ``window.SPA_CONFIG`` (read at each
    request, so that a value known only once the app has its origin, its client id, can be filled in later)."""
    files = {"/app.js": ((bundle.folder / "app.js").read_bytes(), "text/javascript")}
    index = ((bundle.folder / "index.html").read_bytes(), "text/html; charset=utf-8")

    class Handler(QuietHandler):
        def do_GET(self) -> None:  # noqa: N802 (the name http.server calls)
            path = urlsplit(self.path).path
            app.requests.append(f"GET {path}")
            files["/config.js"] = (f"window.SPA_CONFIG = {json.dumps(config)};".encode(), "text/javascript")
            body, media_type = files.get(path) or (index if path in SPA_ROUTES else (b"not found", "text/plain"))
            self.send_response(200 if path in files or path in SPA_ROUTES else 404)
            self.send_header("Content-Type", media_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

    with loopback_server(Handler) as server:
        app = ServedApp(f"http://127.0.0.1:{server.server_address[1]}")
        yield app


@dataclass
class Listener:
    redirect_uri: str  # http://127.0.0.1:<port>/callback
    received: list[dict[str, str]] = field(default_factory=list)  # the query of each redirect
    arrived: threading.Event = field(default_factory=threading.Event)


@contextmanager
def loopback_listener() -> Iterator[Listener]:
    """A native app's redirect listener on a port the system picks (RFC 8252 §7.3), as its own tiny server."""

    class Handler(QuietHandler):
        def do_GET(self) -> None:  # noqa: N802
            if urlsplit(self.path).path != "/callback":  # the browser's /favicon.ico
                self.send_error(404)
                return
            listener.received.append(dict(parse_qsl(urlsplit(self.path).query)))
            body = b"<!doctype html><html lang='en'><title>Done</title><h1>You may close this window</h1></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            listener.arrived.set()

    with loopback_server(Handler) as server:
        listener = Listener(f"http://127.0.0.1:{server.server_address[1]}/callback")
        yield listener
