"""Fixtures chain settings → store → app → client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from data.catalog import Catalog, load_catalog
from identity.api_keys import ApiKeyStore
from service.app import create_app
from service.db import make_engine
from service.schema import upgrade
from service.settings import Settings
from tests.postgres import empty_every_table, throwaway_database

pytest_plugins = ["tests.identity_fixtures"]  # org, user, web and browser for the identity API's tests

CURSOR_KEY = b"k" * 32


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return load_catalog(cursor_key=CURSOR_KEY)


@pytest.fixture
def database_url(tmp_path: Path) -> str:
    """The state database of a test: SQLite. Modules that test the store on both engines override it
    with ``either_database``."""
    return f"sqlite:///{tmp_path / 'state.sqlite3'}"


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    """One throw-away PostgreSQL database for the session, emptied before each test that uses it."""
    with throwaway_database() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def either_database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh state database on each engine in turn."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'state.sqlite3'}"
    url: str = request.getfixturevalue("postgres_database")
    empty_every_table(url)
    return url


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, validate_responses=True)


@pytest.fixture
def engine(settings: Settings) -> Iterator[Engine]:
    engine = make_engine(settings.database_url)
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
def app(settings: Settings, engine: Engine):  # type: ignore[no-untyped-def]
    return create_app(settings)


@pytest.fixture
def anonymous(app) -> Iterator[TestClient]:  # type: ignore[no-untyped-def]
    with TestClient(app) as client:
        yield client


@pytest.fixture
def client(app, api_key: str) -> Iterator[TestClient]:  # type: ignore[no-untyped-def]
    with TestClient(app, headers={"Authorization": f"Bearer {api_key}"}) as client:
        yield client
