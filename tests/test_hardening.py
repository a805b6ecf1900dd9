"""The hardening found by an outside attack on the provider (issue 17, section 2), one rule a test.

Client assertions without a ``kid`` against a mixed JWKS, least privilege for application clients,
loopback redirect URIs (RFC 8252 §7.3), signing in again without ending other apps' offline access,
and the state folder's permissions. API tests drive the ASGI app; helpers come from the identity
provider's API tests (``tests/test_identity_part2.py``).
"""

from __future__ import annotations

import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jwt
import pytest
from click.testing import CliRunner
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.clients import redirect_uri_matches
from identity.organizations import Organization, OrganizationStore
from identity.users import User, UserStore
from service.cli import main
from service.db import make_engine
from tests import test_identity_part2 as part2
from tests.test_identity_part2 import PASSWORD, Registered, assert_oauth_error, introspect, refresh, user_tokens


@pytest.fixture
def acme(engine: Engine) -> Organization:
    return OrganizationStore(engine).create("Acme Foods")


@pytest.fixture
def ana(engine: Engine, acme: Organization) -> User:
    return UserStore(engine).create("ana@example.com", "Ana Lima", PASSWORD, [(acme.id, "owner")])


@pytest.fixture
def http(app: Any) -> Iterator[TestClient]:
    with TestClient(app, follow_redirects=False) as client:
        yield client


# private_key_jwt with a JWKS holding an RSA and an EC key, assertions without kid


@pytest.fixture(scope="module")
def rsa_key() -> part2.KeyPair:
    return part2.rsa_pair("rsa-1")


@pytest.fixture(scope="module")
def ec_key() -> part2.KeyPair:
    return part2.ec_pair("ec-1")


@pytest.fixture
def signer(engine: Engine, acme: Organization, rsa_key: part2.KeyPair, ec_key: part2.KeyPair) -> Registered:
    return part2.register(
        engine,
        acme,
        "Key Holder",
        auth_method="private_key_jwt",
        grants=["client_credentials"],
        scopes=["members:read"],
        jwks={"keys": [rsa_key.public_jwk, ec_key.public_jwk]},
    )


def assertion_without_kid(client_id: str, key: Any, algorithm: str) -> str:
    at = int(time.time())
    claims = {"iss": client_id, "sub": client_id, "aud": part2.ISSUER, "iat": at, "exp": at + 300, "jti": str(at)}
    claims["jti"] += algorithm + str(id(key))
    return jwt.encode(claims, key, algorithm=algorithm)


@pytest.mark.parametrize("algorithm", ["RS256", "PS256", "ES256"])
def test_assertion_without_kid_is_verified_with_the_key_of_its_algorithms_type(
    http: TestClient, signer: Registered, rsa_key: part2.KeyPair, ec_key: part2.KeyPair, algorithm: str
) -> None:
    key = ec_key.private if algorithm == "ES256" else rsa_key.private
    response = part2.assertion_token_request(http, assertion_without_kid(signer.id, key, algorithm))
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("algorithm", ["RS256", "ES256"])
def test_assertion_without_kid_signed_by_an_unknown_key_is_invalid_client_not_a_500(
    http: TestClient, signer: Registered, algorithm: str
) -> None:
    stranger = part2.ec_pair("x") if algorithm == "ES256" else part2.rsa_pair("x")
    response = part2.assertion_token_request(http, assertion_without_kid(signer.id, stranger.private, algorithm))
    assert_oauth_error(response, "invalid_client", 401)


# Least privilege: no application scope unless registered with it


def test_client_credentials_client_registered_without_scope_gets_no_application_scope(
    http: TestClient, engine: Engine, acme: Organization
) -> None:
    job = part2.register(engine, acme, "Nightly job", grants=["client_credentials"])
    assert job.client.scopes == ()
    assert_oauth_error(part2.application_token(http, job, scope="members:read"), "invalid_scope")
    assert_oauth_error(part2.application_token(http, job), "invalid_scope")


def test_client_credentials_client_registered_with_members_read_gets_it(
    http: TestClient, engine: Engine, acme: Organization
) -> None:
    reporter = part2.register(engine, acme, "Reporter", grants=["client_credentials"], scopes=["members:read"])
    response = part2.application_token(http, reporter)
    assert response.status_code == 200, response.text
    assert response.json()["scope"] == "members:read"


def test_clients_create_help_says_members_read_is_granted_only_when_asked() -> None:
    result = CliRunner().invoke(main, ["clients", "create", "--help"], terminal_width=200)
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert "no application scope: members:read" in text and "only when given" in text


# Loopback redirect URIs: RFC 8252 §7.3


