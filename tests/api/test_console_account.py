"""The console's account page (identity/accounts/own_account.py): a password change checks the current password under
the sign-in throttle, then ends every session and revokes every token of the user (RFC 9700 §4.14), audited; a new
verification link is bounded per account with one answer."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from identity.accounts.organizations import Organization
from identity.accounts.users import User, UserStore
from service.settings import Settings
from tests.support.console_client import ConsoleBrowser
from tests.support.defaults import ACCOUNT_LIMIT
from tests.support.identity_fixtures import EMAIL, PASSWORD, Registered
from tests.support.identity_pages import authorize, code_of, sign_in, to_page, tokens
from tests.support.mailbox import MailedLinks
from tests.support.passwords import FAST_HASHING
from tests.support.token_flows import userinfo_status

NEW_PASSWORD = "a brand new kitchen password"


@pytest.fixture
def console(app: Any, user: User) -> Iterator[ConsoleBrowser]:
    """The user, signed in to the console."""
    with ConsoleBrowser(app) as browser:
        browser.complete(browser.sign_in(EMAIL))
        yield browser


@pytest.fixture
def mailed(engine: Engine, settings: Settings) -> MailedLinks:
    """The verification links mailed, as their recipients get them (tests/support/mailbox.py)."""
    return MailedLinks(engine, settings, "verify_email")


def change(console: ConsoleBrowser, current: str, new: str) -> Any:
    fields = {"csrf_token": console.csrf(), "current_password": current, "new_password": new}
    return console.post("/console/account/password", fields)


def test_a_password_change_ends_every_session_and_token_and_is_audited(
    app: Any, console: ConsoleBrowser, browser: Any, engine: Engine, user: User, web: Registered,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    elsewhere = tokens(browser, web, code_of(sign_in(browser, to_page(authorize(browser, web.id), "sign-in"))))
    assert "Your account" in console.get("/console/account").text
    caplog.set_level(logging.INFO, logger="regional_menus.audit")
    caplog.clear()
    done = change(console, PASSWORD, NEW_PASSWORD)
    assert done.status_code == 200 and "Password changed" in done.text
    assert 'console_session=""' in done.headers["set-cookie"] or "console_session=;" in done.headers["set-cookie"]
    assert console.get("/console/account").status_code == 303  # this console session has ended too
    assert userinfo_status(browser, elsewhere["access_token"]) == 401
    assert UserStore(engine, hashing=FAST_HASHING).authenticate(EMAIL, NEW_PASSWORD) is not None
    audited = [r.__dict__["fields"] for r in caplog.records if r.name == "regional_menus.audit"]
    assert {"event": "password_reset", "outcome": "success", "user_id": user.id, "reason": "changed"} in audited


def test_a_wrong_current_password_or_a_weak_new_one_changes_nothing(console: ConsoleBrowser, engine: Engine) -> None:
    wrong = change(console, "not my password at all", NEW_PASSWORD)
    assert wrong.status_code == 400 and "The current password is wrong." in wrong.text
    weak = change(console, PASSWORD, "short")
    assert weak.status_code == 400 and "The new password is refused" in weak.text
    assert UserStore(engine, hashing=FAST_HASHING).authenticate(EMAIL, PASSWORD) is not None
    assert console.get("/console/account").status_code == 200  # still signed in


def test_guessing_the_current_password_is_throttled(console: ConsoleBrowser) -> None:
    answers = [change(console, f"guess number {n}", NEW_PASSWORD).status_code for n in range(ACCOUNT_LIMIT + 1)]
    assert answers[:ACCOUNT_LIMIT] == [400] * ACCOUNT_LIMIT
    throttled = change(console, PASSWORD, NEW_PASSWORD)
    assert throttled.status_code == 429 and int(throttled.headers["retry-after"]) > 0


def test_the_password_form_needs_the_csrf_token(console: ConsoleBrowser, engine: Engine) -> None:
    fields = {"csrf_token": "forged", "current_password": PASSWORD, "new_password": NEW_PASSWORD}
    assert console.post("/console/account/password", fields).status_code == 403
    assert UserStore(engine, hashing=FAST_HASHING).authenticate(EMAIL, PASSWORD) is not None


def test_a_new_verification_link_is_bounded_per_account_with_one_answer(
    console: ConsoleBrowser, user: User, mailed: MailedLinks
) -> None:
    assert "not verified yet" in console.get("/console/account").text
    answers = {
        console.post("/console/account/verification", {"csrf_token": console.csrf()}).text
        for _ in range(ACCOUNT_LIMIT + 2)
    }
    assert len(answers) == 1 and "a new link is on its way" in answers.pop()
    assert [link.user_id for link in mailed] == [user.id] * ACCOUNT_LIMIT


def test_a_verified_address_shows_as_verified_and_gets_no_link(
    console: ConsoleBrowser, engine: Engine, user: User, org: Organization, mailed: MailedLinks
) -> None:
    UserStore(engine, hashing=FAST_HASHING).mark_email_verified(user.id, user.email)
    page = console.get("/console/account").text
    assert "verified." in page and "Send a new verification link" not in page
    console.post("/console/account/verification", {"csrf_token": console.csrf()})
    assert mailed == []
