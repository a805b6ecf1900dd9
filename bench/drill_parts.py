"""The drill's parts (bench/drill.py): a node, a Redis server of its own, the clock moved by libfaketime."""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.servers import free_port


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
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                if httpx.get(self.url + "/readyz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        self._end_group()  # whatever of it is left (a worker the master left behind) goes with it
        raise RuntimeError(f"node {self.name} is not ready: {(self.folder / 'server.log').read_text()[-2000:]}")

    def _end_group(self) -> None:
        assert self.process is not None
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()

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
            self._end_group()


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
