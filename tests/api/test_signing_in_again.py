"""Signing in again is not a sign-out: the offline access of the apps signed in before is kept, until the
browser signs out or another user signs in on it."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.organizations import Organization
from identity.accounts.users import User, UserStore
from tests.support import token_flows
from tests.support.clocks import MovableClock
from tests.support.identity_fixtures import PASSWORD
from tests.support.passwords import FAST_HASHING
from tests.support.token_flows import Registered, assert_oauth_error, introspect, refresh, user_tokens

# Signing in again is not a sign-out


@pytest.fixture
def companion(engine: Engine, acme: Organization, ana: User) -> Registered:
    return token_flows.sign_in_client(engine, acme, "Shopping List")


@pytest.mark.parametrize("again", [{"prompt": "login"}, {"max_age": "0"}])
def test_signing_in_again_to_another_app_keeps_the_first_apps_offline_access(
    http: TestClient, planner: Registered, companion: Registered, again: dict[str, str], clock: MovableClock
) -> None:
    first = user_tokens(http, planner)
    clock.advance(1)  # a second later: max_age=0 and auth_time count whole seconds
    second = user_tokens(http, companion, **again)

    refreshed = refresh(http, planner, first["refresh_token"])

    assert refreshed.status_code == 200, refreshed.text
    assert introspect(http, planner, first["access_token"])["active"] is True
    first_sid = token_flows.verified(http, first["id_token"], planner.id)["sid"]
    assert token_flows.verified(http, second["id_token"], companion.id, leeway=1)["sid"] == first_sid  # a second ahead


def test_signing_out_after_signing_in_again_ends_the_earlier_apps_offline_access_too(
    http: TestClient, planner: Registered, companion: Registered
) -> None:
    first = user_tokens(http, planner)
    second = user_tokens(http, companion, prompt="login")

    signed_out = token_flows.end_session(
        http, "GET", id_token_hint=second["id_token"], post_logout_redirect_uri=token_flows.LOGOUT_URI
    )

    assert signed_out.status_code == 302, signed_out.text
    assert_oauth_error(refresh(http, planner, first["refresh_token"]), "invalid_grant")


def test_signing_in_as_someone_else_ends_the_first_users_browser_session_grants(
    http: TestClient, engine: Engine, acme: Organization, planner: Registered, companion: Registered
) -> None:
    UserStore(engine, hashing=FAST_HASHING).create("bo@example.com", "Bo", PASSWORD, [(acme.id, "member")])
    first = user_tokens(http, planner)
    code, verifier = token_flows.sign_in_for_code(http, companion.id, email="bo@example.com", prompt="login")
    assert code

    assert_oauth_error(refresh(http, planner, first["refresh_token"]), "invalid_grant")
