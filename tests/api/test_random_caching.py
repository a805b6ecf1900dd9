"""``/random`` is a new pick on every call: ``Cache-Control: no-store``, no ETag, never a 304 (the contract says so)."""

from __future__ import annotations

from starlette.testclient import TestClient

from data.yaml_text import safe_load
from service.web.contracts import spec_path


def test_random_is_no_store_without_an_etag(client: TestClient) -> None:
    response = client.get("/v1/menus/random", params={"count": 3})
    assert response.status_code == 200 and len(response.json()["data"]) == 3
    assert response.headers["cache-control"] == "no-store"
    assert "etag" not in response.headers
    assert {"ratelimit-limit", "ratelimit-remaining", "ratelimit-reset"} <= set(response.headers)


def test_random_never_answers_304_whatever_if_none_match_says(client: TestClient) -> None:
    for tag in ("*", '"' + "0" * 32 + '"'):
        response = client.get("/v1/menus/random", headers={"If-None-Match": tag})
        assert response.status_code == 200 and response.headers["cache-control"] == "no-store"


def test_random_errors_keep_their_problem_and_rate_limit_headers(client: TestClient) -> None:
    response = client.get("/v1/menus/random", params={"q": "no-such-dish-anywhere"})
    assert response.status_code == 404 and response.json()["code"] == "not_found"
    assert "etag" not in response.headers and "ratelimit-remaining" in response.headers


def test_the_contract_says_random_is_no_store_without_etag_or_304() -> None:
    document = safe_load(spec_path("menus.yaml").read_text(encoding="utf-8"))
    responses = document["paths"]["/menus/random"]["get"]["responses"]
    headers = responses["200"]["headers"]
    assert "ETag" not in headers and "304" not in responses
    no_store = document["components"]["headers"][headers["Cache-Control"]["$ref"].rsplit("/", 1)[1]]
    assert no_store["schema"]["enum"] == ["no-store"]
    other = document["paths"]["/menus/dishes"]["get"]["responses"]
    assert "ETag" in other["200"]["headers"] and "304" in other
