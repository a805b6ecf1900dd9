"""Metrics across processes (prometheus_client's multiprocess mode): what ``serve --workers`` relies on. Each
process writes its own files, any process's scrape sums them all, and the directory is prepared before
prometheus_client is imported. The metrics of one app, in process, are tests/api/test_metrics.py."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from prometheus_client import multiprocess
from prometheus_client.parser import text_string_to_metric_families

from tests.support.live import live_service

WORKER = """
import sys
from service.ops import metrics
for _ in range(int(sys.argv[1])):
    metrics.observe_request("GET", "/healthz", 200, 0.002)
"""


SCRAPER = """
from service.ops import metrics
print(metrics.exposition().decode())
"""


def test_in_multiprocess_mode_a_scrape_sums_every_process_dead_or_alive(tmp_path: Path) -> None:
    """What ``serve --workers`` relies on: each process writes its own files, any process reads them all."""
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    for count in ("3", "4"):
        subprocess.run([sys.executable, "-c", WORKER, count], env=env, check=True, timeout=60)
    scraped = subprocess.run(
        [sys.executable, "-c", SCRAPER], env=env, check=True, capture_output=True, text=True, timeout=60
    )
    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(scraped.stdout)
        for sample in family.samples
    }
    labels = (("method", "GET"), ("route", "/healthz"), ("status", "200"))
    assert samples[("regional_menus_http_requests_total", labels)] == 7


def per_process_requests(directory: Path, route: str) -> dict[str, float]:
    """Each worker's own count of ``route``, read from its file in the multiprocess directory."""
    counts = {}
    for path in directory.glob("counter_*.db"):
        total = sum(
            sample.value
            for family in multiprocess.MultiProcessCollector.merge([str(path)])
            for sample in family.samples
            if sample.name == "regional_menus_http_requests_total" and sample.labels.get("route") == route
        )
        if total:
            counts[path.stem.removeprefix("counter_")] = total
    return counts


def test_serve_with_two_workers_counts_the_requests_of_both_in_every_scrape(tmp_path: Path) -> None:
    directory = tmp_path / "metrics"
    with live_service(tmp_path, {"PROMETHEUS_MULTIPROC_DIR": str(directory)}, args=("--workers", "2")) as service:

        def get(_: int) -> int:
            with urllib.request.urlopen(f"{service.url}/healthz", timeout=10) as response:  # a connection each
                response.read()  # the whole answer: it is counted before its last byte is sent
                return int(response.status)

        sent = 0
        with ThreadPoolExecutor(max_workers=16) as pool:
            # An idle worker may win every accept; load until both have answered (each has its own file).
            while sent < 40 or len(per_process_requests(directory, "/healthz")) < 2:
                assert sent < 4000, "one worker answered every request"
                assert set(pool.map(get, range(40))) == {200}
                sent += 40
        scraped = []
        for _ in range(6):  # whichever worker answers, it answers for both
            with urllib.request.urlopen(f"{service.url}/metrics", timeout=10) as response:
                text = response.read().decode()
            scraped.append(
                sum(
                    sample.value
                    for family in text_string_to_metric_families(text)
                    for sample in family.samples
                    if sample.name == "regional_menus_http_requests_total" and sample.labels["route"] == "/healthz"
                )
            )
        by_worker = per_process_requests(directory, "/healthz")
    assert scraped == [sent] * 6, (scraped, sent, by_worker)
    # Two workers or more (gunicorn replaces one that stops answering; the files of the old one still count).
    assert len(by_worker) >= 2 and sum(by_worker.values()) == sent, by_worker


PREPARE = """
import os, sys
from pathlib import Path
from service.ops.multiprocess import prepare_directory
path = prepare_directory()
print(path, os.environ["PROMETHEUS_MULTIPROC_DIR"], sorted(p.name for p in path.iterdir()))
import prometheus_client
try:
    prepare_directory()
except RuntimeError as error:
    print("refused:", error)
"""


def test_the_multiprocess_directory_starts_empty_and_must_be_set_before_prometheus_client_is_imported(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "metrics"
    directory.mkdir()
    (directory / "counter_12345.db").write_bytes(b"an earlier run")
    (directory / "notes.txt").write_text("not ours")
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(directory)}
    done = subprocess.run(
        [sys.executable, "-c", PREPARE], env=env, capture_output=True, text=True, check=True, timeout=60
    )
    first, refused = done.stdout.splitlines()
    assert first == f"{directory} {directory} ['notes.txt']"
    assert refused.startswith("refused: the metrics directory must be prepared before prometheus_client")


def test_without_a_metrics_directory_serve_makes_a_private_one_and_removes_it_at_exit() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    done = subprocess.run(
        [sys.executable, "-c", "from service.ops.multiprocess import prepare_directory; print(prepare_directory())"],
        env=env, capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    made = Path(done.stdout.strip())
    assert made.name.startswith("regional-menus-metrics-") and not made.exists()
