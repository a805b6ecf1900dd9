"""The shipped nginx configuration (deploy/nginx.conf), as it is, in front of live nodes: Debian's nginx run by the
test (tests/support/nginx.py), TLS with a self-signed certificate made here.

Each node trusts the proxy (``MENUS_TRUSTED_PROXIES=127.0.0.1``) and has the proxy's https address as its issuer
and base URL, as docs/nodes.md says. Clients connect from other loopback addresses (127.0.0.2, 127.0.0.3), so the
address a node sees for them differs from the proxy's own.
"""

from __future__ import annotations

import http.server
import itertools
import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urljoin

import httpx
import pytest
import requests
from requests.adapters import HTTPAdapter

from tests.support.defaults import ADDRESS_LIMIT, HEAD_LINE_LIMIT
from tests.support.form_browser import TIMEOUT, Browser, Callback, Page
from tests.support.identity_fixtures import PASSWORD
from tests.support.live import REDIRECT_URI, LiveService, free_port, live_service
from tests.support.loops import each
from tests.support.nginx import Nginx, nginx_proxy
from tests.support.pkce_pairs import pkce_pair

_spoofed = (f"198.18.{n // 250}.{n % 250 + 1}" for n in itertools.count())


class Stub503(http.server.BaseHTTPRequestHandler):
    """A node that cannot work: every request answered 503 with a body and a Retry-After of its own."""

    protocol_version = "HTTP/1.1"
    body = b'{"type":"about:blank","title":"stub node","status":503}'

    def answer(self) -> None:
        self.server.hits += 1  # type: ignore[attr-defined]
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.send_response(503)
        self.send_header("Retry-After", "7")
        self.send_header("Content-Type", "application/problem+json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    do_GET = do_POST = answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


@dataclass
class Stub:
    server: http.server.ThreadingHTTPServer
    address: str = field(init=False)

    def __post_init__(self) -> None:
        self.address = f"127.0.0.1:{self.server.server_address[1]}"

    @property
    def hits(self) -> int:
        return int(self.server.hits)  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def stubs() -> Iterator[list[Stub]]:
    servers = []
    for _ in range(2):
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Stub503)
        server.hits = 0  # type: ignore[attr-defined]
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
    try:
        yield [Stub(server) for server in servers]
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()


@dataclass
class Deployment:
    proxy: Nginx
    node: LiveService
    client_id: str


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    port = free_port()
    https = f"https://127.0.0.1:{port}"
    env = {"MENUS_ISSUER": https, "MENUS_BASE_URL": https, "MENUS_TRUSTED_PROXIES": "127.0.0.1"}
    with live_service(tmp_path_factory.mktemp("nginx-node"), env) as node:
        node_address = node.url.removeprefix("http://")
        with nginx_proxy(tmp_path_factory.mktemp("nginx"), [node_address], port=port) as proxy:
            acme, _, _, _ = node.two_organizations(PASSWORD)
            client = node.cli_json(
                "clients", "create", "--name", "Menu Planner", "--org", acme["id"], "--redirect-uri", REDIRECT_URI,
                "--auth-method", "client_secret_basic", "--first-party",
            )  # fmt: skip
            yield Deployment(proxy, node, str(client["client_id"]))


class FromAddress(HTTPAdapter):
    """requests from a source address of the test's choosing (urllib3's ``source_address``), trusting ``tls``."""

    def __init__(self, address: str, tls: ssl.SSLContext) -> None:
        self._address = address
        self._tls = tls
        super().__init__()

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        kwargs["source_address"] = (self._address, 0)
        kwargs["ssl_context"] = self._tls
        super().init_poolmanager(*args, **kwargs)


def browser(deployment: Deployment, address: str = "127.0.0.2") -> Browser:
    """A browser of the proxy's https address, connecting from ``address``, trusting the test's certificate."""
    made = Browser(deployment.proxy.url)
    made.http.mount("https://", FromAddress(address, deployment.proxy.tls_context()))
    return made


def authorize_url(deployment: Deployment) -> str:
    query = {
        "response_type": "code", "client_id": deployment.client_id, "redirect_uri": REDIRECT_URI, "scope": "openid",
        "state": "s", "code_challenge": pkce_pair()[1], "code_challenge_method": "S256",
    }  # fmt: skip
    return f"{deployment.proxy.url}/oauth2/authorize?{urlencode(query)}"


def https(deployment: Deployment, address: str = "127.0.0.2") -> httpx.Client:
    transport = httpx.HTTPTransport(verify=deployment.proxy.tls_context(), local_address=address)
    return httpx.Client(base_url=deployment.proxy.url, transport=transport, timeout=TIMEOUT)


def test_discovery_through_the_proxy_names_the_https_issuer_and_its_endpoints(deployment: Deployment) -> None:
    with https(deployment) as client:
        discovery = client.get("/.well-known/openid-configuration")
    assert discovery.status_code == 200
    document = discovery.json()
    assert document["issuer"] == deployment.proxy.url
    endpoints = {name: url for name, url in document.items() if name.endswith(("_endpoint", "_uri"))}
    assert endpoints and all(url.startswith(deployment.proxy.url + "/") for url in endpoints.values()), endpoints


