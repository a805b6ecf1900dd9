"""Revocation (RFC 7009): a refresh token takes its family with it, an access token goes at once.

How every test here runs (the app in process, both databases): ``tests/support/token_flows.py``.
"""

from __future__ import annotations

from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from tests.support import token_flows as flows

ON_BOTH_ENGINES = True  # every test here that uses the state database runs on SQLite and on PostgreSQL


def test_revocation_requires_client_authentication(http: TestClient, world: flows.World) -> None:
    tokens = flows.user_tokens(http, world.planner)

    response = http.post("/oauth2/revoke", data={"token": tokens["access_token"]})

    flows.assert_invalid_client(response)
    assert flows.introspect(http, world.planner, tokens["access_token"])["active"] is True


def test_revoking_an_unknown_token_answers_200_with_an_empty_body(http: TestClient, world: flows.World) -> None:
    for token in ("rt_" + "y" * 43, "whatever"):
        response = flows.revoke(http, world.planner, token, token_type_hint="refresh_token")
        assert response.status_code == 200
        assert response.content == b""
        assert response.headers["cache-control"] == "no-store"


def test_revoking_a_refresh_token_revokes_its_family_and_their_access_tokens(
    http: TestClient, world: flows.World
) -> None:
    first = flows.user_tokens(http, world.planner)
    second = flows.refresh(http, world.planner, first["refresh_token"]).json()

    response = flows.revoke(http, world.planner, second["refresh_token"], token_type_hint="refresh_token")

    assert response.status_code == 200 and response.content == b""
    flows.assert_oauth_error(flows.refresh(http, world.planner, second["refresh_token"]), "invalid_grant")
    for access_token in (first["access_token"], second["access_token"]):
        assert flows.userinfo_status(http, access_token) == 401
        assert flows.introspect(http, world.planner, access_token) == {"active": False}


def test_revoking_an_access_token_takes_effect_at_once(http: TestClient, world: flows.World) -> None:
    tokens = flows.user_tokens(http, world.planner)
    assert flows.userinfo_status(http, tokens["access_token"]) == 200

    response = flows.revoke(http, world.planner, tokens["access_token"], token_type_hint="access_token")

    assert response.status_code == 200 and response.content == b""
    assert flows.introspect(http, world.planner, tokens["access_token"]) == {"active": False}
    assert flows.userinfo_status(http, tokens["access_token"]) == 401


def test_a_client_of_another_organization_cannot_revoke(http: TestClient, world: flows.World) -> None:
    tokens = flows.user_tokens(http, world.planner)

    for token in (tokens["access_token"], tokens["refresh_token"]):
        response = flows.revoke(http, world.rival, token)
        assert response.status_code == 200 and response.content == b""

    assert flows.introspect(http, world.planner, tokens["access_token"])["active"] is True
    assert flows.introspect(http, world.planner, tokens["refresh_token"])["active"] is True
    assert flows.userinfo_status(http, tokens["access_token"]) == 200


def test_a_client_secret_post_client_revokes_and_introspects_over_basic(
    http: TestClient, engine: Engine, world: flows.World
) -> None:
    """RFC 6749 §2.3.1: Basic is taken from every client issued a secret. Authlib revokes and introspects with Basic
    whatever the client's registered method; a refusal left the token active while the application believed it
    revoked."""
    poster = flows.register(
        engine, world.acme, "Poster", auth_method="client_secret_post", grants=["client_credentials"],
        scopes=["members:read"],
    )  # fmt: skip
    by_body = {"client_id": poster.id, "client_secret": poster.secret}
    token = http.post("/oauth2/token", data={"grant_type": "client_credentials", **by_body}).json()["access_token"]
    assert flows.introspect(http, poster, token)["active"] is True  # over Basic

    response = flows.revoke(http, poster, token, token_type_hint="access_token")  # over Basic, as Authlib sends it

    assert response.status_code == 200 and response.content == b""
    assert http.post("/oauth2/introspect", data={"token": token, **by_body}).json() == {"active": False}
