"""Guessing API keys (service/menus_api/key_failures.py): unknown keys are throttled per network, and a valid
key is answered whatever network it comes from."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from data.catalog import Catalog
from service.settings import Settings
from tests.support.apps import make_app

BOUND = 5  # unknown keys per network per minute in these tests
REGIONS = "/v1/menus/regions"
# Each test counts guesses to the bound within one minute of the system's clock (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("counting_minute")


def guess() -> str:
    return "rmk_" + secrets.token_urlsafe(32)


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def guarded(settings: Settings, engine: Engine, catalog: Catalog) -> Any:
    return make_app(settings.with_changes(key_failures_per_minute=BOUND), catalog=catalog)


@pytest.fixture
def on_network(guarded: Any) -> Iterator[Any]:
    opened: list[TestClient] = []

    def client(address: str, app: Any = None) -> TestClient:
        http = TestClient(app or guarded, client=(address, 40000))
        opened.append(http.__enter__())
        return http

    yield client
    for http in opened:
        http.__exit__(None, None, None)


def test_unknown_keys_past_the_bound_from_one_network_get_429_with_retry_after(on_network: Any) -> None:
    guesser = on_network("203.0.113.50")
    for _ in range(BOUND):
        assert guesser.get(REGIONS, headers=bearer(guess())).status_code == 401
    refused = guesser.get(REGIONS, headers=bearer(guess()))
    assert refused.status_code == 429
    assert refused.headers["content-type"] == "application/problem+json"
    assert int(refused.headers["retry-after"]) >= 1
    assert refused.headers["ratelimit-limit"] == str(BOUND) and refused.headers["ratelimit-remaining"] == "0"
    problem = refused.json()
    assert problem["code"] == "rate_limited" and problem["status"] == 429
    assert "unknown API keys from this network" in problem["detail"]
    assert on_network("203.0.113.50").get(REGIONS, headers=bearer(guess())).status_code == 429  # any browser there


def test_a_valid_key_is_answered_from_a_blocked_network_and_from_any_other(on_network: Any, api_key: str) -> None:
    guesser = on_network("203.0.113.51")
    for _ in range(BOUND + 1):
        guesser.get(REGIONS, headers=bearer(guess()))
    assert guesser.get(REGIONS, headers=bearer(guess())).status_code == 429
    assert on_network("203.0.113.51").get(REGIONS, headers=bearer(api_key)).status_code == 200  # the same NAT
    assert on_network("198.51.100.51").get(REGIONS, headers=bearer(api_key)).status_code == 200
    assert on_network("198.51.100.51").get(REGIONS, headers=bearer(guess())).status_code == 401  # not blocked


def test_a_blocked_network_costs_no_key_lookup_per_guess(on_network: Any) -> None:
    guesser = on_network("203.0.113.52")
    for _ in range(BOUND + 1):
        guesser.get(REGIONS, headers=bearer(guess()))
    lookups: list[str] = []

    def spy(_connection: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if "api_keys" in statement:
            lookups.append(statement)

    event.listen(Engine, "before_cursor_execute", spy)
    try:
        for _ in range(20):
            assert guesser.get(REGIONS, headers=bearer(guess())).status_code == 429
    finally:
        event.remove(Engine, "before_cursor_execute", spy)
    assert len(lookups) <= 2  # the live keys' digests, read at most once a second; no lookup per guess


def test_malformed_keys_cost_no_lookup_are_not_counted_and_stay_401(on_network: Any) -> None:
    client = on_network("203.0.113.53")
    for _ in range(BOUND * 2):
        assert client.get(REGIONS, headers=bearer("not-a-key")).status_code == 401
    assert client.get(REGIONS, headers=bearer(guess())).status_code == 401
    for _ in range(BOUND):
        client.get(REGIONS, headers=bearer(guess()))
    assert client.get(REGIONS, headers=bearer(guess())).status_code == 429  # blocked now
    assert client.get(REGIONS, headers=bearer("not-a-key")).status_code == 401  # still refused as malformed


def test_a_revoked_key_from_a_blocked_network_is_refused(on_network: Any, keys: Any) -> None:
    record, key = keys.create("soon revoked")
    guesser = on_network("203.0.113.54")
    assert guesser.get(REGIONS, headers=bearer(key)).status_code == 200
    for _ in range(BOUND + 1):
        guesser.get(REGIONS, headers=bearer(guess()))
    keys.revoke(record.id)
    assert guesser.get(REGIONS, headers=bearer(key)).status_code in (401, 429)  # never 200


def test_nodes_sharing_redis_share_one_bound_per_network(
    settings: Settings, engine: Engine, catalog: Catalog, redis_url: str, on_network: Any
) -> None:
    shared = settings.with_changes(key_failures_per_minute=BOUND, rate_limit_storage=redis_url)
    first, second = (on_network("203.0.113.55", make_app(shared, catalog=catalog)) for _ in range(2))
    for n in range(BOUND):
        assert (first if n % 2 else second).get(REGIONS, headers=bearer(guess())).status_code == 401
    assert first.get(REGIONS, headers=bearer(guess())).status_code == 429
    assert second.get(REGIONS, headers=bearer(guess())).status_code == 429
