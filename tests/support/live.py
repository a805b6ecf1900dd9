"""Run the service as users run it: ``regional-menus serve`` on a free port, real sockets."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.command_line import command

ROOT = Path(__file__).resolve().parents[2]  # the project's root
REDIRECT_URI = "http://127.0.0.1:9/callback"  # registered for the live service's clients, never fetched


@dataclass
class LiveService:
    url: str
    workdir: Path
    env: dict[str, str]  # the server's environment (its database, its settings)
    command_errors: list[str] = field(default_factory=list)  # what each command wrote on stderr (its audit lines)
    process: subprocess.Popen[bytes] | None = None  # the server (for the tests that signal or kill it)

    def cli(self, *args: str, stdin: str | None = None) -> str:
        """The command line, in the server's folder and environment: on the server's database. Run in this process
        (tests/support/command_line.py: its entry point, its own standard streams and environment), as the server's
        neighbour would run ``regional-menus``: a new interpreter for each was a second of CPU, a hundred times a
        run. tests/system/test_cli.py keeps the commands that need a process of their own."""
        with contextlib.chdir(self.workdir):
            done = command(*args, stdin=stdin or "", env=self.env)
        if done.returncode != 0:
            raise RuntimeError(done.stderr)
        self.command_errors.append(done.stderr)
        return done.stdout

    def cli_json(self, *args: str, stdin: str | None = None) -> Any:
        """A command run with ``--json``: its output, parsed."""
        return json.loads(self.cli(*args, "--json", stdin=stdin))

    def create_user(self, email: str, name: str, password: str, *org_ids: str) -> dict[str, Any]:
        """A user in ``org_ids``, made with the command line (the password on standard input)."""
        orgs = [arg for org_id in org_ids for arg in ("--org", org_id)]
        user: dict[str, Any] = self.cli_json(
            "users", "create", "--email", email, "--name", name, "--password-stdin", *orgs, stdin=password + "\n"
        )
        return user

    def two_organizations(self, password: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]]:
        """Acme Foods and Beta Bakery, with Ana (a member of Acme only) and Bo (a member of both):
        ``acme, beta, ana, bo``, for the tests of the organization picker."""
        acme = self.cli_json("orgs", "create", "--name", "Acme Foods")
        beta = self.cli_json("orgs", "create", "--name", "Beta Bakery")
        ana = self.create_user("ana@example.com", "Ana Lima", password, acme["id"])
        bo = self.create_user("bo@example.com", "Bo Berg", password, acme["id"], beta["id"])
        return acme, beta, ana, bo

    def members_reader(self, org_name: str, client_name: str) -> dict[str, Any]:
        """A client of a new organization with Basic credentials that may read its members (client_credentials,
        members:read), made with the command line: its ``client_id`` and ``client_secret``."""
        org = self.cli_json("orgs", "create", "--name", org_name)
        client: dict[str, Any] = self.cli_json(
            "clients", "create", "--name", client_name, "--org", org["id"], "--auth-method", "client_secret_basic",
            "--grant", "client_credentials", "--scope", "members:read",
        )  # fmt: skip
        return client

    def api_key(self, name: str = "live") -> str:
        return str(json.loads(self.cli("api-keys", "create", "--json", "--name", name))["key"])


@dataclass(frozen=True)
class LiveProvider:
    """A live service as the identity provider of a module's end-to-end tests, with the organizations and
    users of ``LiveService.two_organizations``; each module adds its own client to it."""

    service: LiveService
    acme: dict[str, Any]  # organization "Acme Foods"
    beta: dict[str, Any]  # organization "Beta Bakery"
    ana: dict[str, Any]  # a user of Acme Foods only
    bo: dict[str, Any]  # a user of both organizations

    @property
    def issuer(self) -> str:
        return self.service.url


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def live_service(
    workdir: Path, env: dict[str, str] | None = None, *, args: tuple[str, ...] = (), port: int | None = None
) -> Iterator[LiveService]:
    """``db upgrade``, then ``serve --port PORT *args`` (a free port unless given), until it answers. Outbound URIs
    may reach loopback (``MENUS_OUTBOUND_LOOPBACK``), as in development: the tests' relying parties listen there.
    ``MENUS_MAX_QUEUE_WAIT``: 5 s, not 0.5 (the admission's shedding is tested in tests/unit/test_admission.py and
    tests/api/test_edge.py): the server shares two cores with the suite's other workers, and one left unscheduled
    for half a second shed a sequential client's page 503 (twice in a day's runs), which tests of other rules
    count as their failure. A test passes its own in ``env``."""
    environment = {**os.environ, "MENUS_OUTBOUND_LOOPBACK": "on", "MENUS_MAX_QUEUE_WAIT": "5", **(env or {})}
    with contextlib.chdir(workdir):  # in this process, as LiveService.cli runs every command
        upgraded = command("db", "upgrade", env=environment)
    if upgraded.returncode != 0:
        raise RuntimeError(upgraded.stderr)
    port = port or free_port()
    log = (workdir / "server.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "service", "serve", "--port", str(port), *args],
        cwd=workdir,
        env=environment,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{url}/v1/openapi.json", timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError((workdir / "server.log").read_text()) from None
                time.sleep(0.1)
        yield LiveService(url, workdir, environment, process=process)
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()
