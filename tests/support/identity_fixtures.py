"""Fixtures shared by the identity API's tests (registered in ``tests/conftest.py``): an organization, a user,
a first-party web client and a browser that does not follow redirects, with the constants they use."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.organizations import Organization, OrganizationStore
from identity.accounts.users import User, UserStore
from identity.clients.registry import ClientStore
from tests.support.clocks import MovableClock
from tests.support.passwords import FAST_HASHING

CALLBACK = "https://app.example/callback"
CALLBACK_WITH_QUERY = "https://app.example/callback?tenant=acme"
EMAIL = "ana@example.com"
PASSWORD = "correct horse battery staple"


@dataclass(frozen=True)
class Registered:
    id: str
    secret: str


@dataclass(frozen=True)
class Shared:
    """One app for the tests that only send refused or anonymous requests: building an app parses the
    contracts (about half a second), and these tests leave nothing behind that another could see."""

    app: Any
    engine: Engine
    org: Organization
    web: Registered
    clock: MovableClock  # the app's: a test that moves it moves it back


def register(engine: Engine, org: Organization, **options: Any) -> Registered:
    options = {
        "name": "Menus Web",
        "auth_method": "client_secret_basic",
        "redirect_uris": [CALLBACK, CALLBACK_WITH_QUERY],
        "first_party": True,
        **options,
    }
    client, secret = ClientStore(engine).create(org_id=org.id, **options)
    assert secret is not None
    return Registered(client.id, secret)


@pytest.fixture
def org(engine: Engine) -> Organization:
    return OrganizationStore(engine).create("Acme Foods")


@pytest.fixture
def user(engine: Engine, org: Organization) -> User:
    return UserStore(engine, hashing=FAST_HASHING).create(EMAIL, "Ana Lima", PASSWORD, [(org.id, "owner")])


@pytest.fixture
def web(engine: Engine, org: Organization) -> Registered:
    """A first-party web app: no consent page."""
    return register(engine, org)


@pytest.fixture
def browser(app: Any) -> Iterator[TestClient]:
    with TestClient(app, follow_redirects=False) as browser:
        yield browser
