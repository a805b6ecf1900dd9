"""The answer cache in front of the menus API's routing keeps the contract's behaviour exactly."""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient
from starlette.types import Receive, Scope, Send

from identity.api_keys.keys import ApiKeyStore
from service.app import Dispatcher
from service.menus_api.answer_cache import Answer, AnswerCache, cache_key
from service.menus_api.gate import MenusGate
from service.settings import Settings
from tests.support.apps import make_app
from tests.support.clocks import MovableClock
from tests.support.defaults import DEFAULTS, KEY_REVOCATION_BOUND

TYPICAL = "/v1/menus/dishes?course=main&max_spice=3&limit=20"
# Headers that legitimately differ from one answer to the next.
PER_REQUEST = {"ratelimit-remaining", "ratelimit-reset", "date", "x-request-id"}


def gate_of(app: Dispatcher) -> MenusGate:
    (gate,) = (step for step in app.menus.steps if isinstance(step, MenusGate))  # the last of the edge's steps
    return gate


def cache_only(app: Dispatcher, api_key: str) -> TestClient:
    """A client of the same app (its steps, its answer cache) whose menus API's router fails the test when
    reached: only the steps before it, the cache among them, may answer. A copy of the app's parts
    (``dataclasses.replace``), its lifespan not run: nothing of the app itself is replaced."""

    async def unreachable(scope: Scope, receive: Receive, send: Send) -> None:
        raise AssertionError(f"routed {scope['path']}?{scope['query_string']!r}")

    routed_never = dataclasses.replace(app, menus=dataclasses.replace(app.menus, app=unreachable))
    return TestClient(routed_never, headers={"Authorization": f"Bearer {api_key}"})


@pytest.fixture
def cached_app(settings: Settings, engine, clock: MovableClock) -> Dispatcher:  # type: ignore[no-untyped-def]
    return make_app(settings, clock=clock)


@pytest.fixture
def client(cached_app: Dispatcher, api_key: str) -> Iterator[TestClient]:
    with TestClient(cached_app, headers={"Authorization": f"Bearer {api_key}"}) as client:
        yield client


def stable(headers: dict[str, str]) -> dict[str, str]:
    return {name: value for name, value in headers.items() if name not in PER_REQUEST}


def test_cache_hit_has_the_same_body_bytes_and_headers_as_the_miss(
    client: TestClient, cached_app: Dispatcher, api_key: str
) -> None:
    miss = client.get(TYPICAL)
    hit = cache_only(cached_app, api_key).get(TYPICAL)
    assert hit.status_code == miss.status_code == 200
    assert hit.content == miss.content
    assert stable(dict(hit.headers)) == stable(dict(miss.headers))
    assert list(hit.headers) == list(miss.headers)  # same headers, same order


def test_query_in_another_order_is_the_same_entry(client: TestClient, cached_app: Dispatcher, api_key: str) -> None:
    first = client.get(TYPICAL)
    reordered = cache_only(cached_app, api_key).get("/v1/menus/dishes?limit=20&max_spice=3&course=main")
    assert reordered.content == first.content and reordered.headers["etag"] == first.headers["etag"]


def test_cached_url_answers_304_to_its_etag(client: TestClient, cached_app: Dispatcher, api_key: str) -> None:
    etag = client.get(TYPICAL).headers["etag"]
    hits = cache_only(cached_app, api_key)
    not_modified = hits.get(TYPICAL, headers={"If-None-Match": etag})
    assert not_modified.status_code == 304 and not_modified.content == b""
    assert not_modified.headers["etag"] == etag and "content-type" not in not_modified.headers
    assert hits.get(TYPICAL, headers={"If-None-Match": '"stale"'}).status_code == 200


def test_over_long_if_none_match_is_still_400_on_a_cached_url(client: TestClient) -> None:
    client.get(TYPICAL)
    response = client.get(TYPICAL, headers={"If-None-Match": "x" * 1025})
    assert response.status_code == 400 and response.json()["code"] == "invalid_parameter"


def test_revoked_key_is_refused_even_for_a_cached_url(
    cached_app: Dispatcher, keys: ApiKeyStore, clock: MovableClock
) -> None:
    record, key = keys.create("soon revoked")
    with TestClient(cached_app, headers={"Authorization": f"Bearer {key}"}) as client:
        assert client.get(TYPICAL).status_code == 200
        keys.revoke(record.id)  # by another process (a store of its own): refused within the revocation bound
        clock.advance(KEY_REVOCATION_BOUND)  # the app's clock: the bound passes without waiting for it
        refused = cache_only(cached_app, key).get(TYPICAL)
    assert refused.status_code == 401 and refused.json()["code"] == "unauthorized"


def test_missing_key_is_refused_for_a_cached_url(client: TestClient, cached_app: Dispatcher) -> None:
    client.get(TYPICAL)
    with TestClient(cached_app) as anonymous:
        assert anonymous.get(TYPICAL).status_code == 401


def test_rate_limit_still_applies_to_cached_urls(settings: Settings, api_key: str, counting_minute: None) -> None:
    app = make_app(settings.with_changes(rate_limit_per_minute=3))
    with TestClient(app, headers={"Authorization": f"Bearer {api_key}"}) as client:
        answers = [client.get(TYPICAL) for _ in range(3)]
        refused = client.get(TYPICAL)
    assert [a.status_code for a in answers] == [200, 200, 200]
    assert [a.headers["ratelimit-remaining"] for a in answers] == ["2", "1", "0"]
    assert refused.status_code == 429 and refused.json()["code"] == "rate_limited"
    assert int(refused.headers["retry-after"]) >= 1


