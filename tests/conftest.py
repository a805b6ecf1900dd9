"""Fixtures chain settings → store → app → client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from data.catalog import Catalog, load_catalog
from service.api_keys import ApiKeyStore
from service.app import create_app
from service.db import ensure_schema, make_engine
from service.settings import Settings

CURSOR_KEY = b"k" * 32


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return load_catalog(cursor_key=CURSOR_KEY)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(database_url=f"sqlite:///{tmp_path / 'state.sqlite3'}", validate_responses=True)


@pytest.fixture
def engine(settings: Settings) -> Iterator[Engine]:
    engine = make_engine(settings.database_url)
    ensure_schema(engine)
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
