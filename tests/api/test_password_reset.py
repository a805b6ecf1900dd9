"""Password reset (identity/password_reset.py): one answer for every address, bounded per network and per
account, a single-use link, and a new password ends every session and token of the user (RFC 9700 §4.14)."""

from __future__ import annotations

from datetime import timedelta

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.email_links import RESET_PASSWORD, EmailLinks
from identity.errors import ErrorPage, Throttled
from identity.issuer import Issuer
from identity.outbox import Outbox
from identity.password_reset import PasswordReset
from identity.passwords import WeakPassword
from identity.revoked_grants import Revoker
from identity.tables import mail_outbox
from identity.throttle import SignInThrottle
from identity.users import UserStore
from tests.support.defaults import ACCOUNT_LIMIT, ADDRESS_LIMIT, DELIVERY, THROTTLE
from tests.support.passwords import FAST_HASHING
from tests.support.token_flows import ISSUER, World, assert_oauth_error, refresh, user_tokens, userinfo_status

NEW_PASSWORD = "a brand new kitchen password"


@pytest.fixture
def resets(engine: Engine) -> PasswordReset:
    return PasswordReset(
        EmailLinks(engine),
        Outbox(engine, DELIVERY),
        UserStore(engine, hashing=FAST_HASHING),
        Revoker(engine),
        SignInThrottle(engine, THROTTLE),
        Issuer(ISSUER),
        timedelta(minutes=30),
    )


def link_for(engine: Engine, user_id: str, email: str) -> str:
    with engine.begin() as connection:
        return EmailLinks(engine).issue(connection, RESET_PASSWORD, user_id, email, timedelta(minutes=30))


def mails(engine: Engine) -> list[tuple[str, str]]:
    with engine.connect() as connection:
        return [tuple(row) for row in connection.execute(sa.select(mail_outbox.c.kind, mail_outbox.c.recipient))]


def test_a_reset_ends_every_session_and_revokes_every_token_of_the_user(
    http: TestClient, world: World, engine: Engine, resets: PasswordReset
) -> None:
    planner, companion = user_tokens(http, world.planner), user_tokens(http, world.companion)
    user_id = resets.reset(link_for(engine, world.ana.id, world.ana.email), NEW_PASSWORD)
    assert user_id == world.ana.id
    for client, issued in ((world.planner, planner), (world.companion, companion)):
        assert_oauth_error(refresh(http, client, issued["refresh_token"]), "invalid_grant")
        assert userinfo_status(http, issued["access_token"]) == 401
    users = UserStore(engine, hashing=FAST_HASHING)
    assert users.authenticate(world.ana.email, NEW_PASSWORD) is not None


def test_a_reset_link_works_once(world: World, engine: Engine, resets: PasswordReset) -> None:
    token = link_for(engine, world.ana.id, world.ana.email)
    resets.reset(token, NEW_PASSWORD)
    with pytest.raises(ErrorPage, match="expired or was already used"):
        resets.reset(token, "yet another new password")


def test_a_weak_new_password_is_refused_without_spending_the_link(
    world: World, engine: Engine, resets: PasswordReset
) -> None:
    token = link_for(engine, world.ana.id, world.ana.email)
    with pytest.raises(WeakPassword):
        resets.reset(token, "short")
    assert resets.reset(token, NEW_PASSWORD) == world.ana.id


def test_asking_for_a_reset_mails_only_a_known_address_with_the_same_outcome(
    world: World, engine: Engine, resets: PasswordReset
) -> None:
    assert resets.request(world.ana.email.upper(), "192.0.2.1") is None
    assert resets.request("nobody@example.com", "192.0.2.1") is None
    assert mails(engine) == [("reset_password", world.ana.email)]


def test_reset_mails_are_bounded_per_account_whatever_the_network(
    world: World, engine: Engine, resets: PasswordReset
) -> None:
    for n in range(ACCOUNT_LIMIT + 2):
        resets.request(world.ana.email, f"198.51.100.{n + 1}")
    assert len(mails(engine)) == ACCOUNT_LIMIT


def test_reset_requests_are_bounded_per_network_for_every_address(engine: Engine, resets: PasswordReset) -> None:
    for n in range(ADDRESS_LIMIT):
        resets.request(f"someone{n}@example.com", "203.0.113.7")
    with pytest.raises(Throttled):
        resets.request("anyone@example.com", "203.0.113.7")
