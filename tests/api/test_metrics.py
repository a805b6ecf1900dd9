"""``GET /metrics`` (issue 7): Prometheus text, requests by route template, tokens, sign-ins, rate limits.

Metrics live in the test process for its whole run, so each test reads a count before and after
its action and checks the difference.
"""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.organizations import Organization
from identity.accounts.users import User
from service.settings import Settings
from tests.support.apps import make_app
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


def test_menus_requests_over_the_rate_limit_are_counted(
    settings: Settings, engine: Engine, api_key: str, counting_minute: None
) -> None:
    app = make_app(settings.with_changes(rate_limit_per_minute=1))
    with TestClient(app, headers={"Authorization": f"Bearer {api_key}"}) as menus:
        before = value(menus, "regional_menus_rate_limited_requests_total", route="/v1/menus/regions")
        assert menus.get("/v1/menus/regions").status_code == 200
        assert menus.get("/v1/menus/regions").status_code == 429
        assert value(menus, "regional_menus_rate_limited_requests_total", route="/v1/menus/regions") == before + 1
