"""Fixtures of the identity API's tests in this folder, beside the shared ones of
``tests/support/identity_fixtures.py`` (org, user, web, browser): every test here runs on SQLite and on
PostgreSQL, and the tests that only send refused or anonymous requests share one app per engine."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import pytest
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.organizations import Organization, OrganizationStore
from identity.accounts.users import User, UserStore
from service.database.db import make_engine
from service.database.schema import upgrade
from service.settings import Settings
from tests.support.apps import make_app
from tests.support.clocks import MovableClock
from tests.support.defaults import POOL
from tests.support.identity_fixtures import PASSWORD, Registered, Shared, register
from tests.support.passwords import FAST_HASHING
from tests.support.postgres import throwaway_database


@pytest.fixture
def database_url(either_database: str) -> str:
    """Every test here runs on SQLite and on PostgreSQL."""
    return either_database


@pytest.fixture
def two_org_user(engine: Engine, org: Organization) -> User:
    other = OrganizationStore(engine).create("Blue Harbor")
    return UserStore(engine, hashing=FAST_HASHING).create(
        "bo@example.com", "Bo Berg", PASSWORD, [(org.id, "member"), (other.id, "admin")]
    )


@pytest.fixture
def partner(engine: Engine, org: Organization) -> Registered:
    """A third-party app: the user consents."""
    return register(engine, org, name="Partner Planner", first_party=False)


@pytest.fixture
def other_browser(app) -> Iterator[TestClient]:  # type: ignore[no-untyped-def]
    """A second browser on the same app."""
    with TestClient(app, follow_redirects=False) as browser:
        yield browser


@pytest.fixture(scope="session", params=["sqlite", "postgresql"])
def shared(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shared]:
    with ExitStack() as stack:
        if request.param == "sqlite":
            url = f"sqlite:///{tmp_path_factory.mktemp('shared') / 'state.sqlite3'}"
        else:
            url = stack.enter_context(throwaway_database())
        settings = Settings(database_url=url, validate_responses=True)
        engine = make_engine(settings.database_url, POOL)
        upgrade(engine)
        org = OrganizationStore(engine).create("Acme Foods")
        clock = MovableClock()
        yield Shared(
            make_app(settings, clock=clock),
            engine,
            org,
            register(engine, org),
            clock,
        )
        engine.dispose()


@pytest.fixture
def visitor(shared: Shared) -> Iterator[TestClient]:
    """A new browser, without cookies, on the shared app."""
    with TestClient(shared.app, follow_redirects=False) as browser:
        yield browser


@pytest.fixture
def stranger(shared: Shared) -> Iterator[TestClient]:
    """A second browser on the shared app."""
    with TestClient(shared.app, follow_redirects=False) as browser:
        yield browser
