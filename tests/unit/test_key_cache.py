"""Verified API keys from memory (service/menus_api/key_cache.py): no SQL for a key seen live, a revocation
refused at once by the revoking process and within the bound by every other, unknown keys never remembered."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from identity.api_keys.keys import ApiKeyStore
from service.menus_api.key_cache import KeyCache
from tests.support.defaults import API_KEY_CACHE_ENTRIES, KEY_REVOCATION_BOUND, KEY_REVOCATION_CHECK

T = TypeVar("T")


ON_BOTH_ENGINES = True  # every test here that uses the state database runs on SQLite and on PostgreSQL


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Statements:
    """The SQL statements run on an engine, and the threads that ran them."""

    def __init__(self) -> None:
        self.lookups = 0  # key lookups (ApiKeyStore.authenticate)
        self.generations = 0  # revocation-count reads (ApiKeyStore.revocations)
        self.threads: set[int] = set()

    def __call__(self, conn: object, cursor: object, statement: str, *args: object) -> None:
        if "api_keys" not in statement or not statement.lstrip().upper().startswith("SELECT"):
            return
        self.threads.add(threading.get_ident())
        if "count(" in statement.lower():
            self.generations += 1
        elif "key_hash" in statement:
            self.lookups += 1


@pytest.fixture
def statements(engine: Engine) -> Iterator[Statements]:
    seen = Statements()
    sa.event.listen(engine, "before_cursor_execute", seen)
    yield seen
    sa.event.remove(engine, "before_cursor_execute", seen)


def cache_of(keys: ApiKeyStore, clock: Clock, *, entries: int = API_KEY_CACHE_ENTRIES) -> KeyCache:
    return KeyCache(keys, entries=entries, check_every=KEY_REVOCATION_CHECK, bound=KEY_REVOCATION_BOUND, clock=clock)


def run(step: Callable[[], Awaitable[T]]) -> T:
    async def main() -> T:
        result = await step()
        started = asyncio.all_tasks() - {asyncio.current_task()}  # a background read of the revocation count
        if started:
            await asyncio.wait(started)  # ends when it has read, however long a loaded machine takes
        return result

    return asyncio.run(main())


def test_a_key_seen_live_is_answered_without_a_lookup(engine: Engine, statements: Statements) -> None:
    keys = ApiKeyStore(engine)
    record, key = keys.create("partner")
    cache = cache_of(keys, Clock())
    assert run(lambda: cache.authenticate(key)) == record.id
    assert run(lambda: cache.authenticate(key)) == record.id
    assert statements.lookups == 1 and statements.generations == 1


def test_no_key_sql_runs_on_the_event_loop(engine: Engine, statements: Statements) -> None:
    keys = ApiKeyStore(engine)
    _, key = keys.create("partner")
    cache = cache_of(keys, Clock())

    async def on_the_loop() -> int:
        await cache.authenticate(key)
        return threading.get_ident()

    loop_thread = run(on_the_loop)
    assert statements.threads and loop_thread not in statements.threads


def test_unknown_and_revoked_keys_are_never_remembered(engine: Engine, statements: Statements) -> None:
    """A refused key is looked up every time, so the key-failure throttle counts each attempt."""
    keys = ApiKeyStore(engine)
    cache = cache_of(keys, Clock())
    unknown = "rmk_" + "A" * 43
    for _ in range(3):
        assert run(lambda: cache.authenticate(unknown)) is None
    assert statements.lookups == 3 and len(cache) == 0
    assert run(lambda: cache.authenticate("not-a-key")) is None
    assert statements.lookups == 3  # malformed: refused without a lookup


def test_a_key_revoked_by_this_process_is_refused_at_once(engine: Engine) -> None:
    keys = ApiKeyStore(engine)
    record, key = keys.create("partner")
    cache = cache_of(keys, Clock())  # the clock never moves: only the revoke itself can refuse the key
    assert run(lambda: cache.authenticate(key)) == record.id
    keys.revoke(record.id)
    assert run(lambda: cache.authenticate(key)) is None


def test_a_key_revoked_by_another_process_is_refused_once_the_bound_has_passed(engine: Engine) -> None:
    keys, elsewhere = ApiKeyStore(engine), ApiKeyStore(engine)  # another process: its revoke tells no one here
    record, key = keys.create("partner")
    clock = Clock()
    cache = cache_of(keys, clock)
    assert run(lambda: cache.authenticate(key)) == record.id
    elsewhere.revoke(record.id)
    assert run(lambda: cache.authenticate(key)) == record.id  # within the bound: still answered from memory
    clock.now += KEY_REVOCATION_BOUND
    assert run(lambda: cache.authenticate(key)) is None  # the request waits for a fresh read: refused


def test_a_busy_process_rereads_the_revocation_count_every_check_interval(
    engine: Engine, statements: Statements
) -> None:
    keys = ApiKeyStore(engine)
    _, key = keys.create("partner")
    clock = Clock()
    cache = cache_of(keys, clock)
    run(lambda: cache.authenticate(key))
    for _ in range(5):
        run(lambda: cache.authenticate(key))
    assert statements.generations == 1  # within the check interval: no read at all
    clock.now += KEY_REVOCATION_CHECK
    run(lambda: cache.authenticate(key))
    assert statements.generations == 2 and statements.lookups == 1


@contextmanager
def revoked_during_the_lookup(engine: Engine, revoke: Callable[[], None]) -> Iterator[None]:
    """The first key lookup on ``engine`` reads the key live, then ``revoke`` runs before its answer comes back
    (SQLAlchemy's after_cursor_execute: the row is read, the caller has not seen it yet)."""
    done: list[bool] = []

    def after(connection: object, cursor: object, statement: str, *args: object) -> None:
        if not done and "key_hash" in statement and statement.lstrip().upper().startswith("SELECT"):
            done.append(True)
            revoke()

    sa.event.listen(engine, "after_cursor_execute", after)
    try:
        yield
    finally:
        sa.event.remove(engine, "after_cursor_execute", after)
    assert done, "no key lookup ran"


def test_a_lookup_in_flight_across_a_revocation_here_is_not_remembered(engine: Engine) -> None:
    keys = ApiKeyStore(engine)
    record, key = keys.create("partner")
    cache = cache_of(keys, Clock())  # the clock never moves: only the revocation itself can refuse the key
    run(lambda: cache.authenticate("rmk_" + "B" * 43))  # the first revocation-count read, out of the way
    with revoked_during_the_lookup(engine, lambda: keys.revoke(record.id)):
        assert run(lambda: cache.authenticate(key)) == record.id  # read live, just before the revocation
    assert len(cache) == 0
    assert run(lambda: cache.authenticate(key)) is None


def test_a_lookup_in_flight_across_a_revocation_elsewhere_is_refused_once_the_bound_has_passed(
    engine: Engine,
) -> None:
    """The same race with the revocation on another process, which tells this one nothing: the answer read
    before it may be remembered, but not past the revocation bound."""
    keys, elsewhere = ApiKeyStore(engine), ApiKeyStore(engine)
    record, key = keys.create("partner")
    clock = Clock()
    cache = cache_of(keys, clock)
    with revoked_during_the_lookup(engine, lambda: elsewhere.revoke(record.id)):
        assert run(lambda: cache.authenticate(key)) == record.id
    clock.now += KEY_REVOCATION_BOUND
    assert run(lambda: cache.authenticate(key)) is None


def test_the_cache_keeps_at_most_its_entries(engine: Engine) -> None:
    keys = ApiKeyStore(engine)
    made = [keys.create(f"key {n}") for n in range(3)]
    cache = cache_of(keys, Clock(), entries=2)
    for record, key in made:
        assert run(lambda key=key: cache.authenticate(key)) == record.id  # type: ignore[misc]
    assert len(cache) == 2
