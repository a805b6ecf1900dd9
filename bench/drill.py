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
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from contextlib import ExitStack
from dataclasses import asdict
from pathlib import Path
from typing import Any

import httpx

from bench.drill_load import PASSWORD, REDIRECT_URI, Deployment, Issued, Load
from bench.drill_parts import CLOCK_AHEAD, Node, RedisServer, faketime_library
from bench.drill_plan import FAULTS, FULL, SHORT, Plan
from bench.drill_report import Phase, claims_of, outbox_id, since_start, summarise, table, token_records
from bench.servers import free_port

ROOT = Path(__file__).resolve().parent.parent


# The drill


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
        from identity.keys.sealing import new_key
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
            for node in nodes:
                stack.callback(node.stop)  # whatever happens next, every node started is stopped
            starting = [threading.Thread(target=node.start) for node in nodes]
            for thread in starting:
                thread.start()
            for thread in starting:
                thread.join()
            if not all(node.process is not None and node.process.poll() is None for node in nodes):
                raise RuntimeError("a node did not start (its server.log says why)")
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
            self.records = token_records(postgres.url, [claims_of(i.token).get("jti") for i in self.inactive])
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
                readiness.answered_by_each(phase)
                nodes[1].start()
                phase.note = f"node b killed (SIGKILL to master and workers), restarted after {plan.node_down:g} s"
            elif fault == "postgres_restart":
                postgres.stop()
                time.sleep(plan.postgres_down)
                readiness.answered_by_each(phase)
                postgres.start()
                phase.note = f"PostgreSQL stopped at once (immediate), started again after {plan.postgres_down:g} s"
            elif fault == "redis_stop":
                redis_server.stop()
                time.sleep(plan.redis_down)
                readiness.answered_by_each(phase)
                redis_server.start()
                phase.note = f"Redis stopped for {plan.redis_down:g} s, started again empty"
            elif fault == "smtp_stop":
                smtp.stop()
                time.sleep(plan.smtp_down)
                readiness.answered_by_each(phase)
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
        # Read after the rows: a mail the SMTP server took between the two reads is delivered, not also pending (its
        # row is marked sent a moment after the server's answer, or after its claim's lease if its node was killed).
        received = Counter(outbox_id(m) for m in list(smtp.inbox.messages))
        pending = [row for row in pending if row.id not in received]
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
            "each": [(since_start(row.created_at, self.wall_started), row.id in received) for row in rows],
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
                        **(claims := claims_of(i.token)),
                        "record": self.records.get(str(claims.get("jti"))),
                    }
                    for i in self.inactive
                ],  # fmt: skip
            },
            "mail": mail,
            "events": self.events,
        }


class Readiness:
    """Each node's ``/readyz``, asked directly every 0.25 s during each fault's phase, one thread a node (a node
    slow to answer never delays what the others are asked): what each answered while the fault lasted."""

    LONGEST_HOLD = 15.0  # seconds a fault is held at most for every node to answer once

    def __init__(self, nodes: list[Node], started: float) -> None:
        self.nodes = nodes
        self.started = started
        self.phase: Phase | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._run, args=(node,), daemon=True) for node in nodes]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=10)

    def answered_by_each(self, phase: Phase) -> None:
        """Hold the fault until every node has answered (or failed to answer) once during it, at most
        ``LONGEST_HOLD`` seconds: on a loaded machine a planned second can pass before a node is asked at all."""
        deadline = time.monotonic() + self.LONGEST_HOLD
        while time.monotonic() < deadline:
            with self._lock:
                if all(phase.readiness.get(node.name) for node in self.nodes):
                    return
            time.sleep(0.05)

    def _run(self, node: Node) -> None:
        while not self._stop.wait(0.25):
            phase = self.phase
            if phase is None or phase.fault_ended:
                continue
            try:
                answer = httpx.get(node.url + "/readyz", timeout=2)
                seen = "503" if answer.status_code == 503 else str(answer.json().get("status"))
            except (httpx.HTTPError, ValueError):
                seen = "down"
            with self._lock:
                if not phase.fault_ended:  # an answer that came after the fault ended is not the fault's
                    phase.readiness.setdefault(node.name, Counter())[seen] += 1


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
