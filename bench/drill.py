"""``python -m bench drill``: the production shape under a mixed load, each part broken in turn.

The shape of docs/nodes.md: Debian's nginx with the shipped ``deploy/nginx.conf`` (tests/support/nginx.py) in front
of three nodes, each ``regional-menus serve --workers 2``, on one PostgreSQL server of the drill's own
(tests/support/pg_instance.py: it is restarted, so never the machine's shared server), a Redis server of its own
for the rate limit, and an aiosmtpd server in this process for the mail. All on loopback; clients connect from
other loopback addresses (127.0.0.2 …), so each load thread is a network of its own to the throttles.

The load (threads of this process, httpx, each paced to its share of ``--rate``): dishes queries under several
API keys (80 %), client_credentials tokens and introspections of them (15 %), browser sign-ins through the pages
with ``prompt=login`` and a code exchange (5 %); beside it, password-reset requests (mails) at a steady pace, and
a probe key sent at 1.5 times the rate limit, whose admissions show whether the limit held.

The faults, one at a time, each followed by a quiet period (a minute in the full drill): ``kill -9`` of one node
(its master and workers) then a restart; a restart of PostgreSQL (stopped at once, as in a crash); Redis stopped;
the SMTP server stopped; one node restarted with its clock 30 s ahead (libfaketime's ``FAKETIME``, Debian's
``faketime`` package, on that node's processes alone; monotonic clocks untouched), then restarted on time.

For each phase it reports what clients saw (requests, errors by kind, p50/p99, seconds from the fault's end until
the errors stop), the nodes' ``/readyz`` as sampled, tokens issued against tokens introspected active (every token,
after the drill), mails queued against mails delivered (and any delivered twice), sign-ins completed, and whether
the probe key's admissions stayed within the limit's documented approximation. A benchmark: it reports, and
asserts nothing; ``tests/system/test_drill.py`` runs the short drill (``--short``) and checks what must hold.
"""

from __future__ import annotations

import argparse
import base64
import glob
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import httpx

ROOT = Path(__file__).resolve().parent.parent
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


@dataclass(frozen=True)
class Plan:
    """How long each part lasts, in seconds, and how much load."""

    rate: float  # requests a second the load threads aim at, in all
    threads: int
    rate_limit: int  # MENUS_RATE_LIMIT: requests a minute per key
    load_keys: int  # API keys the dishes queries take in turn (each well under the limit)
    baseline: float  # load before the first fault
    quiet: float  # load after each fault ends, before the next starts
    node_down: float  # a killed node stays down this long before its restart
    postgres_down: float  # between PostgreSQL's stop and its start (0: a restart)
    redis_down: float
    smtp_down: float
    clock_for: float  # how long the node with its clock ahead runs
    clock_ahead: int  # seconds
    reset_every: float  # seconds between two password-reset requests
    mail_wait: float  # after the last phase, seconds to wait for the mail still pending

    @property
    def probe_rate(self) -> float:
        return 1.5 * self.rate_limit / 60

    @property
    def reset_accounts(self) -> int:
        """Accounts enough that none passes the per-account bound of 5 reset mails in 15 minutes: every reset
        request of the drill queues a mail."""
        faults = self.node_down + self.postgres_down + self.redis_down + self.smtp_down + self.clock_for + 20
        seconds = self.baseline + len(FAULTS) * self.quiet + faults
        return int(seconds / self.reset_every / 5) + 2


FULL = Plan(
    rate=300, threads=16, rate_limit=1200, load_keys=24, baseline=30, quiet=60, node_down=10, postgres_down=0,
    redis_down=30, smtp_down=60, clock_for=30, clock_ahead=30, reset_every=2.0, mail_wait=180,
)  # fmt: skip
SHORT = Plan(
    rate=100, threads=8, rate_limit=600, load_keys=6, baseline=2, quiet=2.5, node_down=1, postgres_down=1,
    redis_down=2, smtp_down=2, clock_for=2, clock_ahead=30, reset_every=0.5, mail_wait=0,
)  # fmt: skip
FAULTS = ("node_kill", "postgres_restart", "redis_stop", "smtp_stop", "clock_ahead")


def free_port() -> int:
    from tests.support.live import free_port as free

    return free()


# The parts


