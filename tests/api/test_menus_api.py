"""The menus API through the ASGI app: every endpoint, rule and error (openapi/menus.yaml, docs/menus-api.md)."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from data.catalog import Catalog
from identity.api_keys.keys import ApiKeyStore
from service.database.db import make_engine
from service.database.schema import upgrade
from service.settings import Settings
from tests.support.apps import make_app
from tests.support.clocks import MovableClock
from tests.support.database_faults import statements_fail
from tests.support.defaults import KEY_REVOCATION_BOUND, POOL

PROBLEM = "application/problem+json"


def problem(response, status: int, code: str) -> dict:  # type: ignore[no-untyped-def]
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM
    body = response.json()
    assert body["code"] == code and body["status"] == status
    assert set(body) >= {"type", "title", "status", "detail", "code"}
    return body


def test_list_regions_returns_all_16_with_total(client: TestClient) -> None:
    body = client.get("/v1/menus/regions").json()
    assert body["total"] == len(body["data"]) == 16
    assert sum(r["dish_count"] for r in body["data"]) == 146


def test_list_regions_filters_by_country_in_any_case(client: TestClient) -> None:
    body = client.get("/v1/menus/regions", params={"country": "in"}).json()
    assert body["total"] == 5 and {r["country_code"] for r in body["data"]} == {"IN"}


def test_get_region_includes_its_dishes(client: TestClient) -> None:
    region = client.get("/v1/menus/regions/japan").json()["data"]
    assert region["slug"] == "japan" and len(region["dishes"]) == region["dish_count"] == 10


def test_get_dish_returns_the_dish_with_its_region(client: TestClient) -> None:
    dish = client.get("/v1/menus/dishes/creme-brulee").json()["data"]
    assert dish["name"] == "Crème brûlée"
    assert dish["region"] == {"slug": "paris", "name": "Paris", "country_code": "FR"}


def test_vegetarian_paneer_search_answers_correct_data(client: TestClient) -> None:
    body = client.get("/v1/menus/dishes", params={"diet": "vegetarian", "q": "paneer"}).json()
    assert body["total"] >= 1
    assert all(d["diet"] in {"vegan", "vegetarian"} for d in body["data"])
    assert all("paneer" in " ".join([d["name"], *d["ingredients"], *d["tags"]]).lower() for d in body["data"])


def test_dish_list_defaults_to_20_per_page_and_counts_all(client: TestClient) -> None:
    body = client.get("/v1/menus/dishes").json()
    assert len(body["data"]) == 20 and body["total"] == 146 and body["next_cursor"]


def test_paging_with_next_cursor_visits_every_match_once(client: TestClient) -> None:
    params = {"max_spice": 4, "limit": 7}
    seen: list[str] = []
    body = client.get("/v1/menus/dishes", params=params).json()
    total = body["total"]
    while True:
        seen += [d["slug"] for d in body["data"]]
        if body["next_cursor"] is None:
            break
        body = client.get("/v1/menus/dishes", params={**params, "cursor": body["next_cursor"]}).json()
    assert len(seen) == len(set(seen)) == total


def test_a_page_with_more_links_to_the_next_with_its_filters_from_the_base_url_not_the_host_header(
    client: TestClient, settings: Settings
) -> None:
    """RFC 8288 §3: ``Link: <URI-Reference>; rel="next"``; the URL comes from MENUS_BASE_URL, whatever ``Host`` says."""
    first = client.get("/v1/menus/dishes", params={"diet": "vegan", "limit": 2}, headers={"Host": "attacker.example"})
    cursor = first.json()["next_cursor"]
    link = f"{settings.base_url}/v1/menus/dishes?diet=vegan&limit=2&cursor={cursor}"
    assert first.headers["link"] == f'<{link}>; rel="next"'
    assert client.get(link.removeprefix(settings.base_url)).json() == (
        client.get("/v1/menus/dishes", params={"diet": "vegan", "limit": 2, "cursor": cursor}).json()
    )
    spaced = client.get("/v1/menus/dishes", params={"q": "coconut rice", "limit": 1})
    assert f"?q=coconut%20rice&limit=1&cursor={spaced.json()['next_cursor']}>" in spaced.headers["link"]


def test_the_last_page_and_random_picks_send_no_link_header(client: TestClient) -> None:
    last = client.get("/v1/menus/dishes", params={"q": "creme brulee"})
    assert last.json()["next_cursor"] is None and "link" not in last.headers
    assert "link" not in client.get("/v1/menus/random", params={"count": 3}).headers


def test_accent_insensitive_search_through_the_api(client: TestClient) -> None:
    names = [d["name"] for d in client.get("/v1/menus/dishes", params={"q": "creme brulee"}).json()["data"]]
    assert names == ["Crème brûlée"]


def test_unmatched_filter_is_an_empty_list_not_an_error(client: TestClient) -> None:
    body = client.get("/v1/menus/dishes", params={"region": "atlantis"}).json()
    assert body == {"data": [], "total": 0, "next_cursor": None}
    assert client.get("/v1/menus/regions", params={"country": "ZZ"}).json() == {"data": [], "total": 0}


def test_random_returns_count_distinct_dishes_with_total(client: TestClient) -> None:
    body = client.get("/v1/menus/random", params={"count": 10, "course": "main"}).json()
    assert body["total"] == len(body["data"]) == 10
    assert len({d["slug"] for d in body["data"]}) == 10
    assert all(d["course"] == "main" for d in body["data"])


def test_random_defaults_to_one_dish(client: TestClient) -> None:
    assert client.get("/v1/menus/random").json()["total"] == 1


def test_random_with_no_match_is_404_not_found(client: TestClient) -> None:
    problem(client.get("/v1/menus/random", params={"q": "unicorn"}), 404, "not_found")


@pytest.mark.parametrize("path", ["/v1/menus/dishes/unicorn-stew", "/v1/menus/regions/atlantis", "/v1/menus/nowhere"])
def test_unknown_slug_or_path_is_404_not_found(client: TestClient, path: str) -> None:
    problem(client.get(path), 404, "not_found")


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 101}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"max_spice": 6}, "max_spice"),
        ({"max_spice": -1}, "max_spice"),
        ({"course": "brunch"}, "course"),
        ({"diet": "keto"}, "diet"),
        ({"country": "IND"}, "country"),
        ({"region": "Not A Slug"}, "region"),
        ({"q": ""}, "q"),
        ({"q": "   "}, "q"),
        ({"q": "x" * 101}, "q"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_invalid_parameter_is_400_naming_it(client: TestClient, params: dict, name: str) -> None:
    body = problem(client.get("/v1/menus/dishes", params=params), 400, "invalid_parameter")
    assert [p["name"] for p in body["invalid_params"]] == [name]
    assert "\n" not in body["detail"]


@pytest.mark.parametrize(
    ("params", "name"), [({"count": 0}, "count"), ({"count": 11}, "count"), ({"limit": 5}, "limit")]
)
def test_random_rejects_count_out_of_range_and_list_parameters(client: TestClient, params: dict, name: str) -> None:
    body = problem(client.get("/v1/menus/random", params=params), 400, "invalid_parameter")
    assert body["invalid_params"][0]["name"] == name


def test_every_invalid_parameter_is_listed(client: TestClient) -> None:
    body = problem(client.get("/v1/menus/dishes?max_spice=9&course=brunch"), 400, "invalid_parameter")
    assert {p["name"] for p in body["invalid_params"]} == {"max_spice", "course"}


def test_repeated_parameter_is_400(client: TestClient) -> None:
    body = problem(client.get("/v1/menus/dishes?course=main&course=side"), 400, "invalid_parameter")
    assert body["invalid_params"] == [{"name": "course", "reason": "was sent more than once; send it once"}]


def test_invalid_path_slug_is_400(client: TestClient) -> None:
    problem(client.get("/v1/menus/dishes/Not_A_Slug"), 400, "invalid_parameter")


@pytest.mark.parametrize("cursor", ["garbage", "AQ", "A" * 60])
def test_forged_cursor_is_400_invalid_cursor(client: TestClient, cursor: str) -> None:
    problem(client.get("/v1/menus/dishes", params={"cursor": cursor}), 400, "invalid_cursor")


def test_cursor_of_other_filters_is_400_invalid_cursor(client: TestClient) -> None:
    cursor = client.get("/v1/menus/dishes", params={"course": "main", "limit": 2}).json()["next_cursor"]
    response = client.get("/v1/menus/dishes", params={"course": "snack", "limit": 2, "cursor": cursor})
    problem(response, 400, "invalid_cursor")


def test_truncated_cursor_is_400_invalid_cursor(client: TestClient) -> None:
    cursor = client.get("/v1/menus/dishes", params={"limit": 2}).json()["next_cursor"]
    problem(client.get("/v1/menus/dishes", params={"limit": 2, "cursor": cursor[:-3]}), 400, "invalid_cursor")


def test_cursor_survives_a_restart(settings: Settings, api_key: str) -> None:
    """A cursor handed out before a restart opens, after it, the page that follows the one it came with."""
    headers = {"Authorization": f"Bearer {api_key}"}
    with TestClient(make_app(settings), headers=headers) as first:
        page = first.get("/v1/menus/dishes", params={"limit": 3}).json()
        six = first.get("/v1/menus/dishes", params={"limit": 6}).json()["data"]
    with TestClient(make_app(settings), headers=headers) as second:
        after = second.get("/v1/menus/dishes", params={"limit": 3, "cursor": page["next_cursor"]})
    assert after.status_code == 200
    assert [dish["slug"] for dish in page["data"] + after.json()["data"]] == [dish["slug"] for dish in six]


def test_a_prebuilt_catalog_signs_cursors_with_each_databases_own_key(
    settings: Settings, api_key: str, catalog: Catalog, tmp_path: Path
) -> None:
    """Tests share one loaded dataset (``create_app(catalog=…)``); cursors stay bound to the database's key."""
    headers = {"Authorization": f"Bearer {api_key}"}
    with TestClient(make_app(settings, catalog=catalog), headers=headers) as first:
        cursor = first.get("/v1/menus/dishes", params={"limit": 3}).json()["next_cursor"]
    with TestClient(make_app(settings), headers=headers) as loaded_afresh:  # the same database
        assert loaded_afresh.get("/v1/menus/dishes", params={"limit": 3, "cursor": cursor}).status_code == 200
    other = settings.with_changes(database_url=f"sqlite:///{tmp_path / 'other.sqlite3'}")
    engine = make_engine(other.database_url, POOL)
    upgrade(engine)
    other_key = ApiKeyStore(engine).create("other")[1]
    engine.dispose()
    with TestClient(make_app(other, catalog=catalog), headers={"Authorization": f"Bearer {other_key}"}) as second:
        problem(second.get("/v1/menus/dishes", params={"limit": 3, "cursor": cursor}), 400, "invalid_cursor")


