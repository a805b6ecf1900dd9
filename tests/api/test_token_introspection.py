"""Introspection (RFC 7662): metadata of active tokens, and only ``active: false`` for anything else.

How every test here runs (the app in process, both databases): ``tests/support/token_flows.py``.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from starlette.testclient import TestClient

from tests.support import token_flows as flows
from tests.support.clocks import MovableClock

ON_BOTH_ENGINES = True  # every test here that uses the state database runs on SQLite and on PostgreSQL


ACCESS_TOKEN_FIELDS = {
    "active", "scope", "client_id", "sub", "exp", "iat", "iss", "aud", "token_type", "jti", "org_id", "username", "sid",
}  # fmt: skip


def test_introspection_requires_client_authentication(http: TestClient, world: flows.World) -> None:
    token = flows.application_token(http, world.reporter).json()["access_token"]

    flows.assert_invalid_client(http.post("/oauth2/introspect", data={"token": token}))
    wrong = flows.Registered(world.planner.client, "cs_not-the-secret")
    response = http.post("/oauth2/introspect", data={"token": token}, headers=wrong.basic)
    flows.assert_invalid_client(response)
    assert response.headers["www-authenticate"].startswith("Basic ")


def test_introspection_without_a_token_is_invalid_request(http: TestClient, world: flows.World) -> None:
    response = http.post("/oauth2/introspect", data={"token_type_hint": "access_token"}, headers=world.planner.basic)

    flows.assert_oauth_error(response, "invalid_request")


def test_introspection_of_an_active_user_access_token_returns_its_metadata(
    http: TestClient, world: flows.World
) -> None:
    tokens = flows.user_tokens(http, world.planner)
    claims = flows.verified(http, tokens["access_token"], flows.ISSUER)
    sid = flows.verified(http, tokens["id_token"], world.planner.id)["sid"]

    answer = flows.introspect(http, world.planner, tokens["access_token"])

    assert ACCESS_TOKEN_FIELDS <= set(answer)
    assert answer["active"] is True
    assert set(answer["scope"].split()) == set(flows.USER_SCOPE.split())
    assert answer["client_id"] == world.planner.id
    assert answer["sub"] == world.ana.id
    assert (answer["exp"], answer["iat"], answer["jti"]) == (claims["exp"], claims["iat"], claims["jti"])
    assert answer["iss"] == flows.ISSUER and answer["aud"] == flows.ISSUER
    assert answer["token_type"] == "Bearer"
    assert answer["org_id"] == world.acme.id
    assert answer["username"] == "ana@example.com"
    assert answer["sid"] == sid


def test_introspection_of_an_application_token_names_the_client_and_no_user(
    http: TestClient, world: flows.World
) -> None:
    token = flows.application_token(http, world.reporter).json()["access_token"]

    answer = flows.introspect(http, world.planner, token)

    assert answer["active"] is True and answer["token_type"] == "Bearer"
    assert answer["sub"] == answer["client_id"] == world.reporter.id
    assert answer["scope"] == "members:read" and answer["org_id"] == world.acme.id
    assert "username" not in answer and "sid" not in answer


def test_introspection_of_a_refresh_token_says_token_type_refresh_token(http: TestClient, world: flows.World) -> None:
    tokens = flows.user_tokens(http, world.planner)

    answer = flows.introspect(http, world.planner, tokens["refresh_token"])

    assert answer["active"] is True
    assert answer["token_type"] == "refresh_token"
    assert answer["client_id"] == world.planner.id
    assert answer["sub"] == world.ana.id
    assert answer["org_id"] == world.acme.id
    assert answer["username"] == "ana@example.com"


def test_introspection_honours_but_does_not_trust_token_type_hint(http: TestClient, world: flows.World) -> None:
    tokens = flows.user_tokens(http, world.planner)

    refresh_as_access = flows.introspect(http, world.planner, tokens["refresh_token"], token_type_hint="access_token")
    access_as_refresh = flows.introspect(http, world.planner, tokens["access_token"], token_type_hint="refresh_token")
    unknown_hint = flows.introspect(http, world.planner, tokens["access_token"], token_type_hint="id_token")

    assert refresh_as_access["active"] is True and refresh_as_access["token_type"] == "refresh_token"
    assert access_as_refresh["active"] is True and access_as_refresh["token_type"] == "Bearer"
    assert unknown_hint["active"] is True and unknown_hint["token_type"] == "Bearer"


@pytest.mark.parametrize("token", ["rt_" + "x" * 43, "not-a-token", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0."])
def test_introspection_of_an_unknown_token_is_only_inactive(http: TestClient, world: flows.World, token: str) -> None:
    assert flows.introspect(http, world.planner, token) == {"active": False}


def test_introspection_of_an_expired_access_token_is_only_inactive(
    http: TestClient, world: flows.World, clock: MovableClock
) -> None:
    expired = flows.then_later(clock, lambda: flows.application_token(http, world.reporter).json()["access_token"])

    assert flows.introspect(http, world.reporter, expired) == {"active": False}


@pytest.mark.parametrize(("ahead", "active"), [(30, True), (59, True), (61, False)])
def test_a_token_issued_by_a_node_whose_clock_runs_ahead_is_active_within_a_minute_of_skew(
    http: TestClient, world: flows.World, clock: MovableClock, ahead: int, active: bool
) -> None:
    """identity/tokens/verification.py ISSUED_AT_LEEWAY: another node's clock ahead by less than a minute signs tokens
    every node takes (their iat in this node's future); a token from further ahead is refused. The clock is held:
    a second boundary passed between issue and introspection would make 61 s of skew look like 60."""
    clock.hold()
    token = flows.application_token(http, world.reporter).json()["access_token"]
    clock.advance(-ahead)  # this node's clock is behind the one that issued the token

    assert flows.introspect(http, world.reporter, token)["active"] is active


def test_introspection_of_an_expired_refresh_token_is_only_inactive(
    http: TestClient, world: flows.World, clock: MovableClock
) -> None:
    tokens = flows.then_later(clock, lambda: flows.user_tokens(http, world.planner), later=timedelta(days=31))

    assert flows.introspect(http, world.planner, tokens["refresh_token"]) == {"active": False}
    flows.assert_oauth_error(flows.refresh(http, world.planner, tokens["refresh_token"]), "invalid_grant")


def test_introspection_of_revoked_tokens_is_only_inactive(http: TestClient, world: flows.World) -> None:
    tokens = flows.user_tokens(http, world.planner)
    assert flows.revoke(http, world.planner, tokens["refresh_token"]).status_code == 200

    assert flows.introspect(http, world.planner, tokens["refresh_token"]) == {"active": False}
    assert flows.introspect(http, world.planner, tokens["access_token"]) == {"active": False}


def test_introspection_of_another_organizations_tokens_is_only_inactive(http: TestClient, world: flows.World) -> None:
    tokens = flows.user_tokens(http, world.planner)
    application = flows.application_token(http, world.reporter).json()["access_token"]

    for token in (tokens["access_token"], tokens["refresh_token"], application):
        assert flows.introspect(http, world.rival, token) == {"active": False}
        assert flows.introspect(http, world.rival, token, token_type_hint="refresh_token") == {"active": False}


def test_introspection_of_an_id_token_is_only_inactive(http: TestClient, world: flows.World) -> None:
    tokens = flows.user_tokens(http, world.planner)

    assert flows.introspect(http, world.planner, tokens["id_token"]) == {"active": False}


def test_introspection_and_revocation_go_by_the_clients_organization_not_the_users(
    http: TestClient, world: flows.World
) -> None:
    tokens = flows.user_tokens(http, world.rival)  # Ana of Acme signs in to Beta's client
    assert flows.verified(http, tokens["access_token"], flows.ISSUER)["org_id"] == world.acme.id

    assert flows.introspect(http, world.planner, tokens["access_token"]) == {"active": False}
    assert flows.introspect(http, world.planner, tokens["refresh_token"]) == {"active": False}
    assert flows.revoke(http, world.planner, tokens["refresh_token"]).status_code == 200
    assert flows.introspect(http, world.rival, tokens["refresh_token"])["active"] is True
    assert flows.introspect(http, world.rival, tokens["access_token"])["org_id"] == world.acme.id


def test_introspection_sees_tokens_of_other_clients_of_the_same_organization(
    http: TestClient, world: flows.World
) -> None:
    tokens = flows.user_tokens(http, world.planner)

    answer = flows.introspect(http, world.companion, tokens["access_token"])

    assert answer["active"] is True and answer["client_id"] == world.planner.id