@pytest.mark.parametrize(
    "query",
    ["course=main&course=main", "course=main&colour=red", "limit=0", "max_spice=%EF%BC%93", "q="],
)
def test_invalid_query_is_never_cached_and_stays_400(client: TestClient, cached_app: Dispatcher, query: str) -> None:
    for _ in range(2):
        response = client.get(f"/v1/menus/dishes?{query}")
        assert response.status_code == 400 and response.json()["code"] == "invalid_parameter"
    assert len(gate_of(cached_app).answers) == 0


def test_not_found_is_never_cached(client: TestClient, cached_app: Dispatcher) -> None:
    for _ in range(2):
        assert client.get("/v1/menus/dishes/unicorn-stew").status_code == 404
    assert len(gate_of(cached_app).answers) == 0


def test_random_picks_are_never_cached(client: TestClient, cached_app: Dispatcher) -> None:
    picks = {client.get("/v1/menus/random?count=3").content for _ in range(20)}
    assert len(picks) > 1
    assert len(gate_of(cached_app).answers) == 0
    assert cache_key("/v1/menus/random", b"count=3") is None


def test_head_is_answered_through_the_routing_like_before(client: TestClient, cached_app: Dispatcher) -> None:
    get = client.get(TYPICAL)
    head = client.head(TYPICAL)
    assert head.status_code == 200 and head.content == b""
    assert head.headers["etag"] == get.headers["etag"]


def key(path: str, query: str = "") -> bytes:
    found = cache_key(path, query.encode())
    assert found is not None
    return found


def test_cache_is_bounded_in_entries_and_bytes() -> None:
    cache = AnswerCache(max_entries=3, max_bytes=100)
    answer = Answer(headers=(), body=b"x" * 30, etag=b'"e"')
    for limit in range(1, 6):
        cache.put(key("/v1/menus/dishes", f"limit={limit}"), answer)
    assert len(cache) == 3 and cache.size_in_bytes == 90
    assert cache.get(key("/v1/menus/dishes", "limit=1")) is None  # the least recently used went first
    cache.put(key("/v1/menus/dishes/big"), Answer(headers=(), body=b"y" * 80, etag=b'"f"'))
    assert cache.size_in_bytes <= 100 and len(cache) == 1


def test_answer_larger_than_the_whole_cache_is_not_kept() -> None:
    cache = AnswerCache(max_entries=3, max_bytes=10)
    cache.put(key("/v1/menus/regions"), Answer(headers=(), body=b"z" * 11, etag=b'"g"'))
    assert len(cache) == 0


def test_recently_used_entry_survives_eviction() -> None:
    cache = AnswerCache(max_entries=2, max_bytes=DEFAULTS.answer_cache_bytes)
    answer = Answer(headers=(), body=b"a", etag=b'"a"')
    first, second, third = (key("/v1/menus/regions", f"country={c}") for c in ("IN", "FR", "JP"))
    cache.put(first, answer)
    cache.put(second, answer)
    assert cache.get(first) is answer
    cache.put(third, answer)
    assert cache.get(first) is answer and cache.get(second) is None


def test_a_key_tells_every_path_and_set_of_pairs_apart() -> None:
    queries = ["", "q=", "q=a%26b", "q=a&b=", 'q="],["x']
    keys = [*(key("/v1/menus/dishes", query) for query in queries), key("/v1/menus/dishes/q")]
    assert len(set(keys)) == len(keys)
    assert key("/v1/menus/dishes", "limit=5&course=main") == key("/v1/menus/dishes", "course=main&limit=5")


def test_cached_answers_share_their_headers_and_leave_content_length_to_the_sending() -> None:
    first = Answer.of([(b"content-type", b"application/json"), (b"content-length", b"3")], b"abc", b'"1"')
    second = Answer.of([(b"content-type", b"application/json"), (b"content-length", b"2")], b"ab", b'"2"')
    assert first.headers is second.headers and first.headers == ((b"content-type", b"application/json"),)
    assert (first.content_length(), second.content_length()) == ((b"content-length", b"3"), (b"content-length", b"2"))


def test_a_cached_entry_leaves_one_object_for_the_garbage_collector(client: TestClient, cached_app: Dispatcher) -> None:
    """Its key, body and ETag are bytes and its headers shared: a full cache replacing an entry on every request
    leaves the collector one young object, not a dozen (answer_cache.py says why that matters)."""
    client.get(TYPICAL)
    cache = gate_of(cached_app).answers
    ((stored_key, answer),) = cache._answers.items()
    assert [gc.is_tracked(each) for each in (stored_key, answer.body, answer.etag)] == [False, False, False]
    assert answer.headers is Answer.of(answer.headers, b"", b"").headers


def test_percent_encoded_and_plain_query_share_a_key() -> None:
    assert cache_key("/v1/menus/dishes", b"course=%6Dain") == cache_key("/v1/menus/dishes", b"course=main")
    assert cache_key("/v1/menus/dishes", b"course=main&course=main") != cache_key("/v1/menus/dishes", b"course=main")