@dataclass
class Node:
    """``regional-menus serve --workers 2`` on a port of its own, in a process group of its own (kill -9 hits the
    master and its workers at once)."""

    name: str
    port: int
    folder: Path
    env: dict[str, str]
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, extra_env: dict[str, str] | None = None) -> None:
        log = (self.folder / "server.log").open("ab")
        metrics = self.folder / "metrics"
        metrics.mkdir(exist_ok=True)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "service", "serve", "--port", str(self.port), "--workers", "2"],
            cwd=self.folder,
            env={**self.env, "PROMETHEUS_MULTIPROC_DIR": str(metrics), **(extra_env or {})},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"node {self.name} exited: {(self.folder / 'server.log').read_text()[-2000:]}")
            try:
                if httpx.get(self.url + "/readyz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"node {self.name} did not become ready")

    def kill(self) -> None:
        """``kill -9`` of the master and every worker."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        """SIGTERM: gunicorn drains in-flight requests, then exits."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=40)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


class RedisServer:
    """A redis-server of the drill's own, stopped and started on the same port (nothing kept across)."""

    def __init__(self, folder: Path) -> None:
        self.port = free_port()
        self.folder = folder
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed (Debian: apt-get install redis-server)")
        self.process = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.folder)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        import redis

        while time.monotonic() < deadline:
            try:
                redis.Redis(port=self.port, socket_timeout=1).ping()
                return
            except redis.RedisError:
                time.sleep(0.02)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)


CLOCK_AHEAD = {"FAKETIME_DONT_FAKE_MONOTONIC": "1", "FAKETIME_NO_CACHE": "1"}  # the wall clock only


