"""Fixtures of the API tests (the ASGI app in process) beside the shared ones of ``tests/conftest.py``, and the guard
that fails an API test that starts a process or a listening server; the world of
``tests/support/token_flows.py``, the keys its private_key_jwt client holds, and Acme, its owner ana and its
sign-in client for the tests that need no more."""

from __future__ import annotations

from collections.abc import Generator, Iterator

import pytest
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.organizations import Organization, OrganizationStore
from identity.accounts.users import User, UserStore
from tests.support import token_flows as flows
from tests.support.api_tier import install
from tests.support.identity_fixtures import PASSWORD
from tests.support.passwords import FAST_HASHING

# An API test starts no process and no listening server (tests/support/api_tier.py): each phase of each test here is
# watched, its module- and session-scoped fixtures included, and fails naming what it started.
GUARD = install()


def _watched(item: pytest.Item) -> Generator[None, object, object]:
    with GUARD.watching() as started:
        result = yield
    if started:
        pytest.fail(f"{item.nodeid} {'; '.join(started)}: a test that does belongs in tests/system/", pytrace=False)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _watched(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _watched(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _watched(item))


@pytest.fixture
def world(engine: Engine) -> flows.World:
    organizations = OrganizationStore(engine)
    acme, beta = organizations.create("Acme Foods"), organizations.create("Beta Bakery")
    ana = UserStore(engine, hashing=FAST_HASHING).create("ana@example.com", "Ana Lima", PASSWORD, [(acme.id, "owner")])
    return flows.World(
        acme=acme,
        beta=beta,
        ana=ana,
        planner=flows.sign_in_client(engine, acme, "Menu Planner"),
        companion=flows.sign_in_client(engine, acme, "Shopping List"),
        reporter=flows.register(engine, acme, "Member Report", grants=["client_credentials"], scopes=["members:read"]),
        rival=flows.sign_in_client(
            engine,
            beta,
            "Beta Planner",
            grants=["authorization_code", "refresh_token", "client_credentials"],
            scopes=["openid", "profile", "email", "offline_access", "members:read"],
        ),
    )


@pytest.fixture
def acme(engine: Engine) -> Organization:
    return OrganizationStore(engine).create("Acme Foods")


@pytest.fixture
def ana(engine: Engine, acme: Organization) -> User:
    return UserStore(engine, hashing=FAST_HASHING).create("ana@example.com", "Ana Lima", PASSWORD, [(acme.id, "owner")])


@pytest.fixture
def planner(engine: Engine, acme: Organization, ana: User) -> flows.Registered:
    """Acme's sign-in client "Menu Planner" (``sign_in_client`` of ``tests/support/token_flows.py``), with ana."""
    return flows.sign_in_client(engine, acme, "Menu Planner")


@pytest.fixture
def http(app) -> Iterator[TestClient]:  # type: ignore[no-untyped-def]
    with TestClient(app, follow_redirects=False) as client:
        yield client


# Keys for private_key_jwt, made once a module: RSA key generation is slow.


@pytest.fixture(scope="module")
def rsa_key() -> flows.KeyPair:
    return flows.rsa_pair("rsa-1")


@pytest.fixture(scope="module")
def ec_key() -> flows.KeyPair:
    return flows.ec_pair("ec-1")


@pytest.fixture(scope="module")
def stranger_key() -> flows.KeyPair:
    """An RSA key nobody registered, under the kid of the registered one."""
    return flows.rsa_pair("rsa-1")


@pytest.fixture
def signer(engine: Engine, world: flows.World, rsa_key: flows.KeyPair, ec_key: flows.KeyPair) -> flows.Registered:
    """An Acme client authenticating with private_key_jwt, holding an RSA and an EC key."""
    return flows.register(
        engine,
        world.acme,
        "Key Holder",
        auth_method="private_key_jwt",
        grants=["client_credentials"],
        scopes=["members:read"],
        jwks={"keys": [rsa_key.public_jwk, ec_key.public_jwk]},
    )
