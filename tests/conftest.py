"""Fixtures chain settings → store → app → client.

Every fixture is safe under pytest-xdist: databases live in each test's ``tmp_path`` or are throw-away
PostgreSQL databases with random names, servers take free ports, and each worker has its own Redis
database number (``redis_url``).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from data.catalog import Catalog, load_catalog
from identity.api_keys.keys import ApiKeyStore
from service.database.db import make_engine
from service.database.schema import upgrade
from service.settings import Settings
from tests.support.apps import make_app
from tests.support.clocks import MovableClock, window_not_ending
from tests.support.command_line import service_loggers_kept
from tests.support.defaults import POOL
from tests.support.engines import KEPT
from tests.support.postgres import empty_every_table, throwaway_database

pytest_plugins = [
    "tests.support.ci_skips",  # with CI set, a skipped test fails (tests/support/ci_skips.py)
    "tests.support.identity_fixtures",  # org, user, web and browser for the identity API's tests
    "tests.support.module_durations",  # --record-durations: tests/durations.json, the order of longest_first
    "tests.support.redis_db",  # redis_url: a Redis database of the test's own (per xdist worker)
]

KINDS = ("unit", "api", "system")  # the folders of tests/, each test marked with its own (-m unit)


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with the kind its folder holds, so that ``-m unit``, ``-m api`` or ``-m system`` picks one;
    then order the modules longest first, for the workers (below)."""
    for item in items:
        kind = item.path.relative_to(Path(__file__).parent).parts[0]
        if kind in KINDS:
            item.add_marker(kind)
    items[:] = longest_first(items)


def longest_first(items: list[pytest.Item], durations: dict[str, float] | None = None) -> list[pytest.Item]:
    """The modules in the order they are handed to the workers (``--dist loadscope --no-loadscope-reorder``, one
    module to one worker, so its servers start once): by their measured duration (``tests/durations.json``, made
    by ``scripts/test --record-durations``; a module it lacks counts as the median of its tier), longest first.
    The last modules handed out are then the shortest, and the workers finish together (longest processing time
    first). A module keeps its own order."""
    from tests.support import module_durations  # imported once pytest_plugins has registered it (its asserts rewritten)

    estimate = module_durations.Estimate(module_durations.load() if durations is None else durations)
    seconds = {path: estimate(module_durations.module_of(path)) for path in {item.path for item in items}}
    return sorted(items, key=lambda item: (-seconds[item.path], str(item.path)))  # stable within a module


CURSOR_KEY = b"k" * 32


@pytest.fixture(autouse=True)
def service_loggers_restored() -> Iterator[None]:
    """Each test gets the service's loggers back as it found them (``service.ops.logs.configure`` and
    ``configure_command`` change them), so that a later test on the same worker still sees their records
    (``caplog``)."""
    with service_loggers_kept():
        yield


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return load_catalog(cursor_key=CURSOR_KEY)


ENGINES = ["sqlite", "postgresql"]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A module that tests the store on both engines says ``ON_BOTH_ENGINES = True``: each of its tests that
    uses the state database runs on SQLite and on PostgreSQL in turn."""
    if getattr(metafunc.module, "ON_BOTH_ENGINES", False) and "database_url" in metafunc.fixturenames:
        metafunc.parametrize("database_url", ENGINES, indirect=True)


def _fresh_state_database(request: pytest.FixtureRequest, engine: str) -> str:
    """The process's state database on ``engine``, as new: always at the same place, so that the engines on it are
    kept (``tests/support/engines.py``). SQLite: the folder of ``state_folder`` emptied (the database and what lies
    beside it, such as the key file of its sealed secrets) and a copy of the migrated file put in it; PostgreSQL:
    the session's database, every table emptied."""
    if engine == "sqlite":
        folder: Path = request.getfixturevalue("state_folder")
        database = folder / "state.sqlite3"
        url = f"sqlite:///{database}"
        KEPT.keep(url)
        KEPT.release(url)  # no connection of the engines kept on it holds the last test's file
        for entry in folder.iterdir():
            if entry.is_dir():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        shutil.copyfile(request.getfixturevalue("migrated_sqlite"), database)
        return url
    url = request.getfixturevalue("postgres_database")
    empty_every_table(url)
    return url