def test_a_sign_in_through_the_proxy_stays_on_the_https_address_and_its_cookies_are_secure(
    deployment: Deployment,
) -> None:
    """Every redirect of the sign-in stays on the issuer's https address (the browser refuses any other but the
    client's callback), the session cookies are Secure, and the code comes back to the client."""
    client = browser(deployment)
    page = client.go(authorize_url(deployment))
    assert isinstance(page, Page) and page.url.startswith(deployment.proxy.url + "/"), page
    callback = client.submit(page, email="ana@example.com", password=PASSWORD)
    assert isinstance(callback, Callback) and callback.url.startswith(REDIRECT_URI + "?"), callback
    assert "code=" in callback.url
    assert client.http.cookies and all(cookie.secure for cookie in client.http.cookies)


def wrong_sign_in(deployment: Deployment, n: int, address: str, forwarded_for: str | None = None) -> int:
    """One wrong sign-in at a made-up email from ``address``, with a spoofed ``X-Forwarded-For`` if given."""
    client = browser(deployment, address)
    if forwarded_for is not None:
        client.http.headers["X-Forwarded-For"] = forwarded_for
    page = client.go(authorize_url(deployment))
    if not isinstance(page, Page):
        raise AssertionError(page)
    data = {**page.form.fields, "email": f"nobody{n}@example.com", "password": "wrong password"}
    answer = client.http.post(urljoin(page.url, page.form.action), data=data, allow_redirects=False, timeout=TIMEOUT)
    return answer.status_code


def test_the_throttle_counts_the_address_nginx_saw_and_no_forwarded_for_from_outside(
    deployment: Deployment,
) -> None:
    """From 127.0.0.2, each attempt with a new made-up X-Forwarded-For: nginx replaces the header with the address
    it saw, so the per-network bound counts every attempt against 127.0.0.2, and 127.0.0.3 is another network."""
    statuses = [wrong_sign_in(deployment, n, "127.0.0.2", next(_spoofed)) for n in range(ADDRESS_LIMIT + 1)]
    assert statuses == [200] * ADDRESS_LIMIT + [429]  # the sign-in page again, then refused
    assert wrong_sign_in(deployment, ADDRESS_LIMIT + 1, "127.0.0.3") == 200


def test_the_nodes_log_the_client_address_nginx_saw(deployment: Deployment) -> None:
    request_id = "nginx-forwarded-" + str(time.time_ns())
    with https(deployment, "127.0.0.3") as client:
        answer = client.get("/healthz", headers={"X-Request-ID": request_id, "X-Forwarded-For": "203.0.113.9"})
    assert answer.status_code == 200 and answer.headers["x-request-id"] == request_id
    log = deployment.node.workdir / "server.log"
    deadline = time.monotonic() + 5  # INFO lines are written a batch at a time (0.1 s)
    lines: list[dict[str, Any]] = []
    while not lines and time.monotonic() < deadline:
        lines = [
            json.loads(line) for line in log.read_text().splitlines() if request_id in line and line.startswith("{")
        ]
        time.sleep(0.05)
    assert [line["remote"] for line in lines] == ["127.0.0.3"]


def test_idempotent_requests_a_node_answers_503_are_answered_by_another(
    tmp_path_factory: pytest.TempPathFactory, deployment: Deployment, stubs: list[Stub]
) -> None:
    node = deployment.node.url.removeprefix("http://")
    api_key = deployment.node.api_key("nginx-retries")
    before = stubs[1].hits
    with nginx_proxy(tmp_path_factory.mktemp("nginx-retries"), [stubs[1].address, node]) as proxy:
        transport = httpx.HTTPTransport(verify=proxy.tls_context())
        with httpx.Client(base_url=proxy.url, transport=transport, timeout=TIMEOUT) as client:
            statuses = [
                client.get("/v1/menus/regions", headers={"Authorization": f"Bearer {api_key}"}).status_code
                for _ in range(10)
            ]
    asked = stubs[1].hits
    # Introspection, revocation and userinfo change nothing a second attempt could double: retried too, POST or not.
    with nginx_proxy(tmp_path_factory.mktemp("nginx-retries-post"), [stubs[1].address, node]) as proxy:
        transport = httpx.HTTPTransport(verify=proxy.tls_context())
        with httpx.Client(base_url=proxy.url, transport=transport, timeout=TIMEOUT) as client:
            introspected = [client.post("/oauth2/introspect", data={"token": "t"}).status_code for _ in range(4)]
    assert statuses == [200] * 10
    assert asked > before  # the stub node was asked, and its 503 retried on the live node
    assert introspected == [400] * 4 and stubs[1].hits > asked  # invalid_client (no header: 400), never the 503


