"""The account pages pass axe-core in Chromium: forgot-password, reset-password, verify-email, check-your-email and
the sign-in page of a disabled account, and the console's account page, each in the states a person sees.

The pages are rendered by the app in process (the API tests' TestClient) and shown to one Chromium with
``set_content``: the same HTML, CSS and DOM a served page has, without starting a server for them (what the
browser adds for a served page, its CSP and cookies, is the API tests' concern). One browser for every page.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from playwright.sync_api import Page
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.disabled_users import disable
from identity.accounts.organizations import Organization
from identity.accounts.users import User, UserStore
from identity.mail.email_links import RESET_PASSWORD, VERIFY_EMAIL, EmailLinks
from identity.tokens.revoked_grants import Revoker
from tests.support.chromium import browser, check_page, context, page, playwright
from tests.support.console_client import ConsoleBrowser
from tests.support.identity_fixtures import PASSWORD, register
from tests.support.identity_pages import authorize, hidden_fields, post_form, sign_in, to_page
from tests.support.passwords import FAST_HASHING

__all__ = ["browser", "context", "page", "playwright"]  # the Chromium fixtures of tests/support/chromium.py


@pytest.fixture
def http(app: Any) -> Any:
    with TestClient(app, follow_redirects=False) as client:
        yield client


def link(engine: Engine, purpose: str, user: User, interaction_id: str | None = None) -> str:
    with engine.begin() as connection:
        return EmailLinks(engine).issue(connection, purpose, user.id, user.email, timedelta(hours=1), interaction_id)


def shown(page: Page, name: str, html: str) -> None:
    page.set_content(html, wait_until="load")
    check_page(page, name)


def test_the_account_pages_pass_axe_core_in_chromium(
    page: Page, http: TestClient, engine: Engine, org: Organization, user: User
) -> None:
    strict = register(engine, org, require_verified_email=True)
    sign_in_page = to_page(authorize(http, strict.id), "sign-in")
    forgot = sign_in_page.replace("/sign-in", "/forgot-password")
    seen: dict[str, str] = {"forgot_password": http.get(forgot).text}
    form = hidden_fields(seen["forgot_password"])
    seen["forgot_password_sent"] = post_form(http, "/forgot-password", [*form.items(), ("email", user.email)]).text
    seen["forgot_password_error"] = post_form(http, "/forgot-password", [*form.items(), ("email", "")]).text
    reset = link(engine, RESET_PASSWORD, user)
    seen["reset_password"] = http.get(f"/reset-password?token={reset}").text
    seen["reset_password_weak"] = post_form(http, "/reset-password", [("token", reset), ("password", "short")]).text
    seen["link_expired"] = http.get("/verify-email?token=not-a-link").text

    check_email = to_page(sign_in(http, sign_in_page), "check-email")
    seen["check_email"] = http.get(check_email).text
    fields = hidden_fields(seen["check_email"])
    seen["check_email_resent"] = post_form(http, "/check-email", [*fields.items(), ("action", "resend")]).text
    paused = fields["interaction"]
    with TestClient(http.app, follow_redirects=False) as elsewhere:
        seen["verified_elsewhere"] = elsewhere.get(
            f"/verify-email?token={link(engine, VERIFY_EMAIL, user, paused)}"
        ).text
        seen["verified"] = elsewhere.get(f"/verify-email?token={link(engine, VERIFY_EMAIL, user)}").text

    with ConsoleBrowser(http.app) as console:
        console.complete(console.sign_in(user.email))
        seen["console_account"] = console.get("/console/account").text
        wrong = {"csrf_token": console.csrf(), "current_password": "not it at all", "new_password": "short"}
        seen["console_account_error"] = console.post("/console/account/password", wrong).text

    disable(UserStore(engine, hashing=FAST_HASHING), Revoker(engine), user.id)
    http.cookies.clear()
    seen["sign_in_disabled"] = sign_in(http, to_page(authorize(http, strict.id), "sign-in"), password=PASSWORD).text
    assert "This account is disabled." in seen["sign_in_disabled"]

    for name, html in seen.items():
        shown(page, f"account_{name}", html)
