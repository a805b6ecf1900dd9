"""``python -m bench.stalled_bodies [--root DIR] [--workers N]``: what stalled request bodies cost a live ``serve``.

A drill, never a test: it prints figures and asserts nothing. It starts ``regional-menus serve`` (one uvicorn
process, or ``--workers N`` under gunicorn; SQLite, in a temporary folder) from the source tree ``--root`` (this
checkout by default; give an export of an older commit to measure before a change), with an organization, a
``client_credentials`` client and an API key made by the command line, then:

1. opens ``--connections`` (160) connections that each send ``POST --path`` (``/oauth2/token``) with
   ``Content-Length: 60000`` and then one byte of the body every ``--every`` (2) seconds: about 200 bytes per
   connection, no credentials;
2. once they are all open, sends 10 menus requests with the valid key (``GET /v1/menus/regions``) and 3 token
   requests (``client_credentials``, Basic), each on a connection of its own with a 10 s timeout, and notes each
   answer's status (or the error);
3. watches the stalled connections for ``--observe`` (60) seconds, or until the server has closed them all: when
   each was closed (seconds from its head), and the status line the server sent before closing, if any;
4. reports the server's resident memory (the server and its workers) before, at its highest while the
   connections were open, and after they were gone, and ``regional_menus_shed_requests_total`` before and after.

Before and after a change::

    git archive <commit> | tar -x -C /tmp/before
    python -m bench.stalled_bodies --root /tmp/before
    python -m bench.stalled_bodies --root /tmp/before --workers 2
    python -m bench.stalled_bodies
    python -m bench.stalled_bodies --workers 2
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import select
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from bench.servers import free_port, process_tree, rss_kib

DECLARED = 60_000  # bytes of body each stalled connection declares (under the identity forms' 64 KiB cap)
PROBE_TIMEOUT = 10.0  # seconds each probe waits for its answer


class Service:
    """``regional-menus`` from ``root`` in ``folder``: its commands, and ``serve`` in a session of its own."""

    def __init__(self, root: Path, folder: Path) -> None:
        self.folder = folder
        self.env = {
            **os.environ,
            "PYTHONPATH": str(root),
            "MENUS_DATABASE_URL": f"sqlite:///{folder}/state.sqlite3",
        }
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0

    def cli(self, *args: str, stdin: str | None = None) -> Any:
        done = subprocess.run(
            [sys.executable, "-m", "service", *args, "--json"],
            cwd=self.folder,
            env=self.env,
            input=stdin,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"regional-menus {' '.join(args)}: {done.stderr}")
        return json.loads(done.stdout)

    def start(self, workers: int) -> None:
        self.port = free_port()
        url = f"http://127.0.0.1:{self.port}"
        env = {**self.env, "MENUS_BASE_URL": url, "MENUS_ISSUER": url}
        command = [sys.executable, "-m", "service", "serve", "--port", str(self.port)]
        if workers > 1:
            command += ["--workers", str(workers)]
        log = (self.folder / "server.log").open("wb")
        self.process = subprocess.Popen(
            command, cwd=self.folder, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(url + "/healthz", timeout=1).close()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError((self.folder / "server.log").read_text())

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()

    def rss_mib(self) -> float:
        """Resident memory of the server and every process under it (gunicorn's workers)."""
        assert self.process is not None
        return round(sum(rss_kib(pid) for pid in process_tree(self.process.pid)) / 1024, 1)

    def shed(self) -> float:
        """``regional_menus_shed_requests_total``, every reason summed (what a scrape of /metrics says)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as answer:
            text = answer.read().decode()
        return sum(float(m) for m in re.findall(r"^regional_menus_shed_requests_total\{[^}]*\} (\S+)$", text, re.M))


class Stalled:
    """One connection that sends a head and then its body a byte at a time."""

    def __init__(self, port: int, path: str) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.sock.sendall(
            b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            b"Content-Length: %d\r\n\r\ng" % (path.encode(), DECLARED)
        )
        self.sock.setblocking(False)
        self.opened = time.monotonic()
        self.closed_after: float | None = None  # seconds from the head to the server's close
        self.answer = b""

    def poll(self) -> None:
        """Read what the server sent; note when it closed."""
        if self.closed_after is not None:
            return
        try:
            while chunk := self.sock.recv(65536):
                self.answer += chunk
        except BlockingIOError:
            return
        except OSError:
            pass
        self.closed_after = time.monotonic() - self.opened  # EOF or reset
        self.sock.close()

    def trickle(self) -> None:
        if self.closed_after is None:
            try:
                self.sock.send(b"a")
            except BlockingIOError:
                pass
            except OSError:
                self.poll()

    @property
    def status(self) -> str:
        line = self.answer.split(b"\r\n", 1)[0].decode("latin-1")
        return line.split(" ", 2)[1] if line.startswith("HTTP/1.1 ") else ("closed" if self.answer == b"" else "?")


def probe(url: str, headers: dict[str, str], data: bytes | None = None) -> str:
    started = time.perf_counter()
    try:
        request = urllib.request.Request(url, data=data, headers=headers)
        with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT) as answer:
            answer.read()
            status = str(answer.status)
    except urllib.error.HTTPError as error:
        status = str(error.code)
    except OSError as error:
        status = type(error).__name__
    return f"{status} ({(time.perf_counter() - started) * 1000:.0f} ms)"


def drill(service: Service, args: argparse.Namespace) -> dict[str, Any]:
    org = service.cli("orgs", "create", "--name", "Drill")
    client = service.cli(
        "clients", "create", "--name", "Drill job", "--org", org["id"], "--auth-method", "client_secret_basic",
        "--grant", "client_credentials", "--scope", "members:read",
    )  # fmt: skip
    key = service.cli("api-keys", "create", "--name", "drill")["key"]
    service.start(args.workers)
    base = f"http://127.0.0.1:{service.port}"
    basic = base64.b64encode(f"{client['client_id']}:{client['client_secret']}".encode()).decode()
    token_headers = {"Authorization": f"Basic {basic}", "Content-Type": "application/x-www-form-urlencoded"}
    menus_headers = {"Authorization": f"Bearer {key}"}
    warm = [probe(base + "/v1/menus/regions", menus_headers) for _ in range(3)]  # each worker's first answers
    warm += [probe(base + "/oauth2/token", token_headers, b"grant_type=client_credentials") for _ in range(2)]
    rss_before, shed_before = service.rss_mib(), service.shed()

    stalled = [Stalled(service.port, args.path) for _ in range(args.connections)]
    rss_peak = service.rss_mib()
    stop = threading.Event()

    def watch() -> None:
        nonlocal rss_peak
        last_trickle = time.monotonic()
        while not stop.is_set():
            open_ones = [each for each in stalled if each.closed_after is None]
            if not open_ones:
                return
            readable, _, _ = select.select([each.sock for each in open_ones], [], [], 0.05)
            for each in open_ones:
                if each.sock in readable:
                    each.poll()
            if time.monotonic() - last_trickle >= args.every:
                last_trickle = time.monotonic()
                for each in open_ones:
                    each.trickle()
                rss_peak = max(rss_peak, service.rss_mib())

    watcher = threading.Thread(target=watch)
    watcher.start()
    time.sleep(1.0)  # every head read by the server
    started = time.monotonic()
    menus = [probe(base + "/v1/menus/regions", menus_headers) for _ in range(10)]
    tokens = [probe(base + "/oauth2/token", token_headers, b"grant_type=client_credentials") for _ in range(3)]
    probes_seconds = time.monotonic() - started
    watcher.join(timeout=max(0.0, args.observe - (time.monotonic() - started)))
    stop.set()
    watcher.join()
    rss_peak = max(rss_peak, service.rss_mib())
    closed = sorted(each.closed_after for each in stalled if each.closed_after is not None)
    statuses: dict[str, int] = {}
    for each in stalled:
        key_ = each.status if each.closed_after is not None else "still open"
        statuses[key_] = statuses.get(key_, 0) + 1
    for each in stalled:
        if each.closed_after is None:
            each.sock.close()
    time.sleep(1.0)
    return {
        "workers": args.workers,
        "path": args.path,
        "stalled_connections": args.connections,
        "warm_up": warm,
        "menus_probes": menus,
        "token_probes": tokens,
        "probes_took_s": round(probes_seconds, 2),
        "stalled_answers": statuses,
        "closed_by_server": len(closed),
        "closed_after_s": (
            {
                "min": round(closed[0], 2),
                "median": round(statistics.median(closed), 2),
                "max": round(closed[-1], 2),
            }
            if closed
            else None
        ),
        "observed_s": args.observe,
        "rss_mib": {"before": rss_before, "peak": rss_peak, "after": service.rss_mib()},
        "shed_requests": {"before": shed_before, "after": service.shed()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.stalled_bodies", description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1], help="source tree to run")
    parser.add_argument("--workers", type=int, default=1, help="serve --workers N (1: one uvicorn process)")
    parser.add_argument("--connections", type=int, default=160, help="stalled connections")
    parser.add_argument("--path", default="/oauth2/token", help="where the stalled bodies are posted (/sign-in…)")
    parser.add_argument("--every", type=float, default=2.0, help="seconds between two bytes of a stalled body")
    parser.add_argument("--observe", type=float, default=60.0, help="seconds to watch the stalled connections")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="stalled-bodies-") as folder:
        service = Service(args.root.resolve(), Path(folder))
        service.cli("db", "upgrade")
        try:
            figures = {"root": str(args.root), **drill(service, args)}
        finally:
            service.stop()
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
