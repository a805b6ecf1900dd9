"""Application tokens (RFC 6749 §4.4): the client_credentials grant, its subject, and the application scopes.

How every test here runs (the app in process, both databases): ``tests/support/token_flows.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

import jwt
import pytest
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from tests.support import token_flows as flows

ON_BOTH_ENGINES = True  # every test here that uses the state database runs on SQLite and on PostgreSQL


def test_client_credentials_is_unauthorized_for_clients_not_allowed_the_grant(
    http: TestClient, world: flows.World
) -> None:
    flows.assert_oauth_error(flows.application_token(http, world.planner, scope="members:read"), "unauthorized_client")


def test_application_token_has_the_client_as_subject_and_no_refresh_or_id_token(
    http: TestClient, world: flows.World
) -> None:
    response = flows.application_token(http, world.reporter, scope="members:read")

    assert response.status_code == 200, response.text
    assert response.headers["cache-control"] == "no-store"
    body = response.json()
    assert body["token_type"] == "Bearer"
    assert body["scope"] == "members:read"
    assert "refresh_token" not in body and "id_token" not in body
    claims = flows.verified(http, body["access_token"], flows.ISSUER)
    assert claims["sub"] == claims["client_id"] == world.reporter.id
    assert claims["org_id"] == world.acme.id


def test_application_access_token_is_typed_at_jwt(http: TestClient, world: flows.World) -> None:
    body = flows.application_token(http, world.reporter, scope="members:read").json()

    assert jwt.get_unverified_header(body["access_token"])["typ"] == "at+jwt"


@pytest.mark.parametrize("scope", ["openid", "profile", "offline_access", "members:read email"])
def test_client_credentials_asking_a_scope_beyond_the_application_scopes_is_invalid_scope(
    http: TestClient, world: flows.World, scope: str
) -> None:
    flows.assert_oauth_error(flows.application_token(http, world.reporter, scope=scope), "invalid_scope")


def test_client_credentials_asking_members_read_without_it_allowed_is_invalid_scope(
    http: TestClient, engine: Engine, world: flows.World
) -> None:
    no_directory = flows.register(
        engine,
        world.acme,
        "Sign-in With Credentials",
        grants=["authorization_code", "client_credentials"],
        scopes=["openid", "profile"],
        redirect_uris=[flows.REDIRECT_URI],
    )

    flows.assert_oauth_error(flows.application_token(http, no_directory, scope="members:read"), "invalid_scope")


def test_client_credentials_ignores_unknown_scopes(http: TestClient, world: flows.World) -> None:
    response = flows.application_token(http, world.reporter, scope="members:read recipes:write")

    assert response.status_code == 200, response.text
    assert response.json()["scope"] == "members:read"


def test_client_credentials_without_scope_gets_the_allowed_application_scopes(
    http: TestClient, world: flows.World
) -> None:
    response = flows.application_token(http, world.reporter)

    assert response.status_code == 200, response.text
    assert response.json()["scope"] == "members:read"


def test_a_token_request_in_chunks_or_with_a_charset_is_answered_like_any_other(
    http: TestClient, world: flows.World
) -> None:
    """Connexion's form parser reads both (the contract's fast form rules take neither: service/web/fast_forms.py),
    and they are answered as the plain form is."""

    def chunks() -> Iterator[bytes]:
        yield b"grant_type=client_credentials"
        yield b"&scope=members%3Aread"

    form = {"Content-Type": "application/x-www-form-urlencoded", **world.reporter.basic}
    chunked = http.post("/oauth2/token", content=chunks(), headers=form)
    charset = {**form, "Content-Type": "application/x-www-form-urlencoded; charset=utf-8"}
    with_charset = http.post(
        "/oauth2/token", content=b"grant_type=client_credentials&scope=members%3Aread", headers=charset
    )
    for response in (chunked, with_charset):
        assert response.status_code == 200, response.text
        assert response.json()["scope"] == "members:read" and response.headers["cache-control"] == "no-store"
