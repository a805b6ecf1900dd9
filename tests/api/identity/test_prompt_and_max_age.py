"""What the authorization request asks of a browser already signed in or not (OpenID Connect Core §3.1.2.1):
prompt=none never shows a page, prompt=login and max_age ask for credentials again, login_hint fills the form."""

from __future__ import annotations

import re

from starlette.testclient import TestClient

from identity.accounts.organizations import Organization
from identity.accounts.users import User
from tests.support import identity_pages as pages
from tests.support.clocks import MovableClock
from tests.support.identity_fixtures import Registered, Shared

# prompt=none never shows a page.


def test_prompt_none_when_signed_out_redirects_with_login_required(visitor: TestClient, shared: Shared) -> None:
    pages.redirected_error(pages.authorize(visitor, shared.web.id, prompt="none"), "login_required")


def test_prompt_none_for_third_party_client_without_consent_redirects_with_consent_required(
    browser: TestClient, web: Registered, partner: Registered, user: User
) -> None:
    pages.signed_in_code(browser, web.id)
    pages.redirected_error(pages.authorize(browser, partner.id, prompt="none"), "consent_required")


def test_consent_for_one_organization_leaves_prompt_none_for_another_with_consent_required(
    browser: TestClient, web: Registered, partner: Registered, two_org_user: User, org: Organization
) -> None:
    """Consent is given per (user, client, organization): the tokens speak for the organization chosen."""
    picker = pages.to_page(
        pages.sign_in(browser, pages.to_page(pages.authorize(browser, partner.id), "sign-in"), "bo@example.com"),
        "select-organization",
    )
    pages.code_of(
        pages.submit(
            browser, pages.to_page(pages.submit(browser, picker, {"org_id": org.id}), "consent"), {"decision": "allow"}
        )
    )
    pages.code_of(pages.authorize(browser, partner.id, prompt="none"))  # the organization consented for: silent
    other = next(m.org.id for m in two_org_user.memberships if m.org.id != org.id)
    switch = pages.to_page(pages.authorize(browser, web.id, prompt="select_account"), "select-organization")
    pages.code_of(pages.submit(browser, switch, {"org_id": other}))  # switched in another (first-party) application
    pages.redirected_error(pages.authorize(browser, partner.id, prompt="none"), "consent_required")


def test_prompt_none_when_organization_is_not_chosen_redirects_with_account_selection_required(
    browser: TestClient, web: Registered, two_org_user: User
) -> None:
    location = pages.to_page(pages.authorize(browser, web.id), "sign-in")
    pages.to_page(pages.sign_in(browser, location, two_org_user.email), "select-organization")
    # Signed in, but the picker was left without a choice: the session has no organization.
    pages.redirected_error(pages.authorize(browser, web.id, prompt="none"), "account_selection_required")


def test_prompt_none_with_a_sign_in_older_than_max_age_redirects_with_login_required(
    browser: TestClient, web: Registered, user: User
) -> None:
    pages.signed_in_code(browser, web.id)
    pages.redirected_error(pages.authorize(browser, web.id, prompt="none", max_age="0"), "login_required")


def test_prompt_none_when_signed_in_and_nothing_to_ask_gives_a_code(
    browser: TestClient, web: Registered, user: User
) -> None:
    pages.signed_in_code(browser, web.id)
    pages.code_of(pages.authorize(browser, web.id, prompt="none"))


# A signed-in browser.


def test_signed_in_browser_gets_a_code_silently_from_a_first_party_client(
    browser: TestClient, web: Registered, user: User
) -> None:
    first = pages.signed_in_code(browser, web.id)
    signed_in = pages.verified(browser, pages.tokens(browser, web, first)["id_token"], web.id)
    second = pages.code_of(pages.authorize(browser, web.id))
    assert second != first
    silent = pages.verified(browser, pages.tokens(browser, web, second)["id_token"], web.id)
    assert silent["sub"] == user.id
    assert (silent["sid"], silent["auth_time"]) == (signed_in["sid"], signed_in["auth_time"])


def test_prompt_login_shows_the_sign_in_page_although_signed_in(
    browser: TestClient, web: Registered, user: User
) -> None:
    pages.signed_in_code(browser, web.id)
    location = pages.to_page(pages.authorize(browser, web.id, prompt="login"), "sign-in")
    pages.code_of(pages.sign_in(browser, location))


def test_max_age_shorter_than_the_sign_in_asks_for_credentials_again_and_renews_auth_time(
    browser: TestClient, web: Registered, user: User, clock: MovableClock
) -> None:
    first = pages.verified(
        browser, pages.tokens(browser, web, pages.signed_in_code(browser, web.id))["id_token"], web.id
    )
    pages.code_of(pages.authorize(browser, web.id, max_age="3600"))  # a fresh sign-in is young enough
    clock.advance(1)  # a second later: auth_time counts whole seconds
    location = pages.to_page(pages.authorize(browser, web.id, max_age="0"), "sign-in")
    second = pages.verified(
        browser,
        pages.tokens(browser, web, pages.code_of(pages.sign_in(browser, location)))["id_token"],
        web.id,
        leeway=1,  # the provider's clock a second ahead of ours
    )
    assert second["auth_time"] > first["auth_time"]
    assert second["sid"] == first["sid"]  # the same session, renewed: its other grants live on


def test_login_hint_prefills_the_email_field(visitor: TestClient, shared: Shared) -> None:
    location = pages.to_page(pages.authorize(visitor, shared.web.id, login_hint="hint@example.com"), "sign-in")
    page = pages.show(visitor, location)
    assert re.search(r'<input id="email" name="email"[^>]* value="hint@example.com"', page.text)


def test_login_hint_is_escaped_in_the_sign_in_page(visitor: TestClient, shared: Shared) -> None:
    hint = '"><script>alert(1)</script>'
    page = pages.show(visitor, pages.to_page(pages.authorize(visitor, shared.web.id, login_hint=hint), "sign-in"))
    assert "<script" not in page.text
    assert 'value="&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"' in page.text
