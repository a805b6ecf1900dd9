"""Password reset (identity/accounts/password_reset.py): one answer for every address, bounded per network and per
account, a single-use link, and a new password ends every session and token of the user (RFC 9700 §4.14)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.disabled_users import disable, enable
from identity.accounts.password_reset import RESET_REQUESTS, PasswordReset, replace_password
from identity.accounts.passwords import WeakPassword
from identity.accounts.throttle import SignInThrottle
from identity.accounts.users import User, UserStore
from identity.common.errors import ErrorPage, Throttled
from identity.common.issuer import Issuer
from identity.common.tables import mail_outbox
from identity.mail.email_links import RESET_PASSWORD, EmailLinks
from identity.mail.outbox import MAIL, Outbox
from identity.tokens.revoked_grants import Revoker
from tests.support import identity_pages as pages
from tests.support.defaults import ACCOUNT_LIMIT, ADDRESS_LIMIT, DELIVERY, THROTTLE
from tests.support.identity_fixtures import Registered
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
        requests=Outbox(engine, DELIVERY, channel=RESET_REQUESTS, one_destination=False),
    )


def statements_of(call: Callable[[], object]) -> list[str]:
    """The SQL statements ``call`` runs (without their values), in order."""
    seen: list[str] = []

    def spy(_connection: Any, _cursor: Any, statement: str, *_: Any) -> None:
        seen.append(" ".join(statement.split()))

    event.listen(Engine, "before_cursor_execute", spy)
    try:
        call()
    finally:
        event.remove(Engine, "before_cursor_execute", spy)
    return seen


def link_for(engine: Engine, user_id: str, email: str) -> str:
    with engine.begin() as connection:
        return EmailLinks(engine).issue(connection, RESET_PASSWORD, user_id, email, timedelta(minutes=30))


def mails(engine: Engine) -> list[tuple[str, str]]:
    """The mails in the outbox (its channel of mail, not the reset requests), as (kind, recipient)."""
    query = sa.select(mail_outbox.c.kind, mail_outbox.c.recipient).where(mail_outbox.c.channel == MAIL)
    with engine.connect() as connection:
        return [tuple(row) for row in connection.execute(query)]


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
    for email in (world.ana.email.upper(), "nobody@example.com"):
        resets.request(email, "192.0.2.1")
    assert mails(engine) == []  # the worker's round mails the known address
    assert resets.deliver() == {"sent": 2, "retrying": 0, "failed": 0}
    assert mails(engine) == [("reset_password", world.ana.email)]


def test_reset_mails_are_bounded_per_account_whatever_the_network(
    world: World, engine: Engine, resets: PasswordReset
) -> None:
    for n in range(ACCOUNT_LIMIT + 2):
        resets.request(world.ana.email, f"198.51.100.{n + 1}")
    resets.deliver()
    assert len(mails(engine)) == ACCOUNT_LIMIT


@pytest.mark.parametrize("database_url", ["sqlite", "postgresql"], indirect=True)
def test_a_request_runs_the_same_statements_for_a_known_and_an_unknown_address(
    world: World, engine: Engine, resets: PasswordReset
) -> None:
    """The request does the same work for every address (8.5 ms against 6.0 ms told who had an account when the
    mail was written first): the account's lookup, link and mail are the worker's."""
    known = statements_of(lambda: resets.request(world.ana.email, "192.0.2.1"))
    unknown = statements_of(lambda: resets.request("nobody@example.com", "192.0.2.2"))
    assert known == unknown and known
    assert not any("users" in statement or "email_links" in statement for statement in known)
    assert mails(engine) == []


def test_reset_requests_are_bounded_per_network_for_every_address(engine: Engine, resets: PasswordReset) -> None:
    for n in range(ADDRESS_LIMIT):
        resets.request(f"someone{n}@example.com", "203.0.113.7")
    with pytest.raises(Throttled):
        resets.request("anyone@example.com", "203.0.113.7")


# Only the newest state of the account counts (docs/identity.md, "Credential versions").


@pytest.mark.parametrize("used_first", ["older", "newer"])
def test_using_one_reset_link_ends_every_other_link_of_the_user(
    world: World, engine: Engine, resets: PasswordReset, used_first: str
) -> None:
    links = {"older": link_for(engine, world.ana.id, world.ana.email)}
    links["newer"] = link_for(engine, world.ana.id, world.ana.email)
    other = links.pop("older" if used_first == "newer" else "newer")
    resets.reset(links[used_first], NEW_PASSWORD)
    with pytest.raises(ErrorPage, match="expired or was already used"):
        resets.reset(other, "yet another new password")
    assert UserStore(engine).authenticate(world.ana.email, NEW_PASSWORD) is not None


def test_a_password_changed_by_other_means_ends_every_outstanding_reset_link(
    world: World, engine: Engine, resets: PasswordReset
) -> None:
    token = link_for(engine, world.ana.id, world.ana.email)
    replace_password(UserStore(engine), Revoker(engine), world.ana.id, NEW_PASSWORD)  # the console, the CLI
    with pytest.raises(ErrorPage, match="expired or was already used"):
        resets.reset(token, "yet another new password")
    assert UserStore(engine).authenticate(world.ana.email, NEW_PASSWORD) is not None


def test_disabling_a_user_ends_their_reset_links(world: World, engine: Engine, resets: PasswordReset) -> None:
    token = link_for(engine, world.ana.id, world.ana.email)
    users = UserStore(engine)
    disable(users, Revoker(engine), world.ana.id)
    enable(users, world.ana.id)
    with pytest.raises(ErrorPage, match="expired or was already used"):
        resets.reset(token, NEW_PASSWORD)


@pytest.mark.parametrize("database_url", ["sqlite", "postgresql"], indirect=True)
def test_the_forgot_password_post_runs_the_same_statements_for_an_address_with_an_account_and_one_without(
    browser: TestClient, web: Registered, user: User
) -> None:
    """The answer, and the work behind it, are the same whoever the address belongs to; no statement reads the
    users or writes a link on the request's time (identity/accounts/password_reset.py)."""
    sign_in = pages.to_page(pages.authorize(browser, web.id), "sign-in")
    forgot = sign_in.replace("/sign-in?", "/forgot-password?")
    pages.submit(browser, forgot, {"email": "first@example.com"})  # the network's counter exists from here on
    posted: dict[str, list[str]] = {}
    for email in (user.email, "nobody@example.com"):
        form = [*pages.hidden_fields(pages.show(browser, forgot).text).items(), ("email", email)]
        posted[email] = statements_of(functools.partial(pages.post_form, browser, "/forgot-password", form))
    assert posted[user.email] == posted["nobody@example.com"]
    assert not any("FROM users" in statement or "email_links" in statement for statement in posted[user.email])
