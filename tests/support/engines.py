"""The engines of the tests' own state databases, kept for the whole process: each test and each app gets a copy.

SQLAlchemy caches the SQL it compiles per engine (keyed by the engine's dialect), so an engine made for each test
and another for each app compiled every statement again: a sixth of the API tests' CPU. The state database of a
worker is therefore always at the same place (``tests/conftest.py``: one SQLite file a process, replaced by a copy
of the migrated one before each test, and the session's PostgreSQL database, emptied), and the engines on it are
kept here: one for the tests' own reads and writes and one for the apps, as a test and its app had an engine each.

A test or an app is handed a copy, ``Engine.execution_options()``: it shares its engine's pool, dialect and compiled
statements, and the events a test listens to on it stay on it (they end with the test). An app leaves the copy it
was handed open at its lifespan's end (``create_app`` disposes only an engine it made): the apps of a test share one
pool, and one app's end must not drop it under another's background rounds. ``release`` closes its connections. A
database of a test's own (another URL, or another pool) gets an engine of its own, as before.
"""

from __future__ import annotations

from sqlalchemy.engine import Engine

from service.database.db import make_engine
from service.settings import Pool
from tests.support.defaults import POOL

TESTS, APPS = "tests", "apps"  # whose engine: the test's own reads and writes, or the apps it builds


class KeptEngines:
    """The engines on the databases ``keep`` names, by database and user (``TESTS`` or ``APPS``)."""

    def __init__(self) -> None:
        self._kept: set[str] = set()
        self._engines: dict[tuple[str, str], Engine] = {}

    def keep(self, url: str) -> None:
        """Keep engines on ``url`` from now on (a database the process's tests use one after the other)."""
        self._kept.add(url)

    def copy(self, url: str, pool: Pool = POOL, *, user: str = TESTS) -> Engine | None:
        """A copy of the engine kept on ``url`` for ``user`` (made at the first call), or None when ``url`` is not
        kept or ``pool`` is not the tests' default (a test of the pool's own settings gets an engine of its own)."""
        if url not in self._kept or pool != POOL:
            return None
        engine = self._engines.get((url, user))
        if engine is None:
            engine = self._engines[(url, user)] = make_engine(url, POOL)
        return engine.execution_options()

    def release(self, url: str) -> None:
        """Close the connections the engines on ``url`` keep open (before its SQLite file is replaced); the engines
        open new ones when next used."""
        for (kept, _), engine in self._engines.items():
            if kept == url:
                engine.dispose()


KEPT = KeptEngines()  # the process's