@pytest.fixture(scope="session")
def state_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the process's SQLite state database lies (``database_url``), emptied before each test that uses it."""
    return tmp_path_factory.mktemp("state")


@pytest.fixture
def database_url(request: pytest.FixtureRequest) -> str:
    """The state database of a test: SQLite, or each engine in turn in a module ``ON_BOTH_ENGINES``."""
    return _fresh_state_database(request, getattr(request, "param", "sqlite"))


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    """One throw-away PostgreSQL database for the session, emptied before each test that uses it."""
    with throwaway_database() as url:
        KEPT.keep(url)
        yield url
        KEPT.release(url)  # before the database is dropped


@pytest.fixture(params=ENGINES)
def either_database(request: pytest.FixtureRequest) -> str:
    """A fresh state database on each engine in turn."""
    return _fresh_state_database(request, request.param)


@pytest.fixture
def settings(database_url: str) -> Settings:
    # loopback outbound URIs allowed, as in development: the tests' relying parties listen on 127.0.0.1.
    # No purge job (purge_interval=0): its round at start-up was an eighth of the API tests' CPU, spent on a database
    # with nothing to purge. The purge's rules are tested in tests/unit/test_purge.py, its job in an app there and
    # in tests/api/test_background_jobs.py, and in a live service in tests/system/test_database_faults.py.
    return Settings(database_url=database_url, validate_responses=True, outbound_loopback=True, purge_interval=0)


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An SQLite database at the current schema, made once per process: a test's own database starts as a
    copy of it (running every migration takes about 0.2 s; copying the file, a millisecond)."""
    path = tmp_path_factory.mktemp("migrated") / "state.sqlite3"
    engine = make_engine(f"sqlite:///{path}", POOL)
    upgrade(engine)
    with engine.connect() as connection:
        connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")  # everything in the file itself
    engine.dispose()
    return path


@pytest.fixture
def engine(settings: Settings, migrated_sqlite: Path) -> Iterator[Engine]:
    """The test's own engine on its state database: a copy of the one the process keeps on it
    (``tests/support/engines.py``), or, on a database the test made, one of its own."""
    kept = KEPT.copy(settings.database_url, settings.database_pool())
    if kept is not None:
        yield kept
        return
    url = sa.make_url(settings.database_url)
    copied = url.get_backend_name() == "sqlite" and bool(url.database) and not Path(str(url.database)).exists()
    if copied:
        shutil.copyfile(migrated_sqlite, str(url.database))
    engine = make_engine(settings.database_url, POOL)
    # A copy of the migrated file is at the head already, and so is the session's PostgreSQL database, made migrated
    # and only ever emptied (Alembic's no-op check: 12 ms of CPU a test); an SQLite file the test made may not be.
    if url.get_backend_name() == "sqlite" and not copied:
        upgrade(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def keys(engine: Engine) -> ApiKeyStore:
    return ApiKeyStore(engine)


@pytest.fixture
def api_key(keys: ApiKeyStore) -> str:
    return keys.create("tests")[1]


@pytest.fixture
def counting_minute() -> None:
    """The test counts a rate limit's requests to its refusal within one minute of the system's clock: it starts at
    least five seconds before that minute ends (``tests/support/clocks.py: window_not_ending``)."""
    window_not_ending()


@pytest.fixture
def clock() -> MovableClock:
    """The time of the test's app (``app``): the system's until the test moves it."""
    return MovableClock()


@pytest.fixture
def app(settings: Settings, engine: Engine, catalog: Catalog, clock: MovableClock):  # type: ignore[no-untyped-def]
    # The dataset loaded once per process, keyed by this database.
    return make_app(settings, catalog=catalog, clock=clock)


@pytest.fixture
def anonymous(app) -> Iterator[TestClient]:  # type: ignore[no-untyped-def]
    with TestClient(app) as client:
        yield client


@pytest.fixture
def client(app, api_key: str) -> Iterator[TestClient]:  # type: ignore[no-untyped-def]
    with TestClient(app, headers={"Authorization": f"Bearer {api_key}"}) as client:
        yield client