@pytest.mark.parametrize(
    ("registered", "presented", "matches"),
    [
        ("http://127.0.0.1/callback", "http://127.0.0.1:51234/callback", True),
        ("http://127.0.0.1:8400/callback", "http://127.0.0.1:51234/callback", True),
        ("http://[::1]/callback", "http://[::1]:51234/callback", True),
        ("http://127.0.0.1/callback", "http://127.0.0.1:51234/callback?x=1", False),
        ("http://127.0.0.1/callback", "http://127.0.0.1:51234/other", False),
        ("http://127.0.0.1/callback", "http://127.0.0.1:99999/callback", False),
        ("http://127.0.0.1/callback", "http://[::1]:51234/callback", False),
        ("http://127.0.0.1/callback", "https://127.0.0.1:51234/callback", False),
        ("http://127.0.0.1/callback", "http://user@127.0.0.1:51234/callback", False),
        ("http://localhost/callback", "http://localhost:51234/callback", False),  # RFC 8252 §8.3: IP literals
        ("https://app.example/callback", "https://app.example:8443/callback", False),
    ],
)
def test_loopback_ip_redirect_uri_matches_any_port_and_every_other_uri_matches_exactly(
    registered: str, presented: str, matches: bool
) -> None:
    assert redirect_uri_matches(registered, presented) is matches


def test_native_app_registered_on_loopback_signs_in_on_an_ephemeral_port(
    http: TestClient, engine: Engine, acme: Organization, ana: User
) -> None:
    native = part2.register(engine, acme, "Desktop app", redirect_uris=["http://127.0.0.1/callback"])
    params = {
        "response_type": "code",
        "client_id": native.id,
        "scope": "openid",
        "state": "s",
        "code_challenge": part2.pkce_pair()[1],
        "code_challenge_method": "S256",
    }
    on_port = http.get("/oauth2/authorize", params={**params, "redirect_uri": "http://127.0.0.1:51234/callback"})
    assert on_port.status_code == 302 and "/sign-in" in on_port.headers["location"], on_port.text
    other_path = http.get("/oauth2/authorize", params={**params, "redirect_uri": "http://127.0.0.1:51234/elsewhere"})
    assert other_path.status_code == 400 and "location" not in other_path.headers


# Signing in again is not a sign-out


@pytest.fixture
def planner(engine: Engine, acme: Organization, ana: User) -> Registered:
    return part2.sign_in_client(engine, acme, "Menu Planner")


@pytest.fixture
def companion(engine: Engine, acme: Organization, ana: User) -> Registered:
    return part2.sign_in_client(engine, acme, "Shopping List")


@pytest.mark.parametrize("again", [{"prompt": "login"}, {"max_age": "0"}])
def test_signing_in_again_to_another_app_keeps_the_first_apps_offline_access(
    http: TestClient, planner: Registered, companion: Registered, again: dict[str, str]
) -> None:
    first = user_tokens(http, planner)
    time.sleep(1)  # max_age=0 and auth_time count whole seconds
    second = user_tokens(http, companion, **again)

    refreshed = refresh(http, planner, first["refresh_token"])

    assert refreshed.status_code == 200, refreshed.text
    assert introspect(http, planner, first["access_token"])["active"] is True
    first_sid = part2.verified(http, first["id_token"], planner.id)["sid"]
    assert part2.verified(http, second["id_token"], companion.id)["sid"] == first_sid


def test_signing_out_after_signing_in_again_ends_the_earlier_apps_offline_access_too(
    http: TestClient, planner: Registered, companion: Registered
) -> None:
    first = user_tokens(http, planner)
    second = user_tokens(http, companion, prompt="login")

    signed_out = part2.end_session(
        http, "GET", id_token_hint=second["id_token"], post_logout_redirect_uri=part2.LOGOUT_URI
    )

    assert signed_out.status_code == 302, signed_out.text
    assert_oauth_error(refresh(http, planner, first["refresh_token"]), "invalid_grant")


def test_signing_in_as_someone_else_ends_the_first_users_browser_session_grants(
    http: TestClient, engine: Engine, acme: Organization, planner: Registered, companion: Registered
) -> None:
    UserStore(engine).create("bo@example.com", "Bo", PASSWORD, [(acme.id, "member")])
    first = user_tokens(http, planner)
    code, verifier = part2.sign_in(http, companion.id, email="bo@example.com", prompt="login")
    assert code

    assert_oauth_error(refresh(http, planner, first["refresh_token"]), "invalid_grant")


# State files: ./var/ 0700, the SQLite database 0600


def test_state_folder_is_private_to_the_user_and_the_database_file_too(tmp_path: Path) -> None:
    database = tmp_path / "var" / "regional-menus.sqlite3"
    engine = make_engine(f"sqlite:///{database}")
    with engine.connect() as connection:
        connection.exec_driver_sql("CREATE TABLE t (x INTEGER)")
        connection.commit()
    engine.dispose()
    assert stat.S_IMODE(database.parent.stat().st_mode) == 0o700
    for path in database.parent.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path

