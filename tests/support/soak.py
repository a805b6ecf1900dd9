"""A bounded soak: mixed traffic against a live server on loopback for SOAK_SECONDS (default 180), then figures.

    python -m tests.support.soak               # SOAK_SECONDS, SOAK_WARMUP, SOAK_THREADS, SOAK_WORKERS from the env
    pytest -m soak tests/system/test_soak.py   # the same, with its limits asserted (tox -e soak)

Client threads repeat a fixed mix: menus reads with many filters, paged through every cursor; browser sign-ins
(Argon2) and their code exchanged; refreshes of the family each thread holds; introspections; directory reads
paged through their cursors. After a warm-up the resident memory of the server (every process of it: gunicorn's
master and workers with SOAK_WORKERS) is read from /proc with the load paused, and again at the end, paused
again. The figures — requests, errors, 5xx, p50/p99 latency by kind, memory at start and end — are printed and
written to reports/soak.json and reports/soak.md.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from tests.support.live import ROOT, LiveService, live_service
from tests.support.traffic import TIMEOUT, Tenant, provision, sign_in_for_tokens

SIGN_IN = "sign-in (whole flow)"
SIGN_IN_REQUESTS = 4  # authorize, the sign-in page, the password posted, the code exchanged
MENUS_QUERIES = [
    "/v1/menus/dishes?limit=7",
    "/v1/menus/dishes?course=main&max_spice=3&limit=5",
    "/v1/menus/dishes?diet=vegetarian&limit=10",
    "/v1/menus/dishes?country=in&diet=pescatarian&limit=4",
    "/v1/menus/dishes?q=rice&limit=3",
    "/v1/menus/dishes?q=creme%20brulee",
    "/v1/menus/dishes?region=kerala&course=main&limit=2",
    "/v1/menus/regions",
    "/v1/menus/regions?country=IN",
    "/v1/menus/regions/kerala",
    "/v1/menus/dishes/creme-brulee",
    "/v1/menus/random?count=3&course=dessert",
]


@dataclass
class Figures:
    latencies: dict[str, list[float]] = field(default_factory=dict)  # seconds, by kind of request
    statuses: dict[int, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)  # no complete response, or a status no request expects
    lock: threading.Lock = field(default_factory=threading.Lock)

    def timed(self, kind: str, call: Callable[[], requests.Response], *expected: int) -> requests.Response | None:
        started = time.perf_counter()
        try:
            response = call()
        except requests.RequestException as error:
            with self.lock:
                self.errors.append(f"{kind}: {type(error).__name__}: {error}"[:300])
            return None
        elapsed = time.perf_counter() - started
        with self.lock:
            self.latencies.setdefault(kind, []).append(elapsed)
            self.statuses[response.status_code] = self.statuses.get(response.status_code, 0) + 1
            if response.status_code not in (expected or (200,)):
                self.errors.append(f"{kind}: {response.status_code} {response.text[:200]}")
        return response


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else 0.0


def resident_kib(pid: int) -> int:
    """VmRSS of ``pid`` and of its children (gunicorn's workers), in KiB."""
    total = 0
    for candidate in Path("/proc").iterdir():
        if not candidate.name.isdigit():
            continue
        try:
            status = (candidate / "status").read_text()
        except OSError:
            continue  # gone meanwhile
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(candidate.name) == pid or fields.get("PPid", "").strip() == str(pid):
            total += int(fields.get("VmRSS", "0 kB").split()[0])
    return total


class Client:
    """One soak client: its own refresh family, its own position in the mix."""

    def __init__(self, tenant: Tenant, figures: Figures, app_token: str) -> None:
        self.tenant, self.figures, self.app_token = tenant, figures, app_token
        self.menus = {"Authorization": f"Bearer {tenant.api_key}"}
        self.refresh_token: str | None = None
        self.turn = 0

    def step(self) -> None:
        """One round of the mix: a few menus reads paged through, and one identity operation in turn."""
        url = self.tenant.url
        path = MENUS_QUERIES[self.turn % len(MENUS_QUERIES)]
        for _ in range(30):  # every page of a dishes list; the other reads are one page
            page = self.figures.timed(
                "menus", lambda p=path: requests.get(url + p, headers=self.menus, timeout=TIMEOUT)
            )
            cursor = page.json().get("next_cursor") if page is not None and page.status_code == 200 else None
            if not cursor:
                break
            path = MENUS_QUERIES[self.turn % len(MENUS_QUERIES)] + f"&cursor={cursor}"
        identity = [self.sign_in, self.refresh, self.introspect, self.directory][self.turn % 4]
        identity()
        self.turn += 1

    def sign_in(self) -> None:
        started = time.perf_counter()
        try:
            tokens = sign_in_for_tokens(self.tenant)
        except (AssertionError, requests.RequestException) as error:
            with self.figures.lock:
                self.figures.errors.append(f"sign-in: {error}"[:300])
            return
        with self.figures.lock:
            self.figures.latencies.setdefault(SIGN_IN, []).append(time.perf_counter() - started)
        self.refresh_token = tokens["refresh_token"]

    def refresh(self) -> None:
        if self.refresh_token is None:
            return
        data = {"grant_type": "refresh_token", "refresh_token": self.refresh_token}
        url = f"{self.tenant.url}/oauth2/token"
        answer = self.figures.timed(
            "refresh", lambda: requests.post(url, data=data, auth=self.tenant.basic, timeout=TIMEOUT)
        )
        self.refresh_token = (
            answer.json()["refresh_token"] if answer is not None and answer.status_code == 200 else None
        )

    def introspect(self) -> None:
        data = {"token": self.app_token}
        url = f"{self.tenant.url}/oauth2/introspect"
        self.figures.timed(
            "introspection", lambda: requests.post(url, data=data, auth=self.tenant.basic, timeout=TIMEOUT)
        )

    def directory(self) -> None:
        headers = {"Authorization": f"Bearer {self.app_token}"}
        path = "/directory/members?limit=2"
        for _ in range(20):
            page = self.figures.timed(
                "directory", lambda p=path: requests.get(self.tenant.url + p, headers=headers, timeout=TIMEOUT)
            )
            cursor = page.json().get("next_cursor") if page is not None and page.status_code == 200 else None
            if not cursor:
                break
            path = f"/directory/members?limit=2&cursor={cursor}"


class Load:
    """Client threads that can be paused (for a quiet reading of memory) and stopped."""

    def __init__(self, clients: list[Client]) -> None:
        self.running = threading.Event()
        self.stopping = threading.Event()
        self.idle = [threading.Event() for _ in clients]
        self.threads = [threading.Thread(target=self._run, args=(c, i), daemon=True) for i, c in enumerate(clients)]

    def _run(self, client: Client, number: int) -> None:
        while not self.stopping.is_set():
            if not self.running.is_set():
                self.idle[number].set()
                self.running.wait(1)
                continue
            self.idle[number].clear()
            client.step()

    def start(self) -> None:
        self.running.set()
        for thread in self.threads:
            thread.start()

    def pause(self) -> None:
        """Stop starting rounds and wait until every client has finished the one it was in."""
        self.running.clear()
        for idle in self.idle:
            assert idle.wait(TIMEOUT * 2), "a client did not finish its round"

    def resume(self) -> None:
        for idle in self.idle:
            idle.clear()
        self.running.set()

    def stop(self) -> None:
        self.stopping.set()
        self.running.set()
        for thread in self.threads:
            thread.join(TIMEOUT * 2)


def soak(service: LiveService, *, seconds: float, warmup: float, threads: int) -> dict[str, Any]:
    assert service.process is not None
    tenant = provision(service, members=5)  # the directory: three pages of two
    app_token = requests.post(
        f"{tenant.url}/oauth2/token", data={"grant_type": "client_credentials", "scope": "members:read"},
        auth=tenant.basic, timeout=TIMEOUT,
    ).json()["access_token"]  # fmt: skip
    warm, figures = Figures(), Figures()
    clients = [Client(tenant, warm, app_token) for _ in range(threads)]
    load = Load(clients)
    load.start()
    time.sleep(warmup)
    load.pause()
    start_kib = resident_kib(service.process.pid)
    for client in clients:
        client.figures = figures
    began = time.monotonic()
    load.resume()
    time.sleep(seconds)
    load.pause()
    elapsed = time.monotonic() - began
    end_kib = resident_kib(service.process.pid)
    load.stop()
    # p50/p99 of single requests; a sign-in flow (four requests, one of them Argon2) has its own line
    every = [latency for kind, values in figures.latencies.items() if kind != SIGN_IN for latency in values]
    requests_served = sum(figures.statuses.values()) + SIGN_IN_REQUESTS * len(figures.latencies.get(SIGN_IN, []))
    return {
        "seconds": round(elapsed, 1),
        "warmup_seconds": warmup,
        "client_threads": threads,
        "requests": requests_served,
        "requests_per_second": round(requests_served / elapsed, 1),
        "errors": len(figures.errors),
        "error_samples": figures.errors[:10],
        "server_errors_5xx": sum(count for status, count in figures.statuses.items() if status >= 500),
        "statuses": {str(status): count for status, count in sorted(figures.statuses.items())},
        "p50_ms": round(percentile(every, 0.50) * 1000, 1),
        "p99_ms": round(percentile(every, 0.99) * 1000, 1),
        "by_kind": {
            kind: {
                "count": len(values),
                "p50_ms": round(percentile(values, 0.5) * 1000, 1),
                "p99_ms": round(percentile(values, 0.99) * 1000, 1),
                "mean_ms": round(statistics.fmean(values) * 1000, 1),
            }
            for kind, values in sorted(figures.latencies.items())
        },  # fmt: skip
        "rss_start_kib": start_kib,
        "rss_end_kib": end_kib,
        "rss_growth_percent": round((end_kib - start_kib) / start_kib * 100, 2),
    }


def markdown(result: dict[str, Any], setup: str) -> str:
    lines = [
        f"# Soak: {result['seconds']} s of mixed traffic ({setup})",
        "",
        "| figure | value |",
        "|---|---|",
        f"| requests served | {result['requests']} ({result['requests_per_second']}/s, "
        f"{result['client_threads']} client threads) |",
        f"| errors (no answer or an unexpected status) | {result['errors']} |",
        f"| 5xx | {result['server_errors_5xx']} |",
        f"| latency p50 / p99 (single requests) | {result['p50_ms']} ms / {result['p99_ms']} ms |",
        f"| resident memory at start (after {result['warmup_seconds']} s warm-up) | {result['rss_start_kib']} KiB |",
        f"| resident memory at end | {result['rss_end_kib']} KiB |",
        f"| growth | {result['rss_growth_percent']} % |",
        "",
        "| kind | requests | p50 ms | p99 ms |",
        "|---|---|---|---|",
        *(f"| {kind} | {v['count']} | {v['p50_ms']} | {v['p99_ms']} |" for kind, v in result["by_kind"].items()),
    ]
    return "\n".join(lines) + "\n"


def run(seconds: float, warmup: float, threads: int, workers: int | None) -> dict[str, Any]:
    """Start a server of its own in a temporary folder, soak it, write and print the figures."""
    setup = f"gunicorn, {workers} workers" if workers else "uvicorn, one process"
    env = {"MENUS_RATE_LIMIT": "100000000", "MENUS_ACCESS_TOKEN_TTL": "3600"}
    args = ("--workers", str(workers)) if workers else ()
    with tempfile.TemporaryDirectory(prefix="soak-") as folder, live_service(Path(folder), env, args=args) as service:
        result = soak(service, seconds=seconds, warmup=warmup, threads=threads)
    result["server"] = setup
    reports = ROOT / "reports"
    reports.mkdir(exist_ok=True)
    (reports / "soak.json").write_text(json.dumps(result, indent=2) + "\n")
    (reports / "soak.md").write_text(markdown(result, setup))
    print(markdown(result, setup))
    return result


def from_environment() -> dict[str, Any]:
    workers = os.environ.get("SOAK_WORKERS")
    return run(
        seconds=float(os.environ.get("SOAK_SECONDS", "180")),
        warmup=float(os.environ.get("SOAK_WARMUP", "30")),
        threads=int(os.environ.get("SOAK_THREADS", "4")),
        workers=int(workers) if workers else None,
    )


if __name__ == "__main__":
    from_environment()
