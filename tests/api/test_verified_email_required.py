"""Clients that require a verified email address (``clients create --require-verified-email``): an unverified user's
sign-in pauses on the check-your-email page, no code is issued, and the mailed link resumes it: in the same browser
straight to the client with a code, in another browser by verifying the address for the first one to continue."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.organizations import Organization
from identity.accounts.throttle import SignInThrottle
from identity.accounts.users import User, UserStore
from identity.clients.registry import ClientStore
from identity.common.tables import mail_outbox
from service.cli.commands import main
from service.settings import Settings
from tests.support import identity_pages as pages
from tests.support.clocks import MovableClock
from tests.support.console_client import ConsoleBrowser
from tests.support.defaults import ACCOUNT_LIMIT, THROTTLE
from tests.support.identity_fixtures import Registered, register
from tests.support.mailbox import MailedLinks
from tests.support.passwords import FAST_HASHING
from tests.support.throttling import assert_network_bounded


@pytest.fixture
def mailed(engine: Engine, settings: Settings) -> MailedLinks:
    """The verification links mailed, as their recipients get them (tests/support/mailbox.py)."""
    return MailedLinks(engine, settings, "verify_email")


@pytest.fixture
def strict(engine: Engine, org: Organization) -> Registered:
    """A first-party web app registered with --require-verified-email."""
    return register(engine, org, require_verified_email=True)


@pytest.fixture
def other_browser(app: Any) -> Iterator[TestClient]:
    with TestClient(app, follow_redirects=False) as browser:
        yield browser


def paused(browser: TestClient, client: Registered, **changes: str) -> str:
    """Sign in as the (unverified) user: the check-your-email page it pauses on."""
    location = pages.to_page(pages.authorize(browser, client.id, **changes), "sign-in")
    return pages.to_page(pages.sign_in(browser, location), "check-email")


def claims(browser: TestClient, client: Registered, code: str) -> tuple[dict[str, Any], dict[str, Any]]:
    answer = pages.tokens(browser, client, code)
    userinfo = browser.get("/oauth2/userinfo", headers=pages.bearer(answer["access_token"])).json()
    return pages.verified(browser, answer["id_token"], client.id), userinfo


def press(browser: TestClient, fields: dict[str, str], action: str) -> httpx.Response:
    """Post the check-your-email form (``fields``: its hidden fields) with the button ``action``."""
    return pages.post_form(browser, "/check-email", [*fields.items(), ("action", action)])


def test_an_unverified_user_gets_no_code_but_a_pause_and_a_link_that_resumes_it_in_the_same_browser(
    browser: TestClient, user: User, strict: Registered, mailed: MailedLinks
) -> None:
    location = paused(browser, strict)
    page = pages.show(browser, location)
    assert "Check your email" in page.text and user.email in page.text
    [link] = mailed
    assert link.interaction_id == pages.hidden_fields(page.text)["interaction"]
    id_token, userinfo = claims(browser, strict, pages.code_of(browser.get(f"/verify-email?token={link.token}")))
    assert id_token["email_verified"] is True and userinfo["email_verified"] is True
    pages.assert_error_page(browser.get(location))  # the sign-in is over


def test_a_link_opened_in_another_browser_verifies_and_the_first_browser_continues(
    browser: TestClient, other_browser: TestClient, user: User, strict: Registered, mailed: MailedLinks
) -> None:
    form = pages.hidden_fields(pages.show(browser, paused(browser, strict)).text)
    waiting = press(browser, form, "continue")  # not verified yet: the page again, no code
    assert waiting.status_code == 200 and "not verified yet" in waiting.text
    elsewhere = other_browser.get(f"/verify-email?token={mailed[0].token}")
    assert elsewhere.status_code == 200 and "Go back to the browser where you were signing in" in elsewhere.text
    assert "code=" not in elsewhere.text and "location" not in elsewhere.headers
    id_token, _ = claims(browser, strict, pages.code_of(press(browser, form, "continue")))
    assert id_token["email_verified"] is True


def test_the_paused_page_itself_continues_once_the_address_is_verified(
    browser: TestClient, other_browser: TestClient, user: User, strict: Registered, mailed: MailedLinks
) -> None:
    location = paused(browser, strict)
    other_browser.get(f"/verify-email?token={mailed[0].token}")
    pages.code_of(browser.get(location))


def test_a_sign_up_mails_one_link_and_it_resumes_the_paused_sign_up(
    browser: TestClient, org: Organization, strict: Registered, mailed: MailedLinks
) -> None:
    signed_up = pages.submit(
        browser, pages.to_page(pages.authorize(browser, strict.id, prompt="create"), "sign-up"), pages.SIGN_UP
    )
    pages.to_page(signed_up, "check-email")
    [link] = mailed  # the sign-up's own mail, no second one for the pause
    id_token, _ = claims(browser, strict, pages.code_of(browser.get(f"/verify-email?token={link.token}")))
    assert id_token["email"] == pages.SIGN_UP["email"] and id_token["email_verified"] is True


def test_sending_a_new_link_is_bounded_per_account_and_answers_the_same_page(
    browser: TestClient, user: User, strict: Registered, mailed: MailedLinks
) -> None:
    form = pages.hidden_fields(pages.show(browser, paused(browser, strict)).text)
    answers = {press(browser, form, "resend").text for _ in range(ACCOUNT_LIMIT + 2)}
    assert len(answers) == 1 and "a new link is on its way" in answers.pop()
    assert len(mailed) == ACCOUNT_LIMIT  # the pause's own mail, then the resends within the bound
    assert all(link.interaction_id == mailed[0].interaction_id for link in mailed)


def test_resend_requests_are_bounded_per_network(engine: Engine) -> None:
    throttle = SignInThrottle(engine, THROTTLE)
    assert_network_bounded(throttle.requesting_verification, "203.0.113.7")


def test_the_check_email_form_needs_its_csrf_token_and_a_known_action(
    browser: TestClient, user: User, strict: Registered, mailed: MailedLinks
) -> None:
    location = paused(browser, strict)
    fields = pages.hidden_fields(pages.show(browser, location).text)
    forged = {**fields, "csrf_token": "forged", "action": "resend"}
    pages.assert_error_page(pages.post_form(browser, "/check-email", list(forged.items())))
    pages.assert_error_page(pages.post_form(browser, "/check-email", list({**fields, "action": "other"}.items())))
    assert len(mailed) == 1


def test_prompt_none_answers_interaction_required_for_an_unverified_user(
    browser: TestClient, user: User, strict: Registered, mailed: MailedLinks
) -> None:
    paused(browser, strict)
    pages.redirected_error(pages.authorize(browser, strict.id, prompt="none"), "interaction_required")


def test_clients_update_turns_the_requirement_on_and_off(
    browser: TestClient, engine: Engine, database_url: str, user: User, web: Registered, mailed: MailedLinks
) -> None:
    def update(flag: str) -> dict[str, Any]:
        done = CliRunner().invoke(main, ["clients", "update", web.id, flag, "--json", "--database-url", database_url])
        assert done.exit_code == 0, done.output
        return json.loads(done.stdout)  # type: ignore[no-any-return]

    assert update("--require-verified-email")["require_verified_email"] is True
    paused(browser, web)
    assert update("--no-require-verified-email")["require_verified_email"] is False
    pages.code_of(pages.authorize(browser, web.id))  # the same browser's session: straight to a code now


def test_a_verified_user_is_not_paused(browser: TestClient, engine: Engine, user: User, mailed: MailedLinks) -> None:
    UserStore(engine, hashing=FAST_HASHING).mark_email_verified(user.id, user.email)
    client = register(
        engine, UserStore(engine, hashing=FAST_HASHING).get(user.id).memberships[0].org, require_verified_email=True
    )
    location = pages.to_page(pages.authorize(browser, client.id), "sign-in")
    pages.code_of(pages.sign_in(browser, location))
    assert mailed == []


# The requirement set on a client that already holds tokens: refresh and redemption refuse too.


@pytest.fixture
def settings(database_url: str) -> Settings:
    """Client authentication reads the client's row at every request (no second of memory), so that a change made
    by ``clients update`` is seen by the very next token request."""
    return Settings(database_url=database_url, validate_responses=True, clients_max_age=0.0)


@pytest.fixture
def offline(engine: Engine, org: Organization) -> Registered:
    """A first-party web app with refresh tokens, registered without the requirement."""
    return register(engine, org, grants=["authorization_code", "refresh_token"], scopes=["openid", "offline_access"])


UNVERIFIED = "This client requires a verified email address; the user's is not verified."


def test_refresh_is_refused_once_the_client_requires_a_verified_address_the_user_lacks(
    browser: TestClient, engine: Engine, user: User, offline: Registered
) -> None:
    code = pages.signed_in_code(browser, offline.id, scope="openid offline_access")
    issued = pages.tokens(browser, offline, code)
    ClientStore(engine).update(offline.id, require_verified_email=True)
    refused = pages.refresh(browser, offline, issued["refresh_token"])
    pages.assert_oauth_error(refused, 400, "invalid_grant")
    assert refused.json()["error_description"] == UNVERIFIED


def test_a_code_issued_before_the_client_required_a_verified_address_is_refused(
    browser: TestClient, engine: Engine, user: User, offline: Registered
) -> None:
    code = pages.signed_in_code(browser, offline.id, scope="openid offline_access")
    ClientStore(engine).update(offline.id, require_verified_email=True)
    refused = pages.exchange(browser, offline, code)
    pages.assert_oauth_error(refused, 400, "invalid_grant")
    assert refused.json()["error_description"] == UNVERIFIED


def test_refresh_works_again_for_a_verified_user_of_such_a_client(
    browser: TestClient, engine: Engine, user: User, offline: Registered
) -> None:
    UserStore(engine).mark_email_verified(user.id, user.email)
    code = pages.signed_in_code(browser, offline.id, scope="openid offline_access")
    issued = pages.tokens(browser, offline, code)
    ClientStore(engine).update(offline.id, require_verified_email=True)
    assert pages.refresh(browser, offline, issued["refresh_token"]).status_code == 200


def verification_mails(engine: Engine, address: str) -> int:
    """The verification mails written to the outbox for ``address`` (sent or not)."""
    query = sa.select(sa.func.count()).where(mail_outbox.c.kind == "verify_email", mail_outbox.c.recipient == address)
    with engine.connect() as connection:
        return int(connection.scalar(query) or 0)


@pytest.mark.parametrize("database_url", ["sqlite", "postgresql"], indirect=True)  # the counters are in the store
def test_a_sign_ups_own_mail_counts_against_the_accounts_bound_of_verification_mails(
    browser: TestClient, engine: Engine, clock: MovableClock, strict: Registered
) -> None:
    """docs/identity.md: 5 verification mails in 15 minutes, the sign-up's own included (it was sent beside the
    bound, so one address got 6); past the window, the next pause mails again."""
    signed_up = pages.submit(
        browser, pages.to_page(pages.authorize(browser, strict.id, prompt="create"), "sign-up"), pages.SIGN_UP
    )
    form = pages.hidden_fields(pages.show(browser, pages.to_page(signed_up, "check-email")).text)
    for _ in range(ACCOUNT_LIMIT + 2):
        press(browser, form, "resend")
    assert verification_mails(engine, pages.SIGN_UP["email"]) == ACCOUNT_LIMIT

    clock.advance(THROTTLE.window.total_seconds())
    browser.cookies.clear()  # a new sign-in, whose pause mails a link within the new window
    location = pages.to_page(pages.authorize(browser, strict.id), "sign-in")
    email, password = pages.SIGN_UP["email"], pages.SIGN_UP["password"]
    pages.to_page(pages.sign_in(browser, location, email=email, password=password), "check-email")
    assert verification_mails(engine, pages.SIGN_UP["email"]) == ACCOUNT_LIMIT + 1


@pytest.mark.parametrize("database_url", ["sqlite", "postgresql"], indirect=True)  # email_links.return_to
def test_the_verified_page_in_another_browser_links_back_to_the_sign_in_that_mailed_the_link(
    browser: TestClient, other_browser: TestClient, org: Organization, strict: Registered, mailed: MailedLinks
) -> None:
    """No dead end: the page links to the sign-in the mail came from, made again (without prompt=create: the
    account exists), for this browser to sign in there too."""
    signed_up = pages.submit(
        browser, pages.to_page(pages.authorize(browser, strict.id, prompt="create"), "sign-up"), pages.SIGN_UP
    )
    pages.to_page(signed_up, "check-email")
    page = other_browser.get(f"/verify-email?token={mailed[0].token}")
    assert page.status_code == 200 and "Go back to the browser where you were signing in" in page.text
    onward = re.search(r'<a href="([^"]+)">Or sign in to Menus Web here</a>', page.text)
    assert onward, page.text
    again = urlsplit(html.unescape(onward.group(1)))
    assert again.path == "/oauth2/authorize" and "prompt" not in dict(parse_qsl(again.query))
    assert dict(parse_qsl(again.query))["state"] == pages.STATE
    location = pages.to_page(other_browser.get(f"{again.path}?{again.query}"), "sign-in")
    email, password = pages.SIGN_UP["email"], pages.SIGN_UP["password"]
    pages.code_of(pages.sign_in(other_browser, location, email=email, password=password))


def test_a_link_sent_from_the_consoles_account_page_links_back_to_it(app: Any, mailed: MailedLinks) -> None:
    with ConsoleBrowser(app) as console:
        console.complete(console.sign_up("lee@example.com", organization="Lee's"))
        sent = console.post("/console/account/verification", {"csrf_token": console.csrf()})
        assert sent.status_code == 200 and "a new link is on its way" in sent.text
    with TestClient(app) as browser:
        page = browser.get(f"/verify-email?token={mailed[-1].token}")  # the console's link, the sign-up's before it
    assert page.status_code == 200 and "Email address verified" in page.text
    assert '<a href="http://127.0.0.1:8000/console/account">Continue where you started</a>' in page.text
