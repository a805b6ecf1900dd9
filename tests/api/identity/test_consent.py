"""Consent: third-party clients ask for it, first-party clients only with prompt=consent."""

from __future__ import annotations

from starlette.testclient import TestClient

from identity.users import User
from tests.support.identity_fixtures import EMAIL, Registered
from tests.support.identity_pages import (
    SCOPE,
    assert_error_page,
    authorize,
    code_of,
    redirected_error,
    show,
    sign_in,
    signed_in_code,
    submit,
    to_page,
    tokens,
)

# Consent.


def test_third_party_client_shows_the_consent_page_listing_permissions(
    browser: TestClient, partner: Registered, user: User
) -> None:
    location = to_page(authorize(browser, partner.id), "sign-in")
    consent = to_page(sign_in(browser, location), "consent")
    html = show(browser, consent).text
    assert "Partner Planner" in html and EMAIL in html and "Acme Foods" in html
    for permission in ("Know who you are", "See your name", "See your email address"):
        assert f"<li>{permission}</li>" in html
    assert "Stay connected" not in html
    assert 'name="decision" value="allow"' in html and 'name="decision" value="deny"' in html
    assert "<script" not in html.lower()


def test_denied_consent_redirects_with_access_denied_and_state(
    browser: TestClient, partner: Registered, user: User
) -> None:
    location = to_page(authorize(browser, partner.id), "sign-in")
    consent = to_page(sign_in(browser, location), "consent")
    redirected_error(submit(browser, consent, {"decision": "deny"}), "access_denied")
    assert_error_page(browser.get(consent))  # the interaction ended


def test_allowed_consent_gives_a_code_and_the_same_scopes_are_then_silent(
    browser: TestClient, partner: Registered, user: User
) -> None:
    location = to_page(authorize(browser, partner.id), "sign-in")
    consent = to_page(sign_in(browser, location), "consent")
    code = code_of(submit(browser, consent, {"decision": "allow"}))
    assert tokens(browser, partner, code)["scope"] == SCOPE
    code_of(authorize(browser, partner.id))
    code_of(authorize(browser, partner.id, scope="openid email"))  # fewer scopes are covered too
    to_page(authorize(browser, partner.id, scope="openid offline_access"), "consent")  # more are not


def test_prompt_consent_shows_the_consent_page_again(browser: TestClient, partner: Registered, user: User) -> None:
    location = to_page(authorize(browser, partner.id), "sign-in")
    code_of(submit(browser, to_page(sign_in(browser, location), "consent"), {"decision": "allow"}))
    to_page(authorize(browser, partner.id, prompt="consent"), "consent")


def test_first_party_client_shows_consent_only_for_prompt_consent(
    browser: TestClient, web: Registered, user: User
) -> None:
    signed_in_code(browser, web.id)
    consent = to_page(authorize(browser, web.id, prompt="consent"), "consent")
    code_of(submit(browser, consent, {"decision": "allow"}))


def test_consent_post_with_an_unknown_decision_shows_an_error_page(
    browser: TestClient, partner: Registered, user: User
) -> None:
    location = to_page(authorize(browser, partner.id), "sign-in")
    consent = to_page(sign_in(browser, location), "consent")
    response = submit(browser, consent, {"decision": "maybe"})
    assert response.status_code == 400
    assert "location" not in response.headers
