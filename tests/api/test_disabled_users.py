"""Disabled users (identity/accounts/disabled_users.py, ``users disable`` / ``users enable``): a disabled user cannot
sign in, every session and token of theirs stops working at once, and enabling them lets them sign in again while
the old tokens stay revoked."""

from __future__ import annotations

import json
from urllib.parse import urlsplit

from click.testing import CliRunner
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.users import UserStore
from service.cli.commands import main
from tests.support import token_flows as flows
from tests.support.identity_fixtures import PASSWORD
from tests.support.passwords import FAST_HASHING


def users_command(database_url: str, *args: str) -> dict[str, object]:
    result = CliRunner().invoke(main, ["users", *args, "--json", "--database-url", database_url])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def sign_in_page_answer(http: TestClient, client_id: str, password: str) -> str:
    """Start an authorization in a browser without a session and post the sign-in form: the page's text."""
    http.cookies.clear()
    location, _ = flows.start_authorization(http, client_id)
    assert urlsplit(location).path == "/sign-in"
    form = flows.hidden_inputs(http.get(location).text)
    answer = http.post("/sign-in", data={**form, "email": "ana@example.com", "password": password})
    assert answer.status_code == 200, answer.headers
    return answer.text


def test_disabling_a_user_ends_every_token_and_session_at_once(
    http: TestClient, world: flows.World, database_url: str
) -> None:
    tokens = flows.user_tokens(http, world.planner)
    assert users_command(database_url, "disable", "ANA@example.com") == {
        "id": world.ana.id,
        "email": world.ana.email,
        "disabled": True,
        "sessions_ended": True,
    }
    flows.assert_oauth_error(flows.refresh(http, world.planner, tokens["refresh_token"]), "invalid_grant")
    assert flows.userinfo_status(http, tokens["access_token"]) == 401
    assert flows.introspect(http, world.planner, tokens["access_token"]) == {"active": False}
    assert flows.introspect(http, world.planner, tokens["refresh_token"]) == {"active": False}
    location, _ = flows.start_authorization(http, world.planner.id)  # the browser's session has ended too
    assert urlsplit(location).path == "/sign-in"


def test_a_code_issued_before_the_user_was_disabled_gives_no_token(
    http: TestClient, world: flows.World, engine: Engine, database_url: str
) -> None:
    code, verifier = flows.sign_in_for_code(http, world.planner.id)
    users_command(database_url, "disable", world.ana.email)
    flows.assert_oauth_error(flows.exchange_code(http, world.planner, code, verifier), "invalid_grant")
    assert UserStore(engine, hashing=FAST_HASHING).get(world.ana.id).disabled


def test_a_disabled_account_is_named_only_to_whoever_gives_its_password(
    http: TestClient, world: flows.World, database_url: str
) -> None:
    users_command(database_url, "disable", world.ana.email)
    assert "Invalid email or password." in sign_in_page_answer(http, world.planner.id, "not the password at all")
    answer = sign_in_page_answer(http, world.planner.id, PASSWORD)
    assert "This account is disabled." in answer and "Invalid email or password." not in answer
    assert "rm_session" not in http.cookies


def test_an_enabled_user_signs_in_again_while_the_old_tokens_stay_revoked(
    http: TestClient, world: flows.World, database_url: str
) -> None:
    old = flows.user_tokens(http, world.planner)
    users_command(database_url, "disable", world.ana.email)
    assert users_command(database_url, "enable", world.ana.email)["disabled"] is False
    flows.assert_oauth_error(flows.refresh(http, world.planner, old["refresh_token"]), "invalid_grant")
    assert flows.userinfo_status(http, old["access_token"]) == 401
    http.cookies.clear()
    new = flows.user_tokens(http, world.planner)
    assert flows.userinfo_status(http, new["access_token"]) == 200


def test_the_member_directory_stops_listing_a_disabled_user(
    http: TestClient, world: flows.World, engine: Engine, database_url: str
) -> None:
    UserStore(engine, hashing=FAST_HASHING).create("bo@example.com", "Bo Chen", PASSWORD, [(world.acme.id, "member")])
    token = flows.application_token(http, world.reporter, scope="members:read").json()["access_token"]

    def listed() -> tuple[int, list[str]]:
        page = http.get("/directory/members", headers={"Authorization": f"Bearer {token}"}).json()
        return page["total"], [member["email"] for member in page["data"]]

    assert listed() == (2, ["ana@example.com", "bo@example.com"])
    users_command(database_url, "disable", "bo@example.com")
    assert listed() == (1, ["ana@example.com"])
    users_command(database_url, "enable", "bo@example.com")
    assert listed() == (2, ["ana@example.com", "bo@example.com"])


def test_disabling_an_unknown_address_is_a_one_line_error(engine: Engine, database_url: str) -> None:
    result = CliRunner().invoke(main, ["users", "disable", "nobody@example.com", "--database-url", database_url])
    assert result.exit_code != 0 and "no user has this email address" in result.output
