"""The drill's load (bench/drill.py): threads of httpx clients, each from a loopback address of its own, and what
they recorded."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import httpx

from bench.drill_plan import Plan

REDIRECT_URI = "http://127.0.0.1:9/callback"
PASSWORD = "drill-password-1234"
DISHES = (  # the dishes queries the load sends, in turn
    "/v1/menus/dishes?course=main&max_spice=3&limit=20",
    "/v1/menus/dishes?diet=vegetarian&limit=10",
    "/v1/menus/dishes?region=kerala",
    "/v1/menus/dishes?course=dessert",
    "/v1/menus/dishes?q=rice&limit=5",
    "/v1/menus/regions",
)


@dataclass
class Sample:
    at: float  # seconds since the drill's start, when the request was sent
    kind: str  # dishes, token, introspection, sign_in_page, sign_in_form, code_exchange, reset, probe
    outcome: str  # "ok", or the error's kind as the client saw it: "502", "503", "ConnectError", "inactive" …
    seconds: float
    idempotent: bool


@dataclass
class Issued:
    at: float
    token: str
    client: str  # "machine" or "web": the client that may introspect it


@dataclass
class Deployment:
    proxy_url: str
    tls: Any  # ssl.SSLContext trusting the drill's certificate
    machine: tuple[str, str]
    web: tuple[str, str]
    load_keys: list[str]
    probe_key: str
    sign_in_users: list[str]
    reset_users: list[str]


class Load:
    """The load threads and what they recorded."""

    def __init__(self, deployment: Deployment, plan: Plan, started: float) -> None:
        self.deployment = deployment
        self.plan = plan
        self.started = started
        self.samples: list[Sample] = []
        self.issued: list[Issued] = []
        self.sign_ins: list[tuple[float, bool]] = []  # (when started, completed)
        self.probe: list[tuple[float, int, int | None]] = []  # (when, status, RateLimit-Remaining)
        self.stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self.random = random.Random(40)

    def now(self) -> float:
        return time.monotonic() - self.started

    def client(self, address: str) -> httpx.Client:
        transport = httpx.HTTPTransport(verify=self.deployment.tls, local_address=address, retries=0)
        return httpx.Client(base_url=self.deployment.proxy_url, transport=transport, timeout=15)

    def start(self) -> None:
        for n in range(self.plan.threads):
            self._threads.append(threading.Thread(target=self._worker, args=(n,), daemon=True))
        self._threads.append(threading.Thread(target=self._resets, daemon=True))
        self._threads.append(threading.Thread(target=self._probe, daemon=True))
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self.stopping.set()
        for thread in self._threads:
            thread.join(timeout=30)

    def request(
        self, client: httpx.Client, kind: str, method: str, url: str, *, ok: Callable[[httpx.Response], bool],
        **options: Any,
    ) -> httpx.Response | None:  # fmt: skip
        """One request, recorded: its outcome is "ok" when ``ok`` holds, else its status or exception's name."""
        at = self.now()
        started = time.perf_counter()
        try:
            response = client.request(method, url, **options)
        except httpx.HTTPError as error:
            self.samples.append(Sample(at, kind, type(error).__name__, time.perf_counter() - started, method == "GET"))
            return None
        outcome = "ok" if ok(response) else str(response.status_code)
        self.samples.append(Sample(at, kind, outcome, time.perf_counter() - started, method == "GET"))
        return response

    def _paced(self, rate: float) -> Iterator[None]:
        """Yields at ``rate`` a second until the load stops; late turns go at once, without catching up."""
        interval = 1 / rate
        due = time.monotonic() + self.random.random() * interval
        while not self.stopping.is_set():
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            yield
            due = max(due + interval, time.monotonic() - interval)

    def _worker(self, n: int) -> None:
        rng = random.Random(n)
        user = self.deployment.sign_in_users[n % len(self.deployment.sign_in_users)]
        with self.client(f"127.0.0.{2 + n}") as client, self.client(f"127.0.0.{2 + n}") as browser:
            recent: list[Issued] = []
            for _ in self._paced(self.plan.rate / self.plan.threads):
                pick = rng.random()
                if pick < 0.80:
                    key = self.deployment.load_keys[rng.randrange(len(self.deployment.load_keys))]
                    self.request(
                        client, "dishes", "GET", DISHES[rng.randrange(len(DISHES))],
                        headers={"Authorization": f"Bearer {key}"}, ok=lambda r: r.status_code == 200,
                    )  # fmt: skip
                elif pick < 0.875 or not recent:
                    issued = self._token(client)
                    if issued is not None:
                        recent = [*recent[-20:], issued]
                elif pick < 0.95:
                    self._introspect(client, recent[rng.randrange(len(recent))])
                else:
                    self._sign_in(browser, user)

    def _token(self, client: httpx.Client) -> Issued | None:
        response = self.request(
            client, "token", "POST", "/oauth2/token", auth=self.deployment.machine,
            data={"grant_type": "client_credentials", "scope": "members:read"}, ok=lambda r: r.status_code == 200,
        )  # fmt: skip
        if response is None or response.status_code != 200:
            return None
        issued = Issued(self.now(), response.json()["access_token"], "machine")
        self.issued.append(issued)
        return issued

    def _introspect(self, client: httpx.Client, issued: Issued) -> None:
        self.request(
            client, "introspection", "POST", "/oauth2/introspect", auth=self.deployment.machine,
            data={"token": issued.token}, ok=lambda r: r.status_code == 200 and r.json().get("active") is True,
        )  # fmt: skip
        # An answer of 200 with active false, for a live token, is an error as the client sees it.

    def _sign_in(self, browser: httpx.Client, email: str) -> None:
        """A browser sign-in through the pages (``prompt=login``), then the code exchange by the client."""
        from tests.support.form_browser import FormParser
        from tests.support.pkce_pairs import pkce_pair

        started = self.now()
        verifier, challenge = pkce_pair()
        query = urlencode({
            "response_type": "code", "client_id": self.deployment.web[0], "redirect_uri": REDIRECT_URI,
            "scope": "openid", "state": "drill", "code_challenge": challenge, "code_challenge_method": "S256",
            "prompt": "login",
        })  # fmt: skip
        url = f"/oauth2/authorize?{query}"
        response: httpx.Response | None = None
        for _ in range(4):  # authorize, then its redirects on the provider, to the sign-in page
            response = self.request(browser, "sign_in_page", "GET", url, ok=lambda r: r.status_code in (200, 302, 303))
            if response is None or response.status_code not in (302, 303):
                break
            url = urljoin(str(response.url), response.headers["location"])
        if response is None or response.status_code != 200:
            self.sign_ins.append((started, False))
            return
        parser = FormParser()
        parser.feed(response.text)
        form = parser.forms[0]
        answer = self.request(
            browser, "sign_in_form", "POST", urljoin(str(response.url), form.action),
            data={**form.fields, "email": email, "password": PASSWORD}, ok=lambda r: r.status_code in (302, 303),
        )  # fmt: skip
        location = answer.headers.get("location", "") if answer is not None else ""
        code = parse_qs(urlsplit(location).query).get("code", [""])[0] if location.startswith(REDIRECT_URI) else ""
        if not code:
            self.sign_ins.append((started, False))
            return
        exchanged = self.request(
            browser, "code_exchange", "POST", "/oauth2/token", auth=self.deployment.web,
            data={"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI,
                  "code_verifier": verifier},
            ok=lambda r: r.status_code == 200,
        )  # fmt: skip
        completed = exchanged is not None and exchanged.status_code == 200
        if completed and exchanged is not None:
            self.issued.append(Issued(self.now(), exchanged.json()["access_token"], "web"))
        self.sign_ins.append((started, completed))

    def _resets(self) -> None:
        """A password-reset request at a steady pace, each from another network, for the reset users in turn."""
        from tests.support.form_browser import FormParser

        for n, _ in enumerate(self._paced(1 / self.plan.reset_every)):
            email = self.deployment.reset_users[n % len(self.deployment.reset_users)]
            with self.client(f"127.0.{1 + n // 200}.{50 + n % 200}") as browser:
                query = urlencode({
                    "response_type": "code", "client_id": self.deployment.web[0], "redirect_uri": REDIRECT_URI,
                    "scope": "openid", "state": "reset",
                    "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", "code_challenge_method": "S256",
                })  # fmt: skip
                page = self.request(
                    browser, "reset", "GET", f"/oauth2/authorize?{query}", follow_redirects=True,
                    ok=lambda r: r.status_code == 200,
                )  # fmt: skip
                if page is None or page.status_code != 200:
                    continue
                parser = FormParser()
                parser.feed(page.text)
                interaction = parser.forms[0].fields.get("interaction", "") if parser.forms else ""
                form_page = self.request(
                    browser, "reset", "GET", f"/forgot-password?interaction={interaction}",
                    ok=lambda r: r.status_code == 200,
                )  # fmt: skip
                if form_page is None or form_page.status_code != 200:
                    continue
                parser = FormParser()
                parser.feed(form_page.text)
                form = parser.forms[0]
                self.request(
                    browser, "reset", "POST", urljoin(str(form_page.url), form.action),
                    data={**form.fields, "email": email}, ok=lambda r: r.status_code == 200,
                )  # fmt: skip

    def _probe(self) -> None:
        """The probe key at 1.5 times the limit: 429 is its expected answer past the limit, not an error."""
        headers = {"Authorization": f"Bearer {self.deployment.probe_key}"}
        with self.client("127.0.0.250") as client:
            for _ in self._paced(self.plan.probe_rate):
                at = self.now()
                response = self.request(
                    client, "probe", "GET", "/v1/menus/regions", headers=headers,
                    ok=lambda r: r.status_code in (200, 429),
                )  # fmt: skip
                if response is not None:
                    remaining = response.headers.get("ratelimit-remaining")
                    self.probe.append((at, response.status_code, int(remaining) if remaining else None))
