"""The engines the tests keep on their state database (tests/support/engines.py): copies that share what SQLAlchemy
compiled, and keep to themselves what a test listens to."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.pool import QueuePool

from tests.support.defaults import POOL
from tests.support.engines import APPS, TESTS, KeptEngines

QUERY = sa.text("SELECT 1")


def kept_on(tmp_path: Path) -> tuple[KeptEngines, str]:
    engines = KeptEngines()
    url = f"sqlite:///{tmp_path / 'state.sqlite3'}"
    engines.keep(url)
    return engines, url


def copy_of(engines: KeptEngines, url: str, user: str = TESTS) -> sa.Engine:
    engine = engines.copy(url, user=user)
    assert engine is not None
    return engine


def checked_in(engine: sa.Engine) -> int:
    assert isinstance(engine.pool, QueuePool)  # a file's engine, with the tests' pool size
    return engine.pool.checkedin()


def cache_hits(engine: sa.Engine, statement: Any, times: int) -> list[bool]:
    hits: list[bool] = []

    def seen(connection: Any, cursor: Any, sql: str, parameters: Any, context: Any, many: bool) -> None:
        hits.append(context.cache_hit == context.dialect.CACHE_HIT)

    sa.event.listen(engine, "before_cursor_execute", seen)
    with engine.connect() as connection:
        for _ in range(times):
            connection.execute(statement)
    return hits


def test_a_copy_uses_the_statements_another_copy_compiled(tmp_path: Path) -> None:
    engines, url = kept_on(tmp_path)
    statement = sa.select(sa.literal_column("1", sa.Integer).label("one"))
    assert cache_hits(copy_of(engines, url), statement, 1) == [False]
    assert cache_hits(copy_of(engines, url), statement, 2) == [True, True]


def test_the_tests_and_the_apps_have_an_engine_each(tmp_path: Path) -> None:
    engines, url = kept_on(tmp_path)
    assert copy_of(engines, url, TESTS).pool is not copy_of(engines, url, APPS).pool


def test_what_one_copy_listens_to_is_not_heard_on_another(tmp_path: Path) -> None:
    engines, url = kept_on(tmp_path)
    first, second = copy_of(engines, url), copy_of(engines, url)
    heard: list[str] = []
    sa.event.listen(first, "before_cursor_execute", lambda *call: heard.append(call[2]))
    with second.connect() as connection:
        connection.execute(QUERY)
    assert heard == []
    with first.connect() as connection:
        connection.execute(QUERY)
    assert heard == ["SELECT 1"]


def test_a_database_not_kept_or_a_pool_of_other_settings_gets_no_copy(tmp_path: Path) -> None:
    engines, url = kept_on(tmp_path)
    assert engines.copy(f"sqlite:///{tmp_path / 'other.sqlite3'}") is None
    assert engines.copy(url, replace(POOL, size=POOL.size + 1)) is None
    assert engines.copy(url, POOL) is not None


def test_release_closes_the_connections_the_kept_engines_hold(tmp_path: Path) -> None:
    engines, url = kept_on(tmp_path)
    engine = copy_of(engines, url)
    with engine.connect() as connection:
        connection.execute(QUERY)
    assert checked_in(engine) == 1
    engines.release(url)
    assert checked_in(engine) == 0  # a new pool: the next use opens the file that is there then
    with engine.connect() as connection:
        assert connection.execute(QUERY).scalar() == 1
