"""Consent: third-party clients ask for it, first-party clients only with prompt=consent."""

from __future__ import annotations

from starlette.testclient import TestClient

from identity.accounts.users import User
from tests.support import identity_pages as pages
from tests.support.identity_fixtures import EMAIL, Registered

# Consent.


def test_third_party_client_shows_the_consent_page_listing_permissions(
    browser: TestClient, partner: Registered, user: User
) -> None:
    location = pages.to_page(pages.authorize(browser, partner.id), "sign-in")
    consent = pages.to_page(pages.sign_in(browser, location), "consent")
    html = pages.show(browser, consent).text
    assert "Partner Planner" in html and EMAIL in html and "Acme Foods" in html
    for permission in ("Know who you are", "See your name", "See your email address"):
        assert f"<li>{permission}</li>" in html
    assert "Stay connected" not in html
    assert 'name="decision" value="allow"' in html and 'name="decision" value="deny"' in html
    assert "<script" not in html.lower()


def test_denied_consent_redirects_with_access_denied_and_state(
    browser: TestClient, partner: Registered, user: User
) -> None:
    location = pages.to_page(pages.authorize(browser, partner.id), "sign-in")
    consent = pages.to_page(pages.sign_in(browser, location), "consent")
    pages.redirected_error(pages.submit(browser, consent, {"decision": "deny"}), "access_denied")
    pages.assert_error_page(browser.get(consent))  # the interaction ended


def test_allowed_consent_gives_a_code_and_the_same_scopes_are_then_silent(
    browser: TestClient, partner: Registered, user: User
) -> None:
    location = pages.to_page(pages.authorize(browser, partner.id), "sign-in")
    consent = pages.to_page(pages.sign_in(browser, location), "consent")
    code = pages.code_of(pages.submit(browser, consent, {"decision": "allow"}))
    assert pages.tokens(browser, partner, code)["scope"] == pages.SCOPE
    pages.code_of(pages.authorize(browser, partner.id))
    pages.code_of(pages.authorize(browser, partner.id, scope="openid email"))  # fewer scopes are covered too
    pages.to_page(pages.authorize(browser, partner.id, scope="openid offline_access"), "consent")  # more are not


def test_prompt_consent_shows_the_consent_page_again(browser: TestClient, partner: Registered, user: User) -> None:
    location = pages.to_page(pages.authorize(browser, partner.id), "sign-in")
    pages.code_of(
        pages.submit(browser, pages.to_page(pages.sign_in(browser, location), "consent"), {"decision": "allow"})
    )
    pages.to_page(pages.authorize(browser, partner.id, prompt="consent"), "consent")


def test_first_party_client_shows_consent_only_for_prompt_consent(
    browser: TestClient, web: Registered, user: User
) -> None:
    pages.signed_in_code(browser, web.id)
    consent = pages.to_page(pages.authorize(browser, web.id, prompt="consent"), "consent")
    pages.code_of(pages.submit(browser, consent, {"decision": "allow"}))


def test_consent_post_with_an_unknown_decision_shows_an_error_page(
    browser: TestClient, partner: Registered, user: User
) -> None:
    location = pages.to_page(pages.authorize(browser, partner.id), "sign-in")
    consent = pages.to_page(pages.sign_in(browser, location), "consent")
    response = pages.submit(browser, consent, {"decision": "maybe"})
    assert response.status_code == 400
    assert "location" not in response.headers
