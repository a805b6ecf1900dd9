"""Start the service as users run it (``regional-menus db upgrade``, ``serve``) and the reference, on real sockets."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn

BIN = Path(sys.executable).parent
# MENUS_RATE_LIMIT for the benchmark, per key: with the 16 keys the load takes in turn, 26,000 requests a second
# before any window fills, far above what this machine serves; the sliding window counter's cost does not
# depend on it (two counters a key).
UNTHROTTLED = 100_000


def run_app(factory: str, build: Callable[[], Any], *, workers: int, port: int, log_level: str) -> None:
    """Serve an app of ``bench/`` with uvicorn: several workers import ``factory`` (uvicorn needs an import string
    for them), one serves ``build()`` in this process."""
    if workers > 1:
        uvicorn.run(factory, factory=True, workers=workers, port=port, lifespan="off")
    else:
        uvicorn.run(build(), host="127.0.0.1", port=port, log_level=log_level, lifespan="off")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Workspace:
    """A fresh folder and state database shared by the service, its command line and the reference."""

    folder: Path
    database_url: str

    def env(self, port: int | None = None) -> dict[str, str]:
        env = {**os.environ, "MENUS_DATABASE_URL": self.database_url, "MENUS_RATE_LIMIT": str(UNTHROTTLED)}
        if port is not None:
            env["MENUS_BASE_URL"] = env["MENUS_ISSUER"] = f"http://127.0.0.1:{port}"
        return env

    def cli(self, *args: str, stdin: str | None = None) -> Any:
        """``regional-menus ARGS --json`` in the workspace; its output, parsed."""
        done = subprocess.run(
            [str(BIN / "regional-menus"), *args, "--json"],
            cwd=self.folder,
            env=self.env(),
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"regional-menus {' '.join(args)}: {done.stderr}")
        return json.loads(done.stdout)


@dataclass
class Server:
    name: str
    command: list[str]
    port: int
    env: dict[str, str]
    folder: Path
    ready_path: str
    ready_headers: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    startup_seconds: float = 0.0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Server:
        log = (self.folder / f"{self.name}.log").open("wb")
        started = time.perf_counter()
        self.process = subprocess.Popen(
            self.command, cwd=self.folder, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = started + 60
        while time.perf_counter() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited; see {log.name}")
            if _answers_200(self.url + self.ready_path, self.ready_headers):
                self.startup_seconds = time.perf_counter() - started
                return self
            time.sleep(0.02)
        self.__exit__()
        raise RuntimeError(f"{self.name} did not answer 200 within 60 s; see {log.name}")

    def __exit__(self, *_: object) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)  # its own session: the server and the workers it started
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def rss_mib(self) -> float:
        """Resident memory of the server and every process under it (workers)."""
        assert self.process is not None
        return sum(rss_kib(pid) for pid in process_tree(self.process.pid)) / 1024

    def pss_mib(self) -> float:
        """The memory the server and every process under it use together: their proportional set sizes, each page
        shared by several of them counted once in all. The sum of their resident memories counts a shared page in
        each: the pages gunicorn's workers share with the master they were forked from (``serve --workers``)."""
        assert self.process is not None
        return sum(pss_kib(pid) for pid in process_tree(self.process.pid)) / 1024

    def figures(self) -> dict[str, float]:
        """Its start-up time and its memory now, for a results file's ``processes``."""
        return {
            "startup_seconds": round(self.startup_seconds, 3),
            "rss_mib": round(self.rss_mib(), 1),
            "pss_mib": round(self.pss_mib(), 1),
        }

    def cpu_seconds(self) -> float:
        """CPU time (user and system) the server and every process under it have used so far."""
        assert self.process is not None
        return sum(_cpu_seconds(pid) for pid in process_tree(self.process.pid))


def _answers_200(url: str, headers: dict[str, str]) -> bool:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def process_tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime (proc(5) fields 14, 15)


def rss_kib(pid: int) -> int:
    """A process's resident memory (proc(5), ``status``); 0 once it is gone."""
    return _proc_kib(pid, "status", "VmRSS")


def pss_kib(pid: int) -> int:
    """A process's proportional set size (proc(5), ``smaps_rollup``): its resident pages, each shared one divided
    by the number of processes that share it; 0 once it is gone."""
    return _proc_kib(pid, "smaps_rollup", "Pss")


def _proc_kib(pid: int, file: str, field: str) -> int:
    """The kiB of ``field`` in ``/proc/PID/FILE``; 0 when the process or the field is not there."""
    try:
        for line in Path(f"/proc/{pid}/{file}").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def service_command(port: int, workers: int, cpus: str | None) -> list[str]:
    """``regional-menus serve`` as users run it: one uvicorn process, or ``--workers N`` (gunicorn)."""
    command = [str(BIN / "regional-menus"), "serve", "--port", str(port)]
    if workers > 1:
        command += ["--workers", str(workers)]
    return ["taskset", "-c", cpus, *command] if cpus is not None else command


def ceiling_command(port: int, body_file: Path, workers: int, cpus: str | None) -> list[str]:
    """``bench.ceiling``: the same constant bytes from a bare Starlette route, on the same server (uvicorn)."""
    command = [sys.executable, "-m", "bench.ceiling", "--port", str(port), "--body-file", str(body_file)]
    command += ["--workers", str(workers)]
    return ["taskset", "-c", cpus, *command] if cpus is not None else command


def uvicorn_factory_command(factory: str, port: int, cpus: str | None) -> list[str]:
    """``uvicorn MODULE:FACTORY --factory`` with the service's protocol and loop (httptools, uvloop), no access log:
    a stock app of the bench (``bench.introspection_floor``'s sides, ``bench.stack_alone``)."""
    command = [sys.executable, "-m", "uvicorn", factory, "--factory", "--port", str(port), "--http", "httptools",
               "--loop", "uvloop", "--no-access-log", "--log-level", "warning"]  # fmt: skip
    return ["taskset", "-c", cpus, *command] if cpus is not None else command


def reference_command(port: int, database_url: str, workers: int, cpus: str | None, *, lean: bool = False) -> list[str]:
    """``bench.reference``: the hand-written reference; ``lean``: its lean route (key from memory, no limit)."""
    command = [sys.executable, "-m", "bench.reference", "--port", str(port), "--database-url", database_url]
    command += ["--rate-limit", str(UNTHROTTLED), "--workers", str(workers)] + (["--lean"] if lean else [])
    return ["taskset", "-c", cpus, *command] if cpus is not None else command