def test_missing_key_is_401_with_bearer_challenge(anonymous: TestClient) -> None:
    response = anonymous.get("/v1/menus/regions")
    problem(response, 401, "unauthorized")
    assert response.headers["www-authenticate"] == 'Bearer realm="menus"'


@pytest.mark.parametrize("value", ["Bearer rmk_" + "A" * 43, "Bearer nonsense", "Bearer"])
def test_wrong_key_is_401_invalid_token(anonymous: TestClient, value: str) -> None:
    response = anonymous.get("/v1/menus/regions", headers={"Authorization": value})
    problem(response, 401, "unauthorized")
    assert response.headers["www-authenticate"] == 'Bearer realm="menus", error="invalid_token"'


def test_bearer_scheme_is_case_insensitive(anonymous: TestClient, api_key: str) -> None:
    assert anonymous.get("/v1/menus/regions", headers={"Authorization": f"bearer {api_key}"}).status_code == 200


def test_a_key_revoked_elsewhere_is_refused_once_the_revocation_bound_has_passed(
    anonymous: TestClient, keys: ApiKeyStore, clock: MovableClock
) -> None:
    """A revocation by another process (here a store of its own, as the command line) reaches this one within
    ``KEY_REVOCATION_BOUND``; the console's own revocations are refused at once (test_console.py)."""
    record, key = keys.create("soon revoked")
    headers = {"Authorization": f"Bearer {key}"}
    assert anonymous.get("/v1/menus/regions", headers=headers).status_code == 200
    keys.revoke(record.id)
    clock.advance(KEY_REVOCATION_BOUND)  # the app's clock: the bound passes without waiting for it
    problem(anonymous.get("/v1/menus/regions", headers=headers), 401, "unauthorized")


