"""``python -m bench.logout_delay [--root DIR]``: how late a healthy client's logout token arrives when another
client's back-channel logout endpoint sleeps.

A drill, never a test: it prints figures and asserts nothing. It starts ``regional-menus serve`` (one uvicorn
process, SQLite, in a temporary folder) from the source tree ``--root`` (this checkout by default; an export of an
older commit to measure before a change), with two relying parties on loopback: one whose endpoint reads each POST
and never answers (``sleepy``), one that answers 200 at once (``healthy``). Then:

1. ``--queued`` (6) sign-ins with the sleepy client, each ended at ``/oauth2/end-session``: as many logout tokens
   queued for the sleeping endpoint;
2. one sign-in with the healthy client, ended the same way: the figure is the time from that end-session's answer
   to the healthy endpoint receiving its logout token (or "not within --give-up seconds");
3. ``--rounds`` (3) times, the figures listed with their median.

Before and after a change::

    git archive <commit> | tar -x -C /tmp/before
    python -m bench.logout_delay --root /tmp/before
    python -m bench.logout_delay
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import secrets
import statistics
import tempfile
import threading
import time
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import requests

from bench.stalled_bodies import Service, free_port

PASSWORD = "drill-password-1234"
REDIRECT_URI = "http://127.0.0.1:9/callback"  # never fetched: the code is read from the redirect


class Endpoint:
    """A back-channel logout endpoint on loopback: ``asleep`` reads each POST and never answers."""

    def __init__(self, *, asleep: bool) -> None:
        self.port = free_port()
        self.arrivals: list[float] = []  # time.monotonic() of each POST read
        self.wake = threading.Event()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802  # http.server's name
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                endpoint.arrivals.append(time.monotonic())
                if asleep:
                    endpoint.wake.wait(120)
                    return
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}/backchannel-logout"

    def stop(self) -> None:
        self.wake.set()
        self.server.shutdown()
        self.server.server_close()


class _Form(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.action = ""
        self.fields: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {name: value or "" for name, value in attrs}
        if tag == "form" and not self.action:
            self.action = found.get("action", "")
        elif tag == "input" and found.get("type") == "hidden" and "name" in found:
            self.fields.setdefault(found["name"], found.get("value", ""))


def sign_in_and_out(base: str, client: dict[str, Any], email: str) -> float:
    """A browser signs in with ``client`` and signs out at the end-session endpoint; when the sign-out answered."""
    http = requests.Session()
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = {
        "response_type": "code", "client_id": client["client_id"], "redirect_uri": REDIRECT_URI,
        "scope": "openid", "state": "s", "code_challenge": challenge, "code_challenge_method": "S256",
    }  # fmt: skip
    page = _follow(http, http.get(f"{base}/oauth2/authorize?{urlencode(query)}", allow_redirects=False))
    form = _Form()
    form.feed(page.text)
    data = {**form.fields, "email": email, "password": PASSWORD}
    callback = _follow(http, http.post(urljoin(page.url, form.action), data=data, allow_redirects=False))
    code = parse_qs(urlsplit(callback.headers["Location"]).query)["code"][0]
    tokens = http.post(
        f"{base}/oauth2/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT_URI,
            "code_verifier": verifier,
        },
        auth=(client["client_id"], client["client_secret"]),
        timeout=30,
    ).json()
    ended = http.get(f"{base}/oauth2/end-session", params={"id_token_hint": tokens["id_token"]}, timeout=30)
    if ended.status_code != 200:
        raise RuntimeError(f"end-session: {ended.status_code}")
    return time.monotonic()


def _follow(http: requests.Session, response: requests.Response) -> requests.Response:
    for _ in range(10):
        if not response.is_redirect:
            return response
        location = urljoin(response.url, response.headers["Location"])
        if location.startswith(REDIRECT_URI):
            return response
        response = http.get(location, allow_redirects=False, timeout=30)
    raise RuntimeError("too many redirects")


def register(service: Service, org_id: str, name: str, endpoint: Endpoint) -> dict[str, Any]:
    client: dict[str, Any] = service.cli(
        "clients", "create", "--name", name, "--org", org_id, "--auth-method", "client_secret_basic",
        "--redirect-uri", REDIRECT_URI, "--grant", "authorization_code", "--scope", "openid",
        "--first-party", "--backchannel-logout-uri", endpoint.uri,
    )  # fmt: skip
    return client


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.logout_delay", description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1], help="source tree to run")
    parser.add_argument("--queued", type=int, default=6, help="logout tokens queued for the sleeping endpoint")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--give-up", type=float, default=90.0, help="seconds to wait for the healthy token")
    args = parser.parse_args()
    sleepy, healthy = Endpoint(asleep=True), Endpoint(asleep=False)
    delays: list[float | None] = []
    with tempfile.TemporaryDirectory(prefix="logout-delay-") as folder:
        service = Service(args.root.resolve(), Path(folder))
        service.env["MENUS_OUTBOUND_LOOPBACK"] = "on"  # the relying parties listen on loopback (ignored before)
        try:
            service.cli("db", "upgrade")
            org = service.cli("orgs", "create", "--name", "Drill")
            service.cli(
                "users", "create", "--email", "ana@example.com", "--name", "Ana", "--password-stdin", "--org",
                org["id"], stdin=PASSWORD + "\n",
            )  # fmt: skip
            clients = {
                name: register(service, org["id"], name, endpoint)
                for name, endpoint in (("sleepy", sleepy), ("healthy", healthy))
            }
            service.start(1)
            base = f"http://127.0.0.1:{service.port}"
            for _ in range(args.rounds):
                for _ in range(args.queued):
                    sign_in_and_out(base, clients["sleepy"], "ana@example.com")
                before = len(healthy.arrivals)
                ended = sign_in_and_out(base, clients["healthy"], "ana@example.com")
                deadline = ended + args.give_up
                while len(healthy.arrivals) == before and time.monotonic() < deadline:
                    time.sleep(0.01)
                delays.append(round(healthy.arrivals[before] - ended, 3) if len(healthy.arrivals) > before else None)
        finally:
            service.stop()
            sleepy.stop()
            healthy.stop()
    arrived = [d for d in delays if d is not None]
    print(
        json.dumps(
            {
                "root": str(args.root),
                "queued_for_the_sleeping_endpoint": args.queued,
                "healthy_token_delay_s": delays,
                "median_s": statistics.median(arrived) if arrived else None,
                "not_within_give_up": len(delays) - len(arrived),
                "sleeping_endpoint_posts_read": len(sleepy.arrivals),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
