"""Throw-away PostgreSQL databases for the tests, on the server in ``MENUS_TEST_POSTGRES_URL``.

The default is the server CI provides at 127.0.0.1:5432 (trust authentication). A test
that needs PostgreSQL and cannot reach it fails, naming the server: it is never skipped,
so a missing server cannot pass for a green run.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import URL, Engine

from service.database.db import make_engine, metadata
from service.database.schema import load_tables, upgrade
from tests.support.defaults import POOL
from tests.support.engines import KEPT

SERVER_URL = os.environ.get("MENUS_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


def _admin() -> Engine:
    return sa.create_engine(SERVER_URL, isolation_level="AUTOCOMMIT")


@contextmanager
def throwaway_database(*, migrated: bool = True) -> Iterator[str]:
    """A new database, at the current schema unless not ``migrated``; dropped afterwards. Its URL."""
    name = f"menus_test_{secrets.token_hex(6)}"
    admin = _admin()
    try:
        with admin.connect() as connection:
            connection.execute(sa.text(f'CREATE DATABASE "{name}"'))
    except sa.exc.OperationalError as error:
        admin.dispose()
        pytest.fail(f"PostgreSQL at {SERVER_URL} cannot be reached ({error.orig}); the PostgreSQL tests need it")
    url: URL = sa.make_url(SERVER_URL).set(database=name)
    rendered = url.render_as_string(hide_password=False)
    if migrated:
        engine = make_engine(rendered, POOL)
        upgrade(engine)
        engine.dispose()
    try:
        yield rendered
    finally:
        with admin.connect() as connection:
            connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def empty_every_table(url: str) -> None:
    """Delete every row (the schema stays): a clean database for the next test, faster than a new one.

    One DELETE a table, the referencing tables first, in one transaction: a few milliseconds on a test's handful of
    rows, where TRUNCATE gives each table and index a new file, synced at the commit (0.3 s a test on a busy disk).
    No table has a sequence to restart (the ids are random strings)."""
    load_tables()
    kept = KEPT.copy(url)  # the session's database: its statements compiled once (tests/support/engines.py)
    engine = kept or make_engine(url, POOL)
    with engine.begin() as connection:
        for table in reversed(metadata.sorted_tables):
            connection.execute(table.delete())
    if kept is None:
        engine.dispose()