def test_authentication_comes_before_validation(anonymous: TestClient) -> None:
    problem(anonymous.get("/v1/menus/dishes", params={"limit": 0}), 401, "unauthorized")


def test_openapi_document_and_swagger_ui_need_no_key(anonymous: TestClient) -> None:
    document = anonymous.get("/v1/openapi.json")
    assert document.status_code == 200 and document.json()["openapi"] == "3.0.3"
    assert "swagger-ui" in anonymous.get("/v1/ui/").text.lower()


def test_unsupported_method_is_405_with_allow(client: TestClient) -> None:
    response = client.post("/v1/menus/dishes")
    problem(response, 405, "method_not_allowed")
    assert response.headers["allow"] == "GET, HEAD"


def test_successful_response_has_strong_etag_and_cache_control(client: TestClient) -> None:
    response = client.get("/v1/menus/regions")
    assert response.headers["etag"].startswith('"') and not response.headers["etag"].startswith("W/")
    assert response.headers["cache-control"] == "private, max-age=300"


def test_matching_if_none_match_gives_304_without_body(client: TestClient) -> None:
    etag = client.get("/v1/menus/dishes/creme-brulee").headers["etag"]
    for validator in (etag, f"W/{etag}", f'"other", {etag}', "*"):
        response = client.get("/v1/menus/dishes/creme-brulee", headers={"If-None-Match": validator})
        assert response.status_code == 304 and response.content == b""
        assert response.headers["etag"] == etag


