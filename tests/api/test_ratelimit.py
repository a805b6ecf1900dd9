"""The per-key rate limit of the menus API (service/menus_api/rate_limiter.py and the storage beside it):
a sliding window counter, failing open."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest
import redis
from limits import RateLimitItemPerSecond
from limits.aio.storage import RedisStorage as AsyncRedisStorage
from limits.aio.strategies import SlidingWindowCounterRateLimiter as AsyncSlidingWindowCounter
from starlette.testclient import TestClient

from service.menus_api.limit_storage import KEY_PREFIX, StorageHealth, redis_pool
from service.menus_api.rate_limiter import Decision, RateLimiter
from service.menus_api.redis_windows import LEASE, Command, Counted, Pipelines, RedisWindows, RoundTrip
from service.ops import metrics
from service.settings import Settings
from tests.support.apps import make_app
from tests.support.clocks import window_not_ending
from tests.support.defaults import REDIS
from tests.support.live import free_port

# Each test that counts requests to a refusal does so within one minute of the system's clock (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("counting_minute")


@pytest.fixture(params=["memory", "redis"])
def storage(request: pytest.FixtureRequest) -> str:
    return "memory://" if request.param == "memory" else str(request.getfixturevalue("redis_url"))


def take(limiter: RateLimiter, key: str, times: int = 1, *, close: bool = True) -> list[Decision]:
    """``times`` requests of ``key``, on an event loop of their own (closing the limiter's connections after)."""

    async def run() -> list[Decision]:
        try:
            return [await limiter.take(key) for _ in range(times)]
        finally:
            await limiter.aclose()

    return asyncio.run(run())


def test_window_allows_the_limit_then_refuses(storage: str) -> None:
    decisions = take(RateLimiter(3, storage, redis=REDIS), "k", 4)
    assert [d.allowed for d in decisions] == [True, True, True, False]
    assert [d.remaining for d in decisions] == [2, 1, 0, 0]
    assert all(d.limit == 3 for d in decisions)


def test_refused_request_says_when_to_retry(storage: str) -> None:
    *_, refused = take(RateLimiter(2, storage, redis=REDIS), "k", 3)
    assert not refused.allowed
    assert 1 <= refused.retry_after <= 60
    assert refused.reset == refused.retry_after  # the window admits one request more then


def test_the_previous_minute_weighs_by_the_share_of_it_still_in_the_window() -> None:
    """Sliding window counter: ``floor(previous × (1 − elapsed) + current)`` against the limit. Halfway through
    a minute, 60 requests of the last minute weigh 30: with 30 this minute, a limit of 60 is reached, and
    the next request is admitted as soon as the weight decays below it (within a second)."""
    limiter = RateLimiter(60, redis=REDIS)
    decision = limiter._decide(Counted(False, previous=60, previous_ttl=30.0, current=30, current_ttl=90.0))
    assert (decision.remaining, decision.retry_after, decision.reset) == (0, 1, 1)
    decision = limiter._decide(Counted(True, previous=60, previous_ttl=30.0, current=10, current_ttl=90.0))
    assert decision.remaining == 20 and decision.reset == 1  # 40 weighted; 39.x within a second


def test_a_minute_filled_in_itself_admits_again_only_as_it_leaves_the_window() -> None:
    """All 60 requests in this minute (none before): nothing decays until the minute ends in 20 s; then the
    minute weighs less than 60 at once, and one request is admitted."""
    limiter = RateLimiter(60, redis=REDIS)
    decision = limiter._decide(Counted(False, previous=0, previous_ttl=0.0, current=60, current_ttl=80.0))
    assert (decision.allowed, decision.remaining, decision.retry_after) == (False, 0, 20)


def test_with_nothing_counted_the_whole_limit_is_left_and_nothing_resets() -> None:
    limiter = RateLimiter(60, redis=REDIS)
    decision = limiter._decide(Counted(True, previous=0, previous_ttl=0.0, current=1, current_ttl=120.0))
    assert (decision.remaining, decision.reset, decision.retry_after) == (59, 60, 0)


def test_memory_per_key_does_not_grow_with_the_traffic() -> None:
    """Two counters per key (this minute's and the last), whatever the number of requests: no entry per request."""
    limiter = RateLimiter(100_000, redis=REDIS)
    take(limiter, "k", 5_000)
    assert len(limiter._storage.storage) <= 2 and not limiter._storage.events


def test_window_moves_and_admits_again(storage: str) -> None:
    limiter = RateLimiter(2, storage, window_seconds=1, redis=REDIS)
    window_not_ending(1.0, margin=0.5)  # the three within one second's window
    assert [d.allowed for d in take(limiter, "k", 3)] == [True, True, False]
    # No clock of ours to move: the window is timed by the Redis server (TIME) or, in memory, by the limits library.
    asyncio.run(asyncio.sleep(1.1))
    assert take(limiter, "k")[0].allowed


def test_keys_have_separate_windows(storage: str) -> None:
    limiter = RateLimiter(1, storage, redis=REDIS)
    assert take(limiter, "a")[0].allowed
    assert take(limiter, "b")[0].allowed
    assert not take(limiter, "a")[0].allowed


def test_two_limiters_on_one_redis_share_the_limit(redis_url: str) -> None:
    """Two processes (or nodes) with the same MENUS_RATE_LIMIT_STORAGE count one window per key."""
    first, second = RateLimiter(4, redis_url, redis=REDIS), RateLimiter(4, redis_url, redis=REDIS)
    allowed = [d.allowed for limiter in (first, second, first, second, first, second) for d in take(limiter, "k")]
    assert allowed == [True, True, True, True, False, False]


def test_unreachable_redis_fails_open_logs_once_and_counts(caplog: pytest.LogCaptureFixture) -> None:
    errors = metrics.REGISTRY.get_sample_value("regional_menus_rate_limit_storage_errors_total", {"use": "api_key"})
    health = StorageHealth(retry_after=0, log_every=REDIS.log_every)  # ask Redis again on every request: each one fails
    limiter = RateLimiter(1, f"redis://127.0.0.1:{free_port()}/0", health=health, redis=REDIS)  # nothing listens there
    with caplog.at_level(logging.WARNING, logger="service.ratelimit"):
        decisions = take(limiter, "k", 3)
    assert [d.allowed for d in decisions] == [True, True, True]  # over the limit of 1, and still answered
    assert decisions[0].headers() == [
        (b"ratelimit-limit", b"1"),
        (b"ratelimit-remaining", b"1"),
        (b"ratelimit-reset", b"0"),
    ]
    after = metrics.REGISTRY.get_sample_value("regional_menus_rate_limit_storage_errors_total", {"use": "api_key"})
    assert after == (errors or 0) + 3
    assert len([r for r in caplog.records if "cannot be reached" in r.getMessage()]) == 1
    assert health.down
    assert not asyncio.run(limiter.reachable())


def test_after_an_outage_requests_do_not_wait_for_redis_until_the_retry_time() -> None:
    health = StorageHealth(retry_after=60, log_every=REDIS.log_every)
    limiter = RateLimiter(1, f"redis://127.0.0.1:{free_port()}/0", health=health, redis=REDIS)
    take(limiter, "k")
    assert not health.usable()
    errors = metrics.REGISTRY.get_sample_value("regional_menus_rate_limit_storage_errors_total", {"use": "api_key"})
    assert all(d.allowed for d in take(limiter, "k", 5))
    after = metrics.REGISTRY.get_sample_value("regional_menus_rate_limit_storage_errors_total", {"use": "api_key"})
    assert after == errors  # not asked: no new error


# Redis: the requests of one event-loop iteration share one round trip


def take_together(limiter: RateLimiter, keys: list[str]) -> list[Decision]:
    """One request per entry of ``keys``, all started in the same event-loop iteration (as a busy worker's are)."""

    async def run() -> list[Decision]:
        try:
            return list(await asyncio.gather(*(limiter.take(key) for key in keys)))
        finally:
            await limiter.aclose()

    return asyncio.run(run())


def counting(sizes: list[int], hold: asyncio.Event | None = None) -> Callable[[RoundTrip], RoundTrip]:
    """Wraps the limiter's round trips to Redis: the number of commands of each, in order, goes to ``sizes``;
    with ``hold``, each waits for it to be set (Redis taking its time to answer)."""

    def wrap(round_trip: RoundTrip) -> RoundTrip:
        async def counted(commands: list[Command]) -> list[Any]:
            sizes.append(len(commands))
            if hold is not None:
                await hold.wait()
            return await round_trip(commands)

        return counted

    return wrap


def test_requests_of_one_iteration_go_to_redis_in_one_round_trip_each_with_its_own_decision(redis_url: str) -> None:
    pipelines: list[int] = []
    keys = ["a", "b", "a", "c", "a", "b", "a"]
    decisions = take_together(RateLimiter(3, redis_url, redis=REDIS, round_trips=counting(pipelines)), keys)
    assert pipelines == [3]  # one command per key (admit and read the window), all in one pipeline
    by_key = {key: [d for k, d in zip(keys, decisions, strict=True) if k == key] for key in "abc"}
    assert [(d.allowed, d.remaining) for d in by_key["a"]] == [(True, 2), (True, 1), (True, 0), (False, 0)]
    assert [(d.allowed, d.remaining) for d in by_key["b"]] == [(True, 2), (True, 1)]
    assert [(d.allowed, d.remaining) for d in by_key["c"]] == [(True, 2)]
    refused = by_key["a"][-1]
    assert 1 <= refused.retry_after <= 60 and refused.reset == refused.retry_after
    assert all(d.reset == 60 for d in by_key["b"] + by_key["c"])  # their oldest request is this one


def test_requests_taken_while_a_pipeline_is_in_flight_go_together_in_the_next(redis_url: str) -> None:
    pipelines: list[int] = []

    async def run() -> list[Decision]:
        release = asyncio.Event()  # Redis takes its time to answer
        limiter = RateLimiter(4, redis_url, redis=REDIS, round_trips=counting(pipelines, release))
        try:
            first = asyncio.ensure_future(limiter.take("k"))
            later: list[asyncio.Future[Decision]] = []
            for _ in range(3):  # three iterations, two requests each, while the first pipeline waits
                await asyncio.sleep(0)
                later += [asyncio.ensure_future(limiter.take(key)) for key in ("k", "m")]
            await asyncio.sleep(0)
            release.set()
            return [await first, *await asyncio.gather(*later)]
        finally:
            await limiter.aclose()

    decisions = asyncio.run(run())
    assert pipelines == [1, 2]  # the first request alone, then the six that waited (two keys), in one round trip
    assert [d.remaining for d in decisions] == [3, 2, 3, 1, 2, 0, 1]  # k, then k and m three times, in order


def test_the_windows_in_redis_are_the_limits_librarys_own(redis_url: str) -> None:
    """Same keys, same entries: the library's strategy reads what the limiter wrote, and the limiter counts its hits."""
    limiter = RateLimiter(5, redis_url, redis=REDIS)
    take_together(limiter, ["k", "k"])
    item = RateLimitItemPerSecond(5, 60)

    async def library(hits: int) -> tuple[float, int]:
        pool = redis_pool(redis_url, REDIS.timeout)
        storage = AsyncRedisStorage(  # the library's own storage, with our key prefix
            "async+" + redis_url, implementation="redispy", key_prefix=KEY_PREFIX, connection_pool=pool
        )
        try:
            strategy = AsyncSlidingWindowCounter(storage)
            for _ in range(hits):
                assert await strategy.hit(item, "k")
            stats = await strategy.get_window_stats(item, "k")
            return stats.reset_time, stats.remaining
        finally:
            await pool.disconnect()

    _, remaining = asyncio.run(library(2))
    assert remaining == 1  # 2 by the limiter, 2 by the library
    assert [(d.allowed, d.remaining) for d in take_together(limiter, ["k", "k"])] == [(True, 0), (False, 0)]


def test_a_script_redis_does_not_hold_is_sent_once_and_each_request_counted_once(redis_url: str) -> None:
    """As after a Redis restart or SCRIPT FLUSH (EVALSHA answers NOSCRIPT), without flushing a shared Redis:
    the lease script with a comment of this test's own is a script no Redis has seen."""
    pipelines: list[int] = []
    item = RateLimitItemPerSecond(3, 60)

    async def run() -> list[Counted | None]:
        pool = redis_pool(redis_url, REDIS.timeout)
        health = StorageHealth(REDIS.retry_after_outage, REDIS.log_every)
        unseen = LEASE + f"\n-- {uuid.uuid4()}\n".encode()
        windows = RedisWindows(counting(pipelines)(Pipelines(pool)), item, health, REDIS, script=unseen)
        try:
            counted = list(await asyncio.gather(*(windows.take("k") for _ in range(3))))
            return [*counted, await windows.take("k")]
        finally:
            await pool.disconnect()

    first, second, third, refused = asyncio.run(run())
    assert [(c.allowed, c.current) for c in (first, second, third) if c] == [(True, 1), (True, 2), (True, 3)]
    assert refused is not None and not refused.allowed and refused.current == 3  # each counted once
    assert pipelines == [1, 1, 1]  # EVALSHA: NOSCRIPT; EVAL sends (and caches) the script; then EVALSHA only


# Redis: the allowances a worker spends from memory

SHARED_LIMIT = 64 * 10  # a worker asks for at most 10 permits of a key beyond those it needs (allowance_share)


def current_count(redis_url: str, key: str, limit: int = SHARED_LIMIT) -> int:
    """The current minute's counter of ``key`` in Redis, as the library names it."""
    connection = redis.Redis.from_url(redis_url)
    try:
        return int(connection.get(f"{KEY_PREFIX}:{{{RateLimitItemPerSecond(limit, 60).key_for(key)}}}") or 0)
    finally:
        connection.close()


def test_a_key_busy_on_a_worker_is_answered_from_its_allowance_with_exact_headers(redis_url: str) -> None:
    """The permits granted beyond the waiting request double with each grant the key spends, up to a 64th of
    the limit: 300 requests one after the other make a handful of round trips, and each request's
    RateLimit-Remaining is what one worker alone would count."""
    pipelines: list[int] = []
    limiter = RateLimiter(SHARED_LIMIT, redis_url, redis=REDIS, clock=lambda: 0.0, round_trips=counting(pipelines))
    decisions = take(limiter, "k", 300)
    assert all(d.allowed for d in decisions)
    assert [d.remaining for d in decisions] == [SHARED_LIMIT - n for n in range(1, 301)]
    assert len(pipelines) == 3 + 27  # grants of 1, 1 + 2 and 1 + 6 permits, then of 1 + 10 (a 64th of the limit)
    assert 300 <= current_count(redis_url, "k") <= 300 + SHARED_LIMIT // REDIS.allowance_share


def test_requests_queued_behind_a_grant_spend_its_permits_without_another_round_trip(redis_url: str) -> None:
    pipelines: list[int] = []

    async def run() -> list[Decision]:
        release = asyncio.Event()
        release.set()
        limiter = RateLimiter(
            SHARED_LIMIT, redis_url, redis=REDIS, clock=lambda: 0.0, round_trips=counting(pipelines, release)
        )
        try:
            first = await limiter.take("k")  # a key new here: counted alone
            release.clear()  # Redis takes its time with the next grant (1 + 2 permits) ...
            asking = asyncio.ensure_future(limiter.take("k"))
            await asyncio.sleep(0)
            behind = [asyncio.ensure_future(limiter.take("k")) for _ in range(2)]  # ... and these wait behind it
            await asyncio.sleep(0)
            release.set()
            return [first, await asking, *await asyncio.gather(*behind)]
        finally:
            await limiter.aclose()

    decisions = asyncio.run(run())
    assert pipelines == [1, 1]  # the two behind were answered from the grant's two extra permits
    assert [d.remaining for d in decisions] == [SHARED_LIMIT - n for n in range(1, 5)]


def test_workers_sharing_a_key_admit_the_limit_and_never_more(redis_url: str) -> None:
    """Each permit is granted by Redis: two workers taking a key's requests in turn admit exactly the limit in
    all, whatever permits each holds when the other is refused (it spends them on its next turns)."""

    async def run() -> list[Decision]:
        first, second = (RateLimiter(SHARED_LIMIT, redis_url, redis=REDIS, clock=lambda: 0.0) for _ in range(2))
        try:
            return [await limiter.take("k") for _ in range(500) for limiter in (first, second)]
        finally:
            await first.aclose()
            await second.aclose()

    decisions = asyncio.run(run())
    assert sum(d.allowed for d in decisions) == SHARED_LIMIT
    assert current_count(redis_url, "k") == SHARED_LIMIT


def test_permits_a_worker_did_not_spend_are_given_back_once_its_allowance_is_old(redis_url: str) -> None:
    now = [0.0]
    limiter = RateLimiter(SHARED_LIMIT, redis_url, redis=REDIS, clock=lambda: now[0])

    async def run() -> None:
        try:
            for _ in range(20):
                await limiter.take("k")
            assert current_count(redis_url, "k") == 22  # 1, 3, 7 and 11 permits granted: 2 held
            now[0] += REDIS.allowance_max_age
            await limiter.take("other")  # its round trip gives back the 2 (an idle worker's sweep would too)
        finally:
            await limiter.aclose()

    asyncio.run(run())
    assert current_count(redis_url, "k") == 20


def test_an_idle_worker_gives_back_its_unspent_permits_by_itself(redis_url: str) -> None:
    # A round trip slower than the default 0.5 s (a loaded machine) makes the limit fail open and count nothing, which
    # is not what this test is about: it once read 0 in Redis after the 20 grants.
    tuning = replace(REDIS, allowance_max_age=0.02, timeout=10.0)
    limiter = RateLimiter(SHARED_LIMIT, redis_url, redis=tuning)

    async def run() -> int:
        try:
            for _ in range(20):
                await limiter.take("k")
            held = current_count(redis_url, "k")
            for _ in range(200):  # the event loop's own timer, due 20 ms after the last grant
                await asyncio.sleep(0.01)
                if current_count(redis_url, "k") < held:
                    break
            return held
        finally:
            await limiter.aclose()

    assert asyncio.run(run()) > 20
    assert current_count(redis_url, "k") == 20


def test_a_limit_below_the_allowance_share_is_counted_request_by_request(redis_url: str) -> None:
    pipelines: list[int] = []
    limiter = RateLimiter(REDIS.allowance_share - 1, redis_url, redis=REDIS, round_trips=counting(pipelines))
    take(limiter, "k", 5)
    assert pipelines == [1] * 5
    assert current_count(redis_url, "k", REDIS.allowance_share - 1) == 5


def test_a_failed_round_trip_answers_every_waiting_request_open(caplog: pytest.LogCaptureFixture) -> None:
    errors = metrics.REGISTRY.get_sample_value("regional_menus_rate_limit_storage_errors_total", {"use": "api_key"})
    limiter = RateLimiter(
        1,
        f"redis://127.0.0.1:{free_port()}/0",
        health=StorageHealth(retry_after=0, log_every=REDIS.log_every),
        redis=REDIS,
    )
    with caplog.at_level(logging.WARNING, logger="service.ratelimit"):
        decisions = take_together(limiter, ["a", "a", "b", "a", "c"])
    assert all(d.allowed and d.remaining == 1 and d.reset == 0 for d in decisions)
    after = metrics.REGISTRY.get_sample_value("regional_menus_rate_limit_storage_errors_total", {"use": "api_key"})
    assert after == (errors or 0) + 5  # every request answered without a limit is counted
    assert len([r for r in caplog.records if "cannot be reached" in r.getMessage()]) == 1
    assert limiter.health.down


def test_requests_that_waited_for_a_failed_round_trip_are_answered_open_without_asking_again() -> None:
    pipelines: list[int] = []
    unreachable = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    limiter = RateLimiter(1, unreachable, redis=REDIS, round_trips=counting(pipelines))

    async def run() -> list[Decision]:
        try:
            first = asyncio.ensure_future(limiter.take("k"))
            await asyncio.sleep(0)  # its pipeline is in flight
            return list(await asyncio.gather(first, *(limiter.take("k") for _ in range(3))))
        finally:
            await limiter.aclose()

    decisions = asyncio.run(run())
    assert all(d.allowed for d in decisions)
    assert pipelines == [1]  # one failed round trip: the three that waited for it did not wait again


def test_a_key_redis_cannot_count_fails_open_alone(redis_url: str) -> None:
    """One request's error (here a key of the wrong type) answers that request open, not its batch."""
    connection = redis.Redis.from_url(redis_url)
    try:  # the current minute's counter, as the library names it, made a list: GET fails with WRONGTYPE
        connection.rpush(f"{KEY_PREFIX}:{{{RateLimitItemPerSecond(1, 60).key_for('broken')}}}", "not a counter")
    finally:
        connection.close()
    health = StorageHealth(REDIS.retry_after_outage, REDIS.log_every)
    errors = metrics.REGISTRY.get_sample_value("regional_menus_rate_limit_storage_errors_total", {"use": "api_key"})
    decisions = take_together(RateLimiter(1, redis_url, health=health, redis=REDIS), ["ok", "broken", "ok"])
    assert [d.allowed for d in decisions] == [True, True, False]
    after = metrics.REGISTRY.get_sample_value("regional_menus_rate_limit_storage_errors_total", {"use": "api_key"})
    assert after == (errors or 0) + 1


def test_an_error_that_is_not_redis_reaches_every_waiting_request(redis_url: str) -> None:
    def broken(round_trip: RoundTrip) -> RoundTrip:
        async def fails(commands: list[Command]) -> list[Any]:
            raise ValueError("a bug, not an outage")

        return fails

    limiter = RateLimiter(5, redis_url, redis=REDIS, round_trips=broken)

    async def run() -> list[BaseException | Decision]:
        try:
            return list(await asyncio.gather(*(limiter.take(k) for k in "abc"), return_exceptions=True))
        finally:
            await limiter.aclose()

    answers = asyncio.run(run())
    assert [type(answer) for answer in answers] == [ValueError] * 3  # none hangs, none is let through unlimited
    assert not limiter.health.down


def test_a_request_cancelled_while_waiting_for_redis_leaves_the_others_answered(redis_url: str) -> None:
    limiter = RateLimiter(5, redis_url, redis=REDIS)

    async def run() -> list[Decision]:
        try:
            waiting = [asyncio.ensure_future(limiter.take("k")) for _ in range(3)]
            await asyncio.sleep(0)  # all three are queued
            waiting[1].cancel()
            done = await asyncio.gather(waiting[0], waiting[2])
            return [*done, await limiter.take("k")]
        finally:
            await limiter.aclose()

    decisions = asyncio.run(run())
    assert [d.remaining for d in decisions] == [4, 2, 1]  # the cancelled request was sent, and counted


def test_requests_left_waiting_by_a_closed_event_loop_do_not_block_the_next_loop(redis_url: str) -> None:
    limiter = RateLimiter(5, redis_url, redis=REDIS)

    async def leave_waiting() -> None:
        asyncio.ensure_future(limiter.take("k"))  # the loop closes before its pipeline is sent

    asyncio.run(leave_waiting())
    assert [d.remaining for d in take(limiter, "k", 2)] == [4, 3]  # answered (and the first was never counted)


# Through the service


@pytest.fixture
def unreachable_redis_app(database_url: str, engine) -> Iterator[TestClient]:  # type: ignore[no-untyped-def]
    settings = Settings(
        database_url=database_url,
        validate_responses=True,
        rate_limit_per_minute=1,
        rate_limit_storage=f"redis://127.0.0.1:{free_port()}/0",
    )
    with TestClient(make_app(settings)) as client:
        yield client


def test_menus_api_answers_and_readyz_says_degraded_while_redis_is_unreachable(
    unreachable_redis_app: TestClient, api_key: str
) -> None:
    for _ in range(3):  # over the limit of one a minute: no limit while Redis is away
        response = unreachable_redis_app.get("/v1/menus/regions", headers={"Authorization": f"Bearer {api_key}"})
        assert response.status_code == 200
        assert response.headers["ratelimit-limit"] == "1"
    ready = unreachable_redis_app.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["status"] == "degraded"
    scraped = unreachable_redis_app.get("/metrics").text
    assert 'regional_menus_rate_limit_storage_errors_total{use="api_key"}' in scraped


def test_readyz_says_ready_with_a_reachable_redis(database_url: str, engine, redis_url: str) -> None:  # type: ignore[no-untyped-def]
    settings = Settings(database_url=database_url, validate_responses=True, rate_limit_storage=redis_url)
    with TestClient(make_app(settings)) as client:
        assert client.get("/readyz").json()["status"] == "ready"


def test_the_limit_in_redis_answers_429_with_retry_after(
    database_url: str, engine, redis_url: str, api_key: str
) -> None:  # type: ignore[no-untyped-def]
    settings = Settings(
        database_url=database_url, validate_responses=True, rate_limit_per_minute=2, rate_limit_storage=redis_url
    )
    headers = {"Authorization": f"Bearer {api_key}"}
    with TestClient(make_app(settings)) as client:
        statuses = [client.get("/v1/menus/regions", headers=headers) for _ in range(3)]
    assert [r.status_code for r in statuses] == [200, 200, 429]
    assert [r.headers["ratelimit-remaining"] for r in statuses] == ["1", "0", "0"]
    refused = statuses[-1]
    assert refused.json()["code"] == "rate_limited"
    assert 1 <= int(refused.headers["retry-after"]) <= 60


def test_rate_limit_storage_setting_takes_memory_or_redis_urls_only() -> None:
    assert Settings.from_env({}).rate_limit_storage == "memory://"
    assert (
        Settings.from_env({"MENUS_RATE_LIMIT_STORAGE": "redis://cache:6379/2"}).rate_limit_storage
        == "redis://cache:6379/2"
    )
    with pytest.raises(ValueError, match="MENUS_RATE_LIMIT_STORAGE"):
        Settings.from_env({"MENUS_RATE_LIMIT_STORAGE": "memcached://cache:11211"})
