"""Credential versions (identity/accounts/users.py, docs/identity.md "Credential versions"): a session, a code and every
token carry the user's credential version their sign-in verified, and nothing works once it is no longer the
user's, even what no revocation reached.

``moved_on`` moves the version on and ends nothing, which is what a sign-in racing a password reset leaves behind
when it writes its session (or a token) after the reset's revocation ran: the rows the revocation could not see.
``tests/system/test_races.py`` fires the races themselves.
"""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.password_reset import replace_password
from identity.accounts.users import CredentialMoved, User, UserStore
from identity.clients.consents import ConsentStore
from identity.common.issuer import Issuer
from identity.common.tables import access_tokens, browser_sessions
from identity.interaction.browser import INTERACTION_COOKIE_PREFIX, Browser
from identity.interaction.sign_in_pages import SignInPages
from identity.interaction.store import InteractionStore
from identity.keys.sealing import Sealer, new_key
from identity.provider import Provider
from identity.sessions.sessions import SessionStore, hash_secret
from identity.tokens.revoked_grants import Revoker
from tests.support.defaults import LIFETIMES, TUNING
from tests.support.identity_fixtures import PASSWORD, Registered
from tests.support.identity_pages import ISSUER, authorization
from tests.support.token_flows import (
    World,
    assert_oauth_error,
    exchange_code,
    introspect,
    query_of,
    refresh,
    sign_in_for_code,
    start_authorization,
    user_tokens,
    userinfo_status,
)

ON_BOTH_ENGINES = True
NEW_PASSWORD = "a brand new kitchen password"
MOVED = "The user's password was changed, or the user disabled, since this grant's sign-in."


def moved_on(engine: Engine, user_id: str) -> None:
    """The user's credential version moves on, and nothing is ended (what a race leaves behind)."""
    users = UserStore(engine)
    with users.transaction() as connection:
        UserStore.move_credential(connection, user_id)


def count(engine: Engine, table: sa.Table) -> int:
    with engine.connect() as connection:
        return int(connection.scalar(sa.select(sa.func.count()).select_from(table)) or 0)


def test_tokens_issued_under_a_credential_version_since_replaced_are_refused_wherever_presented(
    http: TestClient, world: World, engine: Engine
) -> None:
    issued = user_tokens(http, world.planner)
    moved_on(engine, world.ana.id)
    assert introspect(http, world.planner, issued["access_token"]) == {"active": False}
    assert introspect(http, world.planner, issued["refresh_token"]) == {"active": False}
    assert userinfo_status(http, issued["access_token"]) == 401
    refused = refresh(http, world.planner, issued["refresh_token"])
    assert_oauth_error(refused, "invalid_grant")
    assert refused.json()["error_description"] == MOVED


def test_a_code_issued_under_a_credential_version_since_replaced_is_refused_before_any_token(
    http: TestClient, world: World, engine: Engine
) -> None:
    code, verifier = sign_in_for_code(http, world.planner.id)
    moved_on(engine, world.ana.id)
    refused = exchange_code(http, world.planner, code, verifier)
    assert_oauth_error(refused, "invalid_grant")
    assert refused.json()["error_description"] == MOVED
    assert count(engine, access_tokens) == 0


def test_a_session_left_behind_by_a_change_of_credential_signs_nobody_in(
    http: TestClient, world: World, engine: Engine
) -> None:
    sign_in_for_code(http, world.planner.id)
    moved_on(engine, world.ana.id)
    location, _ = start_authorization(http, world.planner.id, prompt="none")
    assert query_of(location)["error"] == "login_required"


def test_signing_in_again_after_a_change_of_credential_works_under_the_new_version(
    http: TestClient, world: World, engine: Engine
) -> None:
    user_tokens(http, world.planner)
    moved_on(engine, world.ana.id)
    again = user_tokens(http, world.planner)  # the browser's session fell behind: the sign-in page, then tokens
    assert introspect(http, world.planner, again["access_token"])["active"] is True
    assert refresh(http, world.planner, again["refresh_token"]).status_code == 200


def test_a_sign_in_whose_password_was_replaced_while_it_was_checked_starts_no_session(
    world: World, engine: Engine
) -> None:
    users, sessions = UserStore(engine), SessionStore(engine, timedelta(hours=1))
    checked = users.authenticate(world.ana.email, PASSWORD)
    assert checked is not None
    moved_on(engine, world.ana.id)  # a reset commits between the password check and the session's insert
    with pytest.raises(CredentialMoved):
        sessions.start(checked.id, world.acme.id, checked.credential_version)
    assert count(engine, browser_sessions) == 0