def test_stale_if_none_match_gives_200(client: TestClient) -> None:
    response = client.get("/v1/menus/dishes/creme-brulee", headers={"If-None-Match": '"stale"'})
    assert response.status_code == 200 and response.json()["data"]["slug"] == "creme-brulee"


def test_etag_changes_with_the_body(client: TestClient) -> None:
    first = client.get("/v1/menus/dishes", params={"limit": 1}).headers["etag"]
    second = client.get("/v1/menus/dishes", params={"limit": 2}).headers["etag"]
    assert first != second


def test_every_response_carries_rate_limit_headers(client: TestClient) -> None:
    for response in (client.get("/v1/menus/regions"), client.get("/v1/menus/dishes/unicorn-stew")):
        assert int(response.headers["ratelimit-limit"]) == 600
        assert 0 <= int(response.headers["ratelimit-remaining"]) < 600
        assert int(response.headers["ratelimit-reset"]) >= 0


def test_rate_limit_gives_429_with_retry_after(settings: Settings, api_key: str, counting_minute: None) -> None:
    app = make_app(settings.with_changes(rate_limit_per_minute=3))
    with TestClient(app, headers={"Authorization": f"Bearer {api_key}"}) as client:
        statuses = [client.get("/v1/menus/regions").status_code for _ in range(3)]
        refused = client.get("/v1/menus/regions")
    assert statuses == [200, 200, 200]
    problem(refused, 429, "rate_limited")
    assert int(refused.headers["retry-after"]) >= 1
    assert refused.headers["ratelimit-remaining"] == "0"


def test_the_memory_rate_limit_window_is_one_minute(
    settings: Settings, keys: ApiKeyStore, counting_minute: None
) -> None:
    """The contract's limit is per minute (a sliding window counter over whole minutes of the system clock, which
    the ``limits`` library reads): a key that took its whole limit at once waits until its minute ends, so
    ``Retry-After`` and ``RateLimit-Reset`` are the seconds left in the current minute of Unix time, not of any
    shorter window. (In the last ten seconds of a minute a ten-second window would give the same numbers; in the
    other fifty it could not.)"""
    app = make_app(settings.with_changes(rate_limit_per_minute=3))
    headers = {"Authorization": f"Bearer {keys.create('window')[1]}"}
    with TestClient(app) as client:
        started = time.time()
        assert [client.get("/v1/menus/regions", headers=headers).status_code for _ in range(3)] == [200] * 3
        refused = client.get("/v1/menus/regions", headers=headers)
        ended = time.time()
    assert started // 60 == ended // 60  # within one minute (counting_minute)
    problem(refused, 429, "rate_limited")
    left = {math.ceil(60 - started % 60), math.ceil(60 - ended % 60)}
    assert int(refused.headers["retry-after"]) in range(min(left), max(left) + 1)
    assert int(refused.headers["ratelimit-reset"]) == int(refused.headers["retry-after"])


def test_rate_limit_is_per_key(settings: Settings, keys: ApiKeyStore, counting_minute: None) -> None:
    app = make_app(settings.with_changes(rate_limit_per_minute=1))
    first, second = keys.create("one")[1], keys.create("two")[1]
    with TestClient(app) as client:
        assert client.get("/v1/menus/regions", headers={"Authorization": f"Bearer {first}"}).status_code == 200
        assert client.get("/v1/menus/regions", headers={"Authorization": f"Bearer {second}"}).status_code == 200
        assert client.get("/v1/menus/regions", headers={"Authorization": f"Bearer {first}"}).status_code == 429


