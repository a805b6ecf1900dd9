"""Refresh tokens through the ASGI app (RFC 6749 §6, RFC 9700 §4.14.2): rotated on every use, a
rotated token presented again revokes its family, and the scope of a refresh never grows.

How every test here runs (the app in process, both databases): ``tests/support/token_flows.py``.
"""

from __future__ import annotations

from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from tests.support import token_flows as flows

ON_BOTH_ENGINES = True  # every test here that uses the state database runs on SQLite and on PostgreSQL


def test_refresh_token_rotates_on_every_use(http: TestClient, world: flows.World) -> None:
    first = flows.user_tokens(http, world.planner)
    family_expiry = flows.introspect(http, world.planner, first["refresh_token"])["exp"]
    second = flows.refresh(http, world.planner, first["refresh_token"])
    assert second.status_code == 200, second.text
    assert second.headers["cache-control"] == "no-store"
    rotated = second.json()
    assert rotated["refresh_token"] != first["refresh_token"]
    assert rotated["access_token"] != first["access_token"]
    assert rotated["token_type"] == "Bearer"
    assert flows.userinfo_status(http, rotated["access_token"]) == 200
    assert flows.introspect(http, world.planner, rotated["refresh_token"])["exp"] == family_expiry  # same family
    third = flows.refresh(http, world.planner, rotated["refresh_token"])
    assert third.status_code == 200, third.text
    assert third.json()["refresh_token"] not in (first["refresh_token"], rotated["refresh_token"])


def test_presenting_a_rotated_refresh_token_revokes_its_family(http: TestClient, world: flows.World) -> None:
    first = flows.user_tokens(http, world.planner)
    second = flows.refresh(http, world.planner, first["refresh_token"]).json()

    replay = flows.refresh(http, world.planner, first["refresh_token"])

    flows.assert_oauth_error(replay, "invalid_grant")
    flows.assert_oauth_error(flows.refresh(http, world.planner, second["refresh_token"]), "invalid_grant")
    for access_token in (first["access_token"], second["access_token"]):
        assert flows.userinfo_status(http, access_token) == 401
        assert flows.introspect(http, world.planner, access_token) == {"active": False}
    assert flows.introspect(http, world.planner, second["refresh_token"]) == {"active": False}


def test_refresh_may_ask_for_a_narrower_scope(http: TestClient, world: flows.World) -> None:
    first = flows.user_tokens(http, world.planner)

    narrowed = flows.refresh(http, world.planner, first["refresh_token"], scope="openid email")

    assert narrowed.status_code == 200, narrowed.text
    body = narrowed.json()
    assert body["scope"] == "openid email"
    assert flows.verified(http, body["access_token"], flows.ISSUER)["scope"] == "openid email"
    info = http.get("/oauth2/userinfo", headers={"Authorization": f"Bearer {body['access_token']}"}).json()
    assert info["email"] == "ana@example.com" and "name" not in info
    # RFC 6749 §6: the new refresh token keeps the scope of the one it replaces.
    again = flows.refresh(http, world.planner, body["refresh_token"])
    assert again.status_code == 200, again.text
    assert set(again.json()["scope"].split()) == set(flows.USER_SCOPE.split())


def test_refresh_ignores_unknown_scopes(http: TestClient, world: flows.World) -> None:
    first = flows.user_tokens(http, world.planner)

    narrowed = flows.refresh(http, world.planner, first["refresh_token"], scope="openid telepathy")

    assert narrowed.status_code == 200, narrowed.text
    assert narrowed.json()["scope"] == "openid"


def test_refresh_asking_a_wider_scope_is_invalid_scope(http: TestClient, world: flows.World) -> None:
    tokens = flows.user_tokens(http, world.planner, scope="openid email offline_access")

    wider = flows.refresh(http, world.planner, tokens["refresh_token"], scope="openid email profile")

    flows.assert_oauth_error(wider, "invalid_scope")


def test_refresh_token_of_another_client_is_invalid_grant(http: TestClient, world: flows.World) -> None:
    tokens = flows.user_tokens(http, world.planner)

    flows.assert_oauth_error(flows.refresh(http, world.companion, tokens["refresh_token"]), "invalid_grant")
    flows.assert_oauth_error(flows.refresh(http, world.rival, tokens["refresh_token"]), "invalid_grant")


def test_refreshed_id_token_keeps_sub_org_and_auth_time_without_nonce(http: TestClient, world: flows.World) -> None:
    first = flows.user_tokens(http, world.planner, nonce="first-nonce")
    original = flows.verified(http, first["id_token"], world.planner.id)
    assert original["nonce"] == "first-nonce"

    refreshed = flows.refresh(http, world.planner, first["refresh_token"]).json()

    claims = flows.verified(http, refreshed["id_token"], world.planner.id)
    assert claims["sub"] == original["sub"] == world.ana.id
    assert claims["org_id"] == original["org_id"] == world.acme.id
    assert claims["auth_time"] == original["auth_time"]
    assert "nonce" not in claims


def test_client_without_the_refresh_token_grant_is_unauthorized_client(
    http: TestClient, engine: Engine, world: flows.World
) -> None:
    code_only = flows.sign_in_client(engine, world.acme, "Code Only", grants=["authorization_code"])
    tokens = flows.user_tokens(http, code_only)
    assert "refresh_token" not in tokens
    planner_tokens = flows.user_tokens(http, world.planner)

    answer = flows.refresh(http, code_only, planner_tokens["refresh_token"])

    flows.assert_oauth_error(answer, "unauthorized_client")
