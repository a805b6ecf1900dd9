"""``python -m bench.heads [--root DIR]``: what oversized and slow request heads cost a live ``serve``.

A measurement, never a test: it prints figures and asserts nothing. It starts ``regional-menus serve`` (one
uvicorn process, SQLite, in a temporary folder) from the source tree ``--root`` (this checkout by default; give
an export of an older commit to measure before a change), then:

1. **Big heads**: ten connections at once each send a request whose one header line is 16 MiB (in 64 KiB
   writes), then wait for the answer; the server's resident memory before, at its peak (``VmHWM``) and after.
2. **Slow heads**: 200 connections each send a request line and then one header line a second, never ending
   the head, while one client sends ``GET /healthz`` back to back for ``--seconds``; that client's latency
   (p50, p99), its errors, and how many slow connections the server had closed by the end.

The figures of issue 26 were made with ``python -m bench.heads`` against this checkout and against
``git archive <commit> | tar -x -C /tmp/before`` with ``--root /tmp/before``.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.servers import free_port

MIB = 1024 * 1024


def start(root: Path, workdir: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], int]:
    environment = {**os.environ, "PYTHONPATH": str(root), **env}
    command = [sys.executable, "-m", "service"]
    subprocess.run([*command, "db", "upgrade"], cwd=workdir, env=environment, check=True, capture_output=True)
    port = free_port()
    log = (workdir / "server.log").open("w")
    process = subprocess.Popen(
        [*command, "serve", "--port", str(port)], cwd=workdir, env=environment, stdout=log, stderr=log
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1).close()
            return process, port
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError((workdir / "server.log").read_text()) from None
            time.sleep(0.1)


def memory_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise LookupError(field)


def big_head(port: int, outcomes: list[str]) -> None:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ")
            chunk = b"a" * (64 * 1024)
            for _ in range(16 * MIB // len(chunk)):
                sock.sendall(chunk)
            sock.sendall(b"\r\nConnection: close\r\n\r\n")
            answer = sock.recv(64)
            outcomes.append(answer.split(b"\r\n", 1)[0].decode("latin-1") or "closed")
    except OSError as error:
        outcomes.append(type(error).__name__)


def measure_big_heads(pid: int, port: int) -> dict[str, Any]:
    before = memory_kib(pid, "VmRSS")
    outcomes: list[str] = []
    threads = [threading.Thread(target=big_head, args=(port, outcomes)) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    time.sleep(1)
    return {
        "rss_before_mib": round(before / 1024, 1),
        "rss_peak_mib": round(memory_kib(pid, "VmHWM") / 1024, 1),
        "rss_after_mib": round(memory_kib(pid, "VmRSS") / 1024, 1),
        "answers": sorted(outcomes),
    }


def measure_slow_heads(port: int, seconds: float, connections: int) -> dict[str, Any]:
    slow = []
    for _ in range(connections):
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        slow.append(sock)
    stop = time.monotonic() + seconds
    closed: set[int] = set()

    def trickle() -> None:
        n = 0
        while time.monotonic() < stop:
            for index, sock in enumerate(slow):
                if index in closed:
                    continue
                try:
                    sock.sendall(b"X-Slow-%d: 1\r\n" % n)
                except OSError:
                    closed.add(index)
            n += 1
            time.sleep(1)

    trickler = threading.Thread(target=trickle)
    trickler.start()
    latencies: list[float] = []
    errors = 0
    while time.monotonic() < stop:
        started = time.perf_counter()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as answer:
                answer.read()
            latencies.append((time.perf_counter() - started) * 1000)
        except OSError:
            errors += 1
    trickler.join()
    for sock in slow:
        sock.close()
    quantiles = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [0.0] * 99
    return {
        "seconds": seconds,
        "slow_connections": connections,
        "slow_closed_by_server": len(closed),
        "requests": len(latencies),
        "errors": errors,
        "p50_ms": round(quantiles[49], 2),
        "p99_ms": round(quantiles[98], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1], help="source tree to run")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of the slow-head run")
    parser.add_argument("--connections", type=int, default=200, help="slow connections")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        process, port = start(args.root, Path(folder), {})
        try:
            figures = {
                "root": str(args.root),
                "big_heads": measure_big_heads(process.pid, port),
                "slow_heads": measure_slow_heads(port, args.seconds, args.connections),
            }
        finally:
            process.terminate()
            process.wait(timeout=30)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
