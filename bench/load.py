"""Load from wrk: one bounded run, its figures parsed from wrk's report and our Lua ``done`` lines."""

from __future__ import annotations

import re
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

LUA = Path(__file__).with_name("lua")


@dataclass(frozen=True)
class Run:
    requests_per_second: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    requests: int
    errors: int  # socket errors and non-2xx/3xx answers: a run with errors is reported, never hidden
    wrapped: int  # times a unique-request list ran out and restarted
    non_2xx: int = 0  # answers other than 2xx/3xx (the overload run: the 503s a worker sheds)
    timeouts: int = 0  # requests unanswered within wrk's --timeout
    max_ms: float = 0.0  # the slowest answer
    past_2s: int = 0  # answers later than 2 s (from wrk's percentiles: paths.lua)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def wrk(
    url: str,
    *,
    seconds: float,
    connections: int,
    threads: int,
    headers: dict[str, str],
    script: str,
    script_args: list[str],
    cpus: str | None = None,
    timeout: str = "10s",
) -> Run:
    """Run wrk against ``url`` (pinned to ``cpus`` when given) and parse its report."""
    command = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{max(1, round(seconds))}s", "--timeout", timeout]
    for name, value in headers.items():
        command += ["-H", f"{name}: {value}"]
    command += ["-s", str(LUA / script), url, "--", *script_args]
    if cpus is not None:
        command = ["taskset", "-c", cpus, *command]
    output = subprocess.run(command, capture_output=True, text=True, check=True, timeout=seconds + 60).stdout
    return parse(output)


def parse(output: str) -> Run:
    def number(pattern: str, default: float = 0.0) -> float:
        found = re.search(pattern, output, re.MULTILINE)
        return float(found.group(1)) if found else default

    socket_errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
    errors = sum(int(n) for n in socket_errors.groups()) if socket_errors else 0
    non_2xx = int(number(r"Non-2xx or 3xx responses: (\d+)"))
    errors += non_2xx
    return Run(
        requests_per_second=number(r"^Requests/sec:\s+([\d.]+)"),
        p50_ms=number(r"^P50 (\d+)") / 1000,
        p90_ms=number(r"^P90 (\d+)") / 1000,
        p99_ms=number(r"^P99 (\d+)") / 1000,
        requests=int(number(r"^\s*(\d+) requests in")),
        errors=errors,
        wrapped=int(number(r"^WRAPPED (\d+)")),
        non_2xx=non_2xx,
        timeouts=int(socket_errors.group(4)) if socket_errors else 0,
        max_ms=number(r"^MAX (\d+)") / 1000,
        past_2s=int(number(r"^PAST2S (\d+)")),
    )
