"""``GET /metrics`` (issue 7): Prometheus text, requests by route template, tokens, sign-ins, rate limits.

Metrics live in the test process for its whole run, so each test reads a count before and after
its action and checks the difference.
"""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from prometheus_client import multiprocess
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.organizations import Organization
from identity.users import User
from service.app import create_app
from service.settings import Settings
from tests.support.defaults import ACCOUNT_LIMIT
from tests.support.identity_fixtures import Registered, register
from tests.support.identity_pages import (
    authorize,
    basic,
    refresh,
    sign_in,
    signed_in_code,
    to_page,
    token_request,
    tokens,
)
from tests.support.live import live_service

Labels = dict[str, str]


def scrape(http: TestClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = http.get("/metrics")
    assert response.status_code == 200
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(http: TestClient, name: str, **labels: str) -> float:
    return scrape(http).get((name, tuple(sorted(labels.items()))), 0.0)


def test_metrics_are_prometheus_text_format_0_0_4(anonymous: TestClient) -> None:
    response = anonymous.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    names = {family.name for family in text_string_to_metric_families(response.text)}
    assert {
        "regional_menus_http_requests",
        "regional_menus_http_request_duration_seconds",
        "regional_menus_rate_limited_requests",
        "regional_menus_tokens_issued",
        "regional_menus_sign_ins",
        "regional_menus_sign_in_failures",
        "regional_menus_security_events",
    } <= names


def test_a_request_is_counted_under_its_route_template_and_status_never_its_path(client: TestClient) -> None:
    labels = {"method": "GET", "route": "/v1/menus/dishes/{slug}", "status": "404"}
    before = value(client, "regional_menus_http_requests_total", **labels)
    assert client.get("/v1/menus/dishes/no-such-dish-anywhere").status_code == 404
    assert value(client, "regional_menus_http_requests_total", **labels) == before + 1
    assert "no-such-dish-anywhere" not in client.get("/metrics").text


def test_paths_no_contract_declares_are_counted_as_unmatched(anonymous: TestClient) -> None:
    labels = {"method": "GET", "route": "unmatched", "status": "404"}
    before = value(anonymous, "regional_menus_http_requests_total", **labels)
    assert anonymous.get("/wp-admin/setup.php").status_code == 404
    assert value(anonymous, "regional_menus_http_requests_total", **labels) == before + 1


def test_methods_outside_http_s_usual_ones_share_one_label(anonymous: TestClient) -> None:
    labels = {"method": "other", "route": "/healthz", "status": "405"}
    before = value(anonymous, "regional_menus_http_requests_total", **labels)
    anonymous.request("BREW", "/healthz")
    assert value(anonymous, "regional_menus_http_requests_total", **labels) == before + 1


def test_latency_is_a_histogram_by_route_in_millisecond_buckets(client: TestClient) -> None:
    client.get("/v1/menus/regions")
    samples = scrape(client)
    route = (("method", "GET"), ("route", "/v1/menus/regions"))
    buckets = {
        dict(labels)["le"]: count
        for (name, labels), count in samples.items()
        if name == "regional_menus_http_request_duration_seconds_bucket"
        and tuple(pair for pair in labels if pair[0] != "le") == route
    }
    assert {"0.001", "0.005", "0.01", "0.1", "1.0", "+Inf"} <= set(buckets)
    assert buckets["+Inf"] >= 1
    assert samples[("regional_menus_http_request_duration_seconds_count", route)] == buckets["+Inf"]


def test_tokens_issued_are_counted_by_grant_type(
    browser: TestClient, web: Registered, user: User, engine: Engine, org: Organization
) -> None:
    name = "regional_menus_tokens_issued_total"
    before = {grant: value(browser, name, grant_type=grant) for grant in ("authorization_code", "refresh_token")}
    issued = tokens(browser, web, signed_in_code(browser, web.id, scope="openid offline_access"))
    assert refresh(browser, web, issued["refresh_token"]).status_code == 200
    assert value(browser, name, grant_type="authorization_code") == before["authorization_code"] + 1
    assert value(browser, name, grant_type="refresh_token") == before["refresh_token"] + 1

    application = register(engine, org, name="Reporter", redirect_uris=[], grants=["client_credentials"])
    application_before = value(browser, name, grant_type="client_credentials")
    refused = token_request(browser, [("grant_type", "client_credentials"), ("scope", "openid")], basic(application))
    assert refused.status_code == 400  # a refused exchange issues nothing and counts nothing
    assert value(browser, name, grant_type="client_credentials") == application_before


def test_sign_ins_and_failed_sign_ins_are_counted_apart(browser: TestClient, web: Registered, user: User) -> None:
    succeeded = value(browser, "regional_menus_sign_ins_total")
    wrong = value(browser, "regional_menus_sign_in_failures_total", reason="wrong_password")
    unknown = value(browser, "regional_menus_sign_in_failures_total", reason="unknown_account")
    location = to_page(authorize(browser, web.id), "sign-in")
    sign_in(browser, location, password="not the password")
    sign_in(browser, location, email="nobody@example.com")
    assert sign_in(browser, location).status_code == 302
    assert value(browser, "regional_menus_sign_in_failures_total", reason="wrong_password") == wrong + 1
    assert value(browser, "regional_menus_sign_in_failures_total", reason="unknown_account") == unknown + 1
    assert value(browser, "regional_menus_sign_ins_total") == succeeded + 1


def test_throttled_sign_ins_count_as_failed_and_rate_limited(browser: TestClient, web: Registered, user: User) -> None:
    throttled = value(browser, "regional_menus_sign_in_failures_total", reason="throttled")
    limited = value(browser, "regional_menus_rate_limited_requests_total", route="/sign-in")
    location = to_page(authorize(browser, web.id), "sign-in")
    for _ in range(ACCOUNT_LIMIT + 1):
        sign_in(browser, location, password="wrong password")
    assert value(browser, "regional_menus_sign_in_failures_total", reason="throttled") == throttled + 1
    assert value(browser, "regional_menus_rate_limited_requests_total", route="/sign-in") == limited + 1


def test_menus_requests_over_the_rate_limit_are_counted(settings: Settings, engine: Engine, api_key: str) -> None:
    app = create_app(settings.with_changes(rate_limit_per_minute=1))
    with TestClient(app, headers={"Authorization": f"Bearer {api_key}"}) as menus:
        before = value(menus, "regional_menus_rate_limited_requests_total", route="/v1/menus/regions")
        assert menus.get("/v1/menus/regions").status_code == 200
        assert menus.get("/v1/menus/regions").status_code == 429
        assert value(menus, "regional_menus_rate_limited_requests_total", route="/v1/menus/regions") == before + 1


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