class ExplodingCatalog(Catalog):
    """A dataset whose every query fails inside the handler: an error no layer expects."""

    def regions(self, country: str | None = None) -> list[dict[str, Any]]:
        raise RuntimeError("secret internals")


def test_unexpected_error_is_500_without_stack_trace(
    settings: Settings, engine: Engine, api_key: str, caplog: pytest.LogCaptureFixture
) -> None:
    app = make_app(settings, catalog=ExplodingCatalog([], [], b"k" * 32))
    with TestClient(app, headers={"Authorization": f"Bearer {api_key}"}) as client:
        response = client.get("/v1/menus/regions")
    body = problem(response, 500, "internal_error")
    assert "secret internals" not in response.text and "Traceback" not in response.text
    assert body["detail"] == "The server could not answer this request."
    assert "secret internals" in caplog.text


def test_control_character_in_path_is_404_not_500(client: TestClient) -> None:
    problem(client.get("/v1/menus/dishes/a%0Ab"), 404, "not_found")


def test_paths_outside_the_apis_are_404_problems(anonymous: TestClient) -> None:
    problem(anonymous.get("/nothing-here"), 404, "not_found")


@pytest.mark.parametrize("value", ["1_0", "+3", " 3", "%D9%A3", "%EF%BC%93", "3.0"])
def test_integer_parameters_take_plain_digits_only(client: TestClient, value: str) -> None:
    body = problem(client.get(f"/v1/menus/dishes?limit={value}"), 400, "invalid_parameter")
    assert body["invalid_params"][0]["name"] == "limit"


@pytest.mark.parametrize("path", ["/v1/menus/dishes/", "/v1/menus/regions/", "/v1/menus/dishes/creme-brulee/"])
def test_trailing_slash_is_not_a_resource(client: TestClient, path: str) -> None:
    problem(client.get(path), 404, "not_found")


def test_star_only_matches_on_its_own(client: TestClient) -> None:
    response = client.get("/v1/menus/dishes/creme-brulee", headers={"If-None-Match": '"other", *'})
    assert response.status_code == 200


def test_head_is_answered_like_get_without_body(client: TestClient) -> None:
    response = client.head("/v1/menus/dishes/creme-brulee")
    assert response.status_code == 200 and response.content == b"" and response.headers["etag"]


def test_allow_lists_get_and_head(client: TestClient) -> None:
    assert client.options("/v1/menus/regions").headers["allow"] == "GET, HEAD"


def test_database_outage_is_503_problem_with_retry_after(client: TestClient, engine) -> None:  # type: ignore[no-untyped-def]
    with engine.begin() as connection:
        connection.exec_driver_sql("DROP TABLE api_keys")
    response = client.get("/v1/menus/regions")
    problem(response, 503, "service_unavailable")
    assert int(response.headers["retry-after"]) >= 1


def test_error_escaping_the_app_is_a_500_problem(app: Any, api_key: str) -> None:
    """The gate's own key check fails with an error of the layer underneath (not an outage): the edge still
    answers a problem, never a bare 500 or a trace."""
    with (
        TestClient(app, headers={"Authorization": f"Bearer {api_key}"}) as client,
        statements_fail(app.engine, RuntimeError("boom"), matching="api_keys"),
    ):
        response = client.get("/v1/menus/regions")
    problem(response, 500, "internal_error")
    assert "boom" not in response.text


def test_not_modified_and_rate_limited_carry_rate_limit_headers(
    settings: Settings, api_key: str, counting_minute: None
) -> None:
    app = make_app(settings.with_changes(rate_limit_per_minute=2))
    with TestClient(app, headers={"Authorization": f"Bearer {api_key}"}) as client:
        etag = client.get("/v1/menus/regions").headers["etag"]
        not_modified = client.get("/v1/menus/regions", headers={"If-None-Match": etag})
        limited = client.get("/v1/menus/regions")
    assert not_modified.status_code == 304 and not_modified.headers["ratelimit-limit"] == "2"
    assert limited.status_code == 429 and limited.headers["ratelimit-limit"] == "2"