def test_signing_in_again_with_a_replaced_password_does_not_renew_the_session(world: World, engine: Engine) -> None:
    users, sessions = UserStore(engine), SessionStore(engine, timedelta(hours=1))
    first = users.authenticate(world.ana.email, PASSWORD)
    assert first is not None
    session, secret = sessions.start(first.id, world.acme.id, first.credential_version)
    again = users.authenticate(world.ana.email, PASSWORD)  # prompt=login: checked again under the same version
    assert again is not None
    moved_on(engine, world.ana.id)
    with pytest.raises(CredentialMoved):
        sessions.start(again.id, world.acme.id, again.credential_version, replacing=secret)
    with engine.connect() as connection:
        row = connection.execute(sa.select(browser_sessions).where(browser_sessions.c.id == session.id)).one()
    assert row.secret_hash == hash_secret(secret) and row.credential_version == first.credential_version  # as it was
    assert sessions.current(secret) is None  # behind the user's version: not live


def test_renewing_a_session_signed_out_meanwhile_starts_a_new_one(world: World, engine: Engine) -> None:
    users, sessions = UserStore(engine), SessionStore(engine, timedelta(hours=1))
    user = users.get(world.ana.id)
    session, secret = sessions.start(user.id, world.acme.id, user.credential_version)
    assert sessions.end(session.id)
    renewed, renewed_secret = sessions.start(user.id, world.acme.id, user.credential_version, replacing=secret)
    assert renewed.id != session.id and sessions.current(renewed_secret) == renewed
    assert sessions.get(session.id) is None


def test_a_password_change_from_a_version_no_longer_current_changes_nothing(world: World, engine: Engine) -> None:
    users = UserStore(engine)
    checked = users.authenticate(world.ana.email, PASSWORD)  # the console checks the current password...
    assert checked is not None
    moved_on(engine, world.ana.id)  # ...and a reset lands before its change
    with pytest.raises(CredentialMoved):
        replace_password(users, Revoker(engine), world.ana.id, NEW_PASSWORD, verified=checked.credential_version)
    assert users.authenticate(world.ana.email, NEW_PASSWORD) is None
    assert users.get(world.ana.id).credential_version == checked.credential_version + 1


class ResetWhileChecking(UserStore):
    """The user store of a node whose password check is followed, before the sign-in goes on, by a reset of that
    password on another node: the interleaving the race produces, made certain."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self._other_node = UserStore(engine)
        self._engine_of_other_node = engine

    def authenticate(self, email: str, password: str) -> User | None:
        checked = super().authenticate(email, password)
        if checked is not None:
            replace_password(self._other_node, Revoker(self._engine_of_other_node), checked.id, NEW_PASSWORD)
        return checked


def test_a_sign_in_whose_password_is_reset_while_it_is_checked_is_refused_and_starts_nothing(
    engine: Engine, user: User, web: Registered, caplog: pytest.LogCaptureFixture
) -> None:
    provider = Provider(engine, Issuer(ISSUER), LIFETIMES, TUNING, b"c" * 32, Sealer([new_key()]), b"d" * 32)
    pages = SignInPages.build(
        issuer=provider.issuer, clients=provider.clients, users=ResetWhileChecking(engine), sessions=provider.sessions,
        consents=ConsentStore(engine), codes=provider.codes, interactions=InteractionStore(engine),
        throttle=provider.sign_in_pages.sign_in.throttle, devices=provider.sign_in_pages.sign_in.devices,
        interaction_ttl=LIFETIMES.interaction,
        outbox=provider.outbox, verification=provider.email_verification, password_reset=provider.password_reset,
    )  # fmt: skip
    started = pages.authorization.start(authorization(web.id), Browser())
    assert started.location is not None and started.location.startswith("/sign-in?interaction=")
    [binding] = started.cookies
    browser = Browser(bindings={binding.name: binding.value}, address="192.0.2.1")
    interaction_id = binding.name.removeprefix(INTERACTION_COOKIE_PREFIX)
    shown = pages.sign_in.show(interaction_id, browser).page
    assert shown is not None
    caplog.set_level(logging.INFO, logger="regional_menus.audit")
    answered = pages.sign_in.post(
        [("interaction", interaction_id), ("csrf_token", shown.data["csrf_token"]), ("email", user.email),
         ("password", PASSWORD)],
        browser,
    )  # fmt: skip
    assert answered.page is not None and answered.page.data["error"] == "Invalid email or password."
    assert answered.location is None and not answered.cookies  # no session, no code
    assert count(engine, browser_sessions) == 0
    events = [dict(r.fields) for r in caplog.records if r.name == "regional_menus.audit"]  # type: ignore[attr-defined]
    assert [(e["event"], e["outcome"], e.get("reason")) for e in events if e["event"] == "sign_in"] == [
        ("sign_in", "failure", "credential_changed")
    ]