def test_a_request_to_a_node_that_is_gone_is_answered_by_another(
    tmp_path_factory: pytest.TempPathFactory, deployment: Deployment
) -> None:
    nothing = f"127.0.0.1:{free_port()}"  # nothing listens there: every connection is refused
    node = deployment.node.url.removeprefix("http://")
    with nginx_proxy(tmp_path_factory.mktemp("nginx-gone"), [nothing, node]) as proxy:
        transport = httpx.HTTPTransport(verify=proxy.tls_context())
        with httpx.Client(base_url=proxy.url, transport=transport, timeout=TIMEOUT) as client:
            answers = [client.post("/oauth2/token", data={"grant_type": "client_credentials"}) for _ in range(6)]
            reads = [client.get("/jwks").status_code for _ in range(6)]
    # A POST that never reached a node is retried too (nothing of it was sent): its invalid_client each time.
    assert [a.status_code for a in answers] == [400] * 6
    assert all(a.json()["error"] == "invalid_client" for a in answers)
    assert reads == [200] * 6
    assert "connect() failed (111: Connection refused)" in proxy.error_log()


def test_every_node_answering_503_reaches_the_client_unchanged_for_reads_and_writes(
    tmp_path_factory: pytest.TempPathFactory, stubs: list[Stub]
) -> None:
    """As in a database outage: nginx tries a second node, then passes the last 503 as the node wrote it (body,
    Retry-After), never a 502 of its own, for GET and POST alike, request after request."""
    with nginx_proxy(tmp_path_factory.mktemp("nginx-503"), [stub.address for stub in stubs]) as proxy:
        transport = httpx.HTTPTransport(verify=proxy.tls_context())
        with httpx.Client(base_url=proxy.url, transport=transport, timeout=TIMEOUT) as client:
            answers = [client.get("/v1/menus/regions") for _ in range(4)]
            answers += [client.post("/oauth2/token", data={"grant_type": "client_credentials"}) for _ in range(4)]
    for answer in each(answers):
        assert answer.status_code == 503
        assert answer.headers["retry-after"] == "7"
        assert answer.content == Stub503.body


def direct_and_proxied(deployment: Deployment, method: str, path: str, **options: Any) -> list[httpx.Response]:
    with httpx.Client(base_url=deployment.node.url, timeout=TIMEOUT) as direct, https(deployment) as proxied:
        return [direct.request(method, path, **options), proxied.request(method, path, **options)]


def test_the_services_own_413_passes_through_unchanged(deployment: Deployment) -> None:
    """A form over the identity endpoints' 64 KiB bound, under nginx's 1 MiB: the node's own OAuth error."""
    form = {"grant_type": "client_credentials", "scope": "x" * (70 * 1024)}
    direct, proxied = direct_and_proxied(deployment, "POST", "/oauth2/token", data=form)
    assert direct.status_code == proxied.status_code == 413
    assert proxied.headers["content-type"] == direct.headers["content-type"]
    assert proxied.content == direct.content


def test_the_services_own_431_passes_through_unchanged(deployment: Deployment) -> None:
    """A header line over the node's 16 KiB bound, under nginx's 32 KiB: the node's own 431."""
    headers = {"X-Padding": "p" * (HEAD_LINE_LIMIT + 100)}
    direct, proxied = direct_and_proxied(deployment, "GET", "/healthz", headers=headers)
    assert direct.status_code == proxied.status_code == 431
    assert proxied.content == direct.content


def test_metrics_are_not_served_through_the_proxy(deployment: Deployment) -> None:
    with https(deployment) as client:
        assert client.get("/metrics").status_code == 404
    assert requests.get(f"{deployment.node.url}/metrics", timeout=TIMEOUT).status_code == 200


def stalled(proxy: Nginx, sent: bytes) -> tuple[float, bytes]:
    """Sends ``sent`` over TLS and nothing more; the seconds until nginx closes the connection, and its answer."""
    context = proxy.tls_context()
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=30) as raw:
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as connection:
            connection.sendall(sent)
            started, answer = time.monotonic(), b""
            try:
                while chunk := connection.recv(4096):
                    answer += chunk
            except (ssl.SSLError, ConnectionResetError):
                pass
            return time.monotonic() - started, answer


def test_a_stalled_head_or_body_is_cut_by_nginx_and_never_reaches_a_node(deployment: Deployment) -> None:
    """client_header_timeout and client_body_timeout (10 s): the proxy closes the connection, answering 408 at
    most, and the node never sees the request (nginx reads a body whole before it passes it on)."""
    path = f"/stalled-{time.time_ns()}"
    head = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ".encode()
    body = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
        "Content-Length: 100\r\n\r\ngrant_type="
    ).encode()
    results: dict[str, tuple[float, bytes]] = {}

    def run(name: str, sent: bytes) -> None:
        results[name] = stalled(deployment.proxy, sent)

    threads = [threading.Thread(target=run, args=item) for item in (("head", head), ("body", body))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    for name in ("head", "body"):
        seconds, answer = results[name]
        assert 9 <= seconds <= 20, (name, seconds)
        assert answer == b"" or answer.startswith(b"HTTP/1.1 408"), (name, answer[:100])
    assert path not in (deployment.node.workdir / "server.log").read_text()