def faketime_library() -> tuple[str | None, str]:
    """libfaketime for multithreaded programs (Debian's ``faketime`` package), if it can move a Python process's
    wall clock alone; else None, and why not."""
    found = sorted(glob.glob("/usr/lib/*/faketime/libfaketimeMT.so.1"))
    if not found:
        return None, "libfaketime is not installed (Debian: apt-get install faketime)"
    env = {**os.environ, **CLOCK_AHEAD, "LD_PRELOAD": found[0], "FAKETIME": "+30s"}
    check = "import time; ahead = time.time() - float(input()); time.sleep(0.01); print(round(ahead))"
    try:
        done = subprocess.run(
            [sys.executable, "-c", check], env=env, input=f"{time.time()}\n", capture_output=True, text=True,
            timeout=10, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return None, "a Python process under libfaketime hung"
    if done.returncode != 0 or done.stdout.strip() != "30":
        # libfaketime 0.9.10 (Debian 12) passes a negative time to clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME),
        # which Python 3.11's time.sleep uses, when the monotonic clock is left alone (libfaketime issue 426);
        # faking the monotonic clock too makes it jump to the wall clock's value, and sleeps hang.
        last = (done.stderr.strip().splitlines() or ["no error"])[-1]
        python = f"{sys.version_info[0]}.{sys.version_info[1]}"
        return None, f"libfaketime cannot move the clock of a Python {python} process ({last}; libfaketime issue 426)"
    return found[0], ""


# What clients saw


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


# The drill


@dataclass
class Phase:
    name: str
    started: float
    fault_started: float = 0.0
    fault_ended: float = 0.0
    ended: float = 0.0
    note: str = ""
    readiness: dict[str, Counter[str]] = field(default_factory=dict)


def cli(env: dict[str, str], *args: str, stdin: str | None = None) -> Any:
    """``regional-menus ARGS --json`` run in this process (click's runner: one start-up for every command)."""
    from click.testing import CliRunner

    from service.cli.commands import main

    settings = {name: value for name, value in env.items() if name.startswith("MENUS_")}
    done = CliRunner().invoke(main, [*args, "--json"], env=settings, input=stdin, catch_exceptions=False)
    if done.exit_code != 0:
        raise RuntimeError(f"regional-menus {' '.join(args)}: {done.output}")
    return json.loads(done.stdout)


def provision(env: dict[str, str], folder: Path, plan: Plan, proxy_url: str, tls: Any) -> Deployment:
    """The records the load needs, made with the command line."""
    subprocess.run([sys.executable, "-m", "service", "db", "upgrade"], cwd=folder, env=env, check=True,
                   capture_output=True)  # fmt: skip
    org = cli(env, "orgs", "create", "--name", "Drill")
    machine = cli(
        env, "clients", "create", "--name", "Drill job", "--org", org["id"], "--auth-method", "client_secret_basic",
        "--grant", "client_credentials", "--scope", "members:read",
    )  # fmt: skip
    web = cli(
        env, "clients", "create", "--name", "Drill web", "--org", org["id"], "--auth-method", "client_secret_basic",
        "--redirect-uri", REDIRECT_URI, "--grant", "authorization_code", "--scope", "openid", "--first-party",
    )  # fmt: skip
    api_keys = [cli(env, "api-keys", "create", "--name", f"drill-{n}")["key"] for n in range(plan.load_keys + 1)]
    users = [f"signin{n}@drill.example" for n in range(plan.threads)]
    resets = [f"reset{n}@drill.example" for n in range(plan.reset_accounts)]
    for email in users + resets:
        cli(env, "users", "create", "--email", email, "--name", email.split("@")[0], "--password-stdin", "--org",
            org["id"], stdin=PASSWORD + "\n")  # fmt: skip
    return Deployment(
        proxy_url, tls, (machine["client_id"], machine["client_secret"]), (web["client_id"], web["client_secret"]),
        api_keys[1:], api_keys[0], users, resets,
    )  # fmt: skip


class Drill:
    def __init__(self, plan: Plan, folder: Path, faults: tuple[str, ...] = FAULTS) -> None:
        self.plan = plan
        self.folder = folder
        self.faults = faults
        self.phases: list[Phase] = []
        self.inactive: list[Issued] = []
        self.records: dict[str, Any] = {}
        self.events: list[tuple[float, str]] = []

    def log(self, message: str) -> None:
        at = time.monotonic() - self.started
        self.events.append((round(at, 2), message))
        print(f"[drill {at:7.1f} s] {message}", file=sys.stderr, flush=True)

    def run(self) -> dict[str, Any]:
        from identity.sealing import new_key
        from tests.support.nginx import nginx_proxy
        from tests.support.pg_instance import postgres_server
        from tests.support.smtp import SmtpServer

        self.started = time.monotonic()
        self.wall_started = time.time()
        with ExitStack() as stack:
            postgres = stack.enter_context(postgres_server())
            redis_server = RedisServer(self.folder)
            redis_server.start()
            stack.callback(redis_server.stop)
            smtp = SmtpServer()
            smtp.start()
            stack.callback(smtp.stop)
            proxy_port = free_port()
            https = f"https://127.0.0.1:{proxy_port}"
            env = {
                **os.environ,
                "MENUS_DATABASE_URL": postgres.url,
                "MENUS_SECRET_KEYS": new_key(),
                "MENUS_ISSUER": https,
                "MENUS_BASE_URL": https,
                "MENUS_TRUSTED_PROXIES": "127.0.0.1",
                "MENUS_RATE_LIMIT": str(self.plan.rate_limit),
                "MENUS_RATE_LIMIT_STORAGE": redis_server.url,
                "MENUS_SMTP_URL": smtp.url,
                "MENUS_MAIL_POLL_INTERVAL": "1",
                "MENUS_ACCESS_TOKEN_TTL": "3600",  # every token of the drill still live when all are introspected
            }
            nodes = []
            for name in ("a", "b", "c"):
                node_folder = self.folder / f"node-{name}"
                node_folder.mkdir()
                nodes.append(Node(name, free_port(), node_folder, env))
            proxy = stack.enter_context(nginx_proxy(self.folder / "nginx", [n.url[7:] for n in nodes], port=proxy_port))
            deployment = provision(env, self.folder, self.plan, https, proxy.tls_context())
            self.log("provisioned")
            starting = [threading.Thread(target=node.start) for node in nodes]
            for thread in starting:
                thread.start()
            for thread in starting:
                thread.join()
            for node in nodes:
                stack.callback(node.stop)
            self.log("three nodes ready")
            load = Load(deployment, self.plan, self.started)
            readiness = Readiness(nodes, self.started)
            load.start()
            readiness.start()
            try:
                self._phases(nodes, postgres, redis_server, smtp, readiness)
            finally:
                load.stop()
                readiness.stop()
            self.log(f"load stopped; {len(load.samples)} requests")
            mail = self._mail_accounting(postgres.url, smtp, wait=self.plan.mail_wait)
            tokens = self._token_accounting(load, deployment)
            self.records = _token_records(postgres.url, [_claims(i.token).get("jti") for i in self.inactive])
            self.log("accounted")
            return self.report(load, mail, tokens)

    def _phases(self, nodes: list[Node], postgres: Any, redis_server: RedisServer, smtp: Any,
                readiness: Readiness) -> None:  # fmt: skip
        plan = self.plan
        now = lambda: time.monotonic() - self.started  # noqa: E731
        baseline = Phase("baseline", now())
        self.phases.append(baseline)
        time.sleep(plan.baseline)
        baseline.fault_started = baseline.fault_ended = baseline.ended = now()
        for fault in self.faults:
            phase = Phase(fault, now())
            self.phases.append(phase)
            readiness.phase = phase
            phase.fault_started = now()
            self.log(f"{fault}: starts")
            if fault == "node_kill":
                nodes[1].kill()
                time.sleep(plan.node_down)
                nodes[1].start()
                phase.note = f"node b killed (SIGKILL to master and workers), restarted after {plan.node_down:g} s"
            elif fault == "postgres_restart":
                postgres.stop()
                time.sleep(plan.postgres_down)
                postgres.start()
                phase.note = f"PostgreSQL stopped at once (immediate), started again after {plan.postgres_down:g} s"
            elif fault == "redis_stop":
                redis_server.stop()
                time.sleep(plan.redis_down)
                redis_server.start()
                phase.note = f"Redis stopped for {plan.redis_down:g} s, started again empty"
            elif fault == "smtp_stop":
                smtp.stop()
                time.sleep(plan.smtp_down)
                smtp.start()
                phase.note = f"the SMTP server stopped for {plan.smtp_down:g} s"
            elif fault == "clock_ahead":
                library, why_not = faketime_library()
                if library is None:
                    phase.note = f"not run: {why_not}"
                else:
                    nodes[2].stop()
                    nodes[2].start({**CLOCK_AHEAD, "LD_PRELOAD": library, "FAKETIME": f"+{plan.clock_ahead}s"})
                    time.sleep(plan.clock_for)
                    nodes[2].stop()
                    nodes[2].start()
                    phase.note = (
                        f"node c restarted with its wall clock {plan.clock_ahead} s ahead (libfaketime), for "
                        f"{plan.clock_for:g} s, then restarted on time"
                    )
            phase.fault_ended = now()
            self.log(f"{fault}: ends after {phase.fault_ended - phase.fault_started:.1f} s")
            time.sleep(plan.quiet)
            phase.ended = now()
        readiness.phase = None

    def _mail_accounting(self, database_url: str, smtp: Any, wait: float) -> dict[str, Any]:
        """Mails queued (the outbox's rows) against mails delivered (what the SMTP server received, by the outbox
        id in each Message-ID), waiting up to ``wait`` seconds for those still pending."""
        import sqlalchemy as sa

        engine = sa.create_engine(database_url.replace("postgresql+psycopg", "postgresql+psycopg"))
        deadline = time.monotonic() + wait
        try:
            while True:
                with engine.connect() as connection:
                    rows = connection.execute(
                        sa.text("SELECT id, status, kind, created_at FROM mail_outbox WHERE channel = 'mail'")
                    ).all()
                pending = [row for row in rows if row.status == "pending"]
                if not pending or time.monotonic() >= deadline:
                    break
                time.sleep(1)
        finally:
            engine.dispose()
        received = Counter(_outbox_id(m) for m in list(smtp.inbox.messages))
        queued = {row.id: row for row in rows}
        sent_not_received = [i for i, row in queued.items() if row.status == "sent" and i not in received]
        return {
            "queued": len(queued),
            "delivered": sum(1 for i in queued if i in received),
            "pending": len(pending),
            "failed": sum(1 for row in rows if row.status == "failed"),
            "delivered_twice": sum(1 for count in received.values() if count > 1),
            "lost": len(sent_not_received) + sum(1 for row in rows if row.status == "failed"),
            "by_kind": dict(Counter(row.kind for row in rows)),
            # each mail: when it was queued (seconds since the drill's start) and whether it arrived
            "each": [(_since(row.created_at, self.wall_started), row.id in received) for row in rows],
        }

    def _token_accounting(self, load: Load, deployment: Deployment) -> dict[str, Any]:
        """Every token a client received, introspected by the client that got it: active, or lost."""
        from concurrent.futures import ThreadPoolExecutor

        def active(issued: Issued) -> bool:
            auth = deployment.machine if issued.client == "machine" else deployment.web
            for _ in range(3):
                try:
                    answer = httpx.post(
                        deployment.proxy_url + "/oauth2/introspect", data={"token": issued.token}, auth=auth,
                        verify=deployment.tls, timeout=15,
                    )  # fmt: skip
                    if answer.status_code == 200:
                        return bool(answer.json().get("active"))
                except httpx.HTTPError:
                    pass
            return False

        issued = list(load.issued)
        with ThreadPoolExecutor(max_workers=8) as pool:
            answers = list(pool.map(active, issued))
        self.inactive = [i for i, ok in zip(issued, answers, strict=True) if not ok]
        return {"issued": len(issued), "active": sum(answers)}

    def report(self, load: Load, mail: dict[str, Any], tokens: dict[str, Any]) -> dict[str, Any]:
        phases = [summarise(phase, load, self.plan, self.inactive) for phase in self.phases]
        for phase, summary in zip(self.phases, phases, strict=True):
            mails = [arrived for at, arrived in mail["each"] if phase.started <= at < phase.ended]
            summary["mails"] = {"queued": len(mails), "delivered": sum(mails)}
        mail = {name: value for name, value in mail.items() if name != "each"}
        every = load.samples
        errors = [s for s in every if s.outcome != "ok"]
        duration = max(s.at for s in every) - min(s.at for s in every) if every else 0.0
        return {
            "plan": asdict(self.plan),
            "phases": phases,
            "whole": {
                "requests": len(every),
                "requests_per_second": round(len(every) / duration, 1) if duration else 0,
                "errors": len(errors),
                "error_rate": round(len(errors) / len(every), 5) if every else 0,
                "errors_by_kind": dict(Counter(f"{s.kind}:{s.outcome}" for s in errors)),
                "sign_ins": {"started": len(load.sign_ins), "completed": sum(ok for _, ok in load.sign_ins)},
            },
            "tokens": {
                **tokens,
                "lost": tokens["issued"] - tokens["active"],
                "lost_tokens": [
                    {
                        "at": round(i.at, 2),
                        "client": i.client,
                        **(claims := _claims(i.token)),
                        "record": self.records.get(str(claims.get("jti"))),
                    }
                    for i in self.inactive
                ],  # fmt: skip
            },
            "mail": mail,
            "events": self.events,
        }


class Readiness:
    """Each node's ``/readyz``, asked directly every 0.25 s during each fault's phase: what it answered."""

    def __init__(self, nodes: list[Node], started: float) -> None:
        self.nodes = nodes
        self.started = started
        self.phase: Phase | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(0.25):
            phase = self.phase
            if phase is None or phase.fault_ended:
                continue
            for node in self.nodes:
                try:
                    answer = httpx.get(node.url + "/readyz", timeout=2)
                    seen = "503" if answer.status_code == 503 else str(answer.json().get("status"))
                except (httpx.HTTPError, ValueError):
                    seen = "down"
                phase.readiness.setdefault(node.name, Counter())[seen] += 1


def _claims(token: str) -> dict[str, Any]:
    """What a lost token says of itself (its payload, unverified): which token, issued when, for whom."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError):
        return {}
    return {name: claims.get(name) for name in ("jti", "iat", "client_id", "sub")}


def _token_records(database_url: str, jtis: list[Any]) -> dict[str, Any]:
    """The access token rows of ``jtis`` (the lost tokens'), as the database holds them: why they are inactive."""
    import sqlalchemy as sa

    if not jtis:
        return {}
    engine = sa.create_engine(database_url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                sa.text(
                    "SELECT jti, issued_at, expires_at, revoked_at, grant_id FROM access_tokens WHERE jti IN :jtis"
                ).bindparams(sa.bindparam("jtis", expanding=True)),
                {"jtis": [str(j) for j in jtis]},
            ).all()
    finally:
        engine.dispose()
    return {row.jti: {name: str(value) for name, value in row._mapping.items()} for row in rows}


def _since(moment: Any, wall_started: float) -> float:
    """A database timestamp (UTC, naive or aware) as seconds since the drill's start."""
    import datetime

    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return float(moment.timestamp() - wall_started)


def _outbox_id(message: Any) -> str:
    """The outbox id a mail's Message-ID carries (service/mail/letters.py: make_msgid(idstring=the id))."""
    local = str(message.get("Message-ID", "")).strip("<>").split("@")[0]
    return local.rsplit(".", 1)[-1].replace("-", "_")


def percentile(values: list[float], share: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def summarise(phase: Phase, load: Load, plan: Plan, inactive: list[Issued]) -> dict[str, Any]:
    # A request belongs to the phase in which its answer (or error) came: one in flight when a fault starts is
    # the fault's.
    mine = [s for s in load.samples if phase.started <= s.at + s.seconds < phase.ended]
    samples = [s for s in mine if s.kind != "probe"]
    probes = [s for s in mine if s.kind == "probe"]
    errors = [s for s in samples + probes if s.outcome != "ok"]
    seconds = [s.seconds * 1000 for s in samples]
    dishes = [s.seconds * 1000 for s in samples if s.kind == "dishes"]
    issued = [i for i in load.issued if phase.started <= i.at < phase.ended]
    lost = [i for i in inactive if phase.started <= i.at < phase.ended]
    sign_ins = [ok for at, ok in load.sign_ins if phase.started <= at < phase.ended]
    # Seconds from the fault's end until the errors stop: the end of the last second with errors at or over 0.1 %.
    by_second: dict[int, list[Sample]] = {}
    for sample in samples + probes:
        by_second.setdefault(int(sample.at + sample.seconds), []).append(sample)
    bad = [
        second for second, group in by_second.items()
        if sum(s.outcome != "ok" for s in group) / len(group) >= 0.001 and second + 1 > phase.fault_ended
    ]  # fmt: skip
    recovered = max(0.0, max(bad) + 1 - phase.fault_ended) if bad else 0.0
    return {
        "phase": phase.name,
        "note": phase.note,
        "seconds": round(phase.ended - phase.started, 1),
        "fault_seconds": round(phase.fault_ended - phase.fault_started, 1),
        "requests": len(samples) + len(probes),
        "requests_per_second": round((len(samples) + len(probes)) / max(0.001, phase.ended - phase.started), 1),
        "errors": len(errors),
        "error_rate": round(len(errors) / max(1, len(samples) + len(probes)), 5),
        "errors_by_kind": dict(Counter(f"{s.kind}:{s.outcome}" for s in errors)),
        "idempotent_errors": sum(1 for s in errors if s.idempotent),
        "p50_ms": round(percentile(seconds, 0.50), 1),
        "p99_ms": round(percentile(seconds, 0.99), 1),
        "dishes_p50_ms": round(percentile(dishes, 0.50), 1),
        "dishes_p99_ms": round(percentile(dishes, 0.99), 1),
        "seconds_to_recover": round(recovered, 1),
        "tokens_issued": len(issued),
        "tokens_active": len(issued) - len(lost),
        "sign_ins": {"started": len(sign_ins), "completed": sum(sign_ins)},
        "readiness": {name: dict(counts) for name, counts in phase.readiness.items()},
        "rate_limit": probe_check(phase, load, plan),
    }


def probe_check(phase: Phase, load: Load, plan: Plan) -> dict[str, Any]:
    """The probe key's admissions against the limit's documented approximation (docs/nodes.md): while Redis is up,
    never more than twice the limit in any 60 s, and never past the limit within one counting minute; while it
    is away, answered without a limit (200, RateLimit-Remaining equal to the limit), not refused or failed. Redis
    comes back empty, so its counting starts afresh: the windows are checked on each side of the outage."""
    probes = [p for p in load.probe if phase.started <= p[0] < phase.ended]
    outage = (phase.fault_started, phase.fault_ended) if phase.name == "redis_stop" else None
    segments: list[list[tuple[float, int, int | None]]] = [[]]
    during: list[tuple[float, int, int | None]] = []
    for probe in probes:
        if outage and outage[0] <= probe[0] < outage[1]:
            during.append(probe)
            if segments[-1]:
                segments.append([])
        else:
            segments[-1].append(probe)
    most = 0
    for segment in segments:
        admitted = [at for at, status, _ in segment if status == 200]
        start = 0
        for end, at in enumerate(admitted):
            while admitted[start] < at - 60:
                start += 1
            most = max(most, end - start + 1)
    answered = sum(1 for _, status, _ in during if status == 200)
    open_answers = sum(1 for _, status, remaining in during if status == 200 and remaining == plan.rate_limit)
    # A 503 (the database away: the key cannot be checked) is an error of its own, counted as such, not the limit's.
    within = most <= 2 * plan.rate_limit and all(status in (200, 429) for _, status, _ in during)
    return {
        "probe_sent": len(probes),
        "admitted": sum(1 for _, status, _ in probes if status == 200),
        "refused_429": sum(1 for _, status, _ in probes if status == 429),
        "most_admitted_in_60s": most,
        "limit": plan.rate_limit,
        "during_outage": {"sent": len(during), "answered": answered, "answered_open": open_answers} if outage else None,
        "within_documented_approximation": within,
    }


def table(results: dict[str, Any]) -> str:
    """The per-phase table docs/operations.md shows ("What survives what")."""
    lines = [
        "| phase | requests (req/s) | errors by kind as clients saw them | error rate | p50 / p99 ms (dishes) "
        "| s to < 0.1 % "
        "| tokens issued / active | mails queued / delivered | sign-ins done / started | readiness seen (per node) "
        "| rate limit |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in results["phases"]:
        errors = ", ".join(f"{kind} {count}" for kind, count in sorted(p["errors_by_kind"].items())) or "none"
        readiness = (
            "; ".join(
                f"{node}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
                for node, counts in sorted(p["readiness"].items())
            )
            or "–"
        )
        limit = p["rate_limit"]
        held = "held" if limit["within_documented_approximation"] else "**broken**"
        limit_text = f"{held}: {limit['most_admitted_in_60s']} admitted in 60 s at most (limit {limit['limit']})"
        if limit["during_outage"]:
            outage = limit["during_outage"]
            limit_text += (
                f"; Redis away: {outage['answered']} of {outage['sent']} answered, {outage['answered_open']} "
                "without a limit, the rest from permits already held"
            )
        lines.append(
            f"| {p['phase']} | {p['requests']} ({p['requests_per_second']:.0f}) | {errors} | "
            f"{p['error_rate'] * 100:.2f} % | {p['p50_ms']} / {p['p99_ms']} "
            f"({p['dishes_p50_ms']} / {p['dishes_p99_ms']}) | "
            f"{p['seconds_to_recover']} | "
            f"{p['tokens_issued']} / {p['tokens_active']} | {p['mails']['queued']} / {p['mails']['delivered']} | "
            f"{p['sign_ins']['completed']} / {p['sign_ins']['started']} "
            f"| {readiness} | {limit_text} |"
        )
    whole, mail, tokens = results["whole"], results["mail"], results["tokens"]
    lines += [
        "",
        f"Whole drill: {whole['requests']} requests ({whole['requests_per_second']:.0f} a second), {whole['errors']} "
        f"errors ({whole['error_rate'] * 100:.2f} %); tokens issued {tokens['issued']}, introspected active "
        f"{tokens['active']}, lost {tokens['lost']}; mails queued {mail['queued']}, delivered {mail['delivered']}, "
        f"pending {mail['pending']}, failed {mail['failed']}, delivered twice {mail['delivered_twice']}, lost "
        f"{mail['lost']}; sign-ins completed {whole['sign_ins']['completed']} of {whole['sign_ins']['started']}.",
    ]
    return "\n".join(lines)


def run(plan: Plan, faults: tuple[str, ...] = FAULTS) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="drill-") as folder:
        return Drill(plan, Path(folder), faults).run()


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench drill", description=__doc__.splitlines()[0])
    parser.add_argument("--short", action="store_true", help="each fault once, for seconds (what CI runs)")
    parser.add_argument("--only", choices=FAULTS, action="append", help="this fault only (repeatable)")
    parser.add_argument("--rate", type=float, help="requests a second the load aims at")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args(argv)
    plan = SHORT if args.short else FULL
    if args.rate:
        from dataclasses import replace

        plan = replace(plan, rate=args.rate)
    results = run(plan, tuple(args.only or FAULTS))
    args.out.mkdir(parents=True, exist_ok=True)
    name = "drill-short" if args.short else "drill"
    (args.out / f"{name}.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    (args.out / f"{name}.md").write_text(table(results) + "\n", encoding="utf-8")
    print(table(results))
    print(f"wrote {args.out / (name + '.json')}, {args.out / (name + '.md')}", file=sys.stderr)
