"""The sign-in page: its form, CSRF token and interaction, its errors, the throttle and the session cookie it sets."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from starlette.testclient import TestClient

from identity.accounts.users import User
from tests.support import identity_pages as pages
from tests.support.identity_fixtures import EMAIL, PASSWORD, Registered, Shared

# The sign-in page.


def test_sign_in_page_has_labelled_inputs_a_csrf_token_and_no_script(visitor: TestClient, shared: Shared) -> None:
    page = pages.show(visitor, pages.to_page(pages.authorize(visitor, shared.web.id), "sign-in"))
    html = page.text
    assert '<label for="email">' in html and '<input id="email" name="email"' in html
    assert '<label for="password">' in html and '<input id="password" name="password"' in html
    fields = pages.hidden_fields(html)
    assert set(fields) == {"interaction", "csrf_token"} and len(fields["csrf_token"]) >= 20
    assert "<script" not in html.lower()
    assert "script-src" not in page.headers["content-security-policy"]
    assert "default-src 'none'" in page.headers["content-security-policy"]


def test_sign_in_post_with_a_wrong_csrf_token_shows_an_error_page(visitor: TestClient, shared: Shared) -> None:
    location = pages.to_page(pages.authorize(visitor, shared.web.id), "sign-in")
    response = pages.submit(visitor, location, {"csrf_token": "forged", "email": EMAIL, "password": PASSWORD})
    pages.assert_error_page(response)
    assert "rm_session" not in response.headers.get("set-cookie", "")


def test_sign_in_post_without_a_csrf_token_is_refused(visitor: TestClient, shared: Shared) -> None:
    location = pages.to_page(pages.authorize(visitor, shared.web.id), "sign-in")
    interaction = location.split("=", 1)[1]
    response = pages.post_form(
        visitor, "/sign-in", [("interaction", interaction), ("email", EMAIL), ("password", PASSWORD)]
    )
    pages.assert_error_page(response)


def test_sign_in_from_another_browser_shows_an_error_page(
    visitor: TestClient, stranger: TestClient, shared: Shared
) -> None:
    location = pages.to_page(pages.authorize(visitor, shared.web.id), "sign-in")
    fields = pages.hidden_fields(pages.show(visitor, location).text)
    pages.assert_error_page(stranger.get(location))
    response = pages.post_form(stranger, "/sign-in", [*fields.items(), ("email", EMAIL), ("password", PASSWORD)])
    pages.assert_error_page(response)
    assert "rm_session" not in response.headers.get("set-cookie", "")


@pytest.mark.parametrize("page", ["sign-in", "sign-up", "select-organization", "consent"])
def test_unknown_interaction_shows_an_error_page(visitor: TestClient, page: str) -> None:
    pages.assert_error_page(visitor.get(f"/{page}", params={"interaction": "int_unknown"}))


@pytest.mark.parametrize("page", ["sign-in", "sign-up", "select-organization", "consent"])
def test_page_without_an_interaction_shows_an_error_page(visitor: TestClient, page: str) -> None:
    pages.assert_error_page(visitor.get(f"/{page}"))


def test_authorization_form_post_of_another_media_type_shows_an_error_page(visitor: TestClient, shared: Shared) -> None:
    response = visitor.post("/oauth2/authorize", json=dict(pages.authorization(shared.web.id)))
    pages.assert_error_page(response, status=415)


def test_expired_interaction_shows_an_error_page(visitor: TestClient, shared: Shared) -> None:
    location = pages.to_page(pages.authorize(visitor, shared.web.id), "sign-in")
    later = timedelta(minutes=16).total_seconds()  # interactions live 15 minutes
    shared.clock.advance(later)
    try:
        pages.assert_error_page(visitor.get(location))
    finally:
        shared.clock.advance(-later)


def test_repeated_form_field_shows_an_error_page(visitor: TestClient, shared: Shared) -> None:
    location = pages.to_page(pages.authorize(visitor, shared.web.id), "sign-in")
    fields = pages.hidden_fields(pages.show(visitor, location).text)
    pairs = [*fields.items(), ("email", EMAIL), ("email", "other@example.com"), ("password", PASSWORD)]
    pages.assert_error_page(pages.post_form(visitor, "/sign-in", pairs))


@pytest.mark.parametrize(
    ("email", "password"),
    [(EMAIL, "wrong password here"), ("nobody@example.com", PASSWORD), (EMAIL, "p" * 1025)],
    ids=["password", "email", "password too long"],
)
def test_wrong_email_or_password_says_invalid_email_or_password(
    browser: TestClient, web: Registered, user: User, email: str, password: str
) -> None:
    location = pages.to_page(pages.authorize(browser, web.id), "sign-in")
    response = pages.sign_in(browser, location, email, password)
    assert response.status_code == 200
    pages.assert_page_headers(response)
    assert "Invalid email or password" in response.text
    assert f'value="{email}"' in response.text  # the email is kept, the password is not
    assert password not in response.text


def test_five_failed_sign_ins_throttle_the_account_even_with_the_right_password(
    browser: TestClient, web: Registered, user: User
) -> None:
    location = pages.to_page(pages.authorize(browser, web.id), "sign-in")
    for _ in range(5):
        assert "Invalid email or password" in pages.sign_in(browser, location, password="wrong password here").text
    response = pages.sign_in(browser, location)
    pages.assert_error_page(response, status=429)
    assert 1 <= int(response.headers["retry-after"]) <= 15 * 60


def test_twenty_failed_sign_ins_from_one_address_throttle_every_account(
    browser: TestClient, web: Registered, user: User
) -> None:
    location = pages.to_page(pages.authorize(browser, web.id), "sign-in")
    for n in range(20):
        assert pages.sign_in(browser, location, f"nobody{n}@example.com").status_code == 200
    response = pages.sign_in(browser, location)
    pages.assert_error_page(response, status=429)
    assert int(response.headers["retry-after"]) >= 1


def test_throttling_is_per_account_without_regard_to_case(browser: TestClient, web: Registered, user: User) -> None:
    location = pages.to_page(pages.authorize(browser, web.id), "sign-in")
    for email in ("ANA@example.com", "ana@EXAMPLE.com", " ana@example.com", "Ana@Example.Com", EMAIL):
        assert pages.sign_in(browser, location, email, "wrong password here").status_code == 200
    assert pages.sign_in(browser, location).status_code == 429


def test_sign_in_sets_a_new_http_only_lax_session_cookie(browser: TestClient, web: Registered, user: User) -> None:
    browser.cookies.set("rm_session", "chosen-by-an-attacker", domain="testserver.local", path="/")
    location = pages.to_page(pages.authorize(browser, web.id), "sign-in")
    response = pages.sign_in(browser, location)
    pages.code_of(response)
    (cookie,) = [c for c in response.headers.get_list("set-cookie") if c.startswith("rm_session=")]
    assert re.match(r"rm_session=[\w-]{43};", cookie), cookie
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Path=/" in cookie
    first = browser.cookies.get("rm_session", domain="testserver.local")
    assert first and first != "chosen-by-an-attacker"

    location = pages.to_page(pages.authorize(browser, web.id, prompt="login"), "sign-in")
    pages.code_of(pages.sign_in(browser, location))
    assert browser.cookies.get("rm_session", domain="testserver.local") not in (None, first)


def test_a_new_sign_in_ends_the_session_of_the_previous_cookie(
    browser: TestClient, other_browser: TestClient, web: Registered, user: User
) -> None:
    pages.signed_in_code(browser, web.id)
    previous = browser.cookies.get("rm_session", domain="testserver.local")
    assert previous
    other_browser.cookies.set("rm_session", previous, domain="testserver.local", path="/")
    pages.code_of(pages.authorize(other_browser, web.id, prompt="none"))  # the cookie is the session

    location = pages.to_page(pages.authorize(browser, web.id, prompt="login"), "sign-in")
    pages.code_of(pages.sign_in(browser, location))
    pages.redirected_error(pages.authorize(other_browser, web.id, prompt="none"), "login_required")


def test_sign_in_compares_the_email_without_regard_to_case(browser: TestClient, web: Registered, user: User) -> None:
    location = pages.to_page(pages.authorize(browser, web.id), "sign-in")
    code = pages.code_of(pages.sign_in(browser, location, "  ANA@Example.COM "))
    assert pages.verified(browser, pages.tokens(browser, web, code)["id_token"], web.id)["sub"] == user.id


def test_a_finished_sign_in_cannot_be_posted_again(browser: TestClient, web: Registered, user: User) -> None:
    location = pages.to_page(pages.authorize(browser, web.id), "sign-in")
    fields = {**pages.hidden_fields(pages.show(browser, location).text), "email": EMAIL, "password": PASSWORD}
    pages.code_of(pages.post_form(browser, "/sign-in", list(fields.items())))
    pages.assert_error_page(pages.post_form(browser, "/sign-in", list(fields.items())))
    pages.assert_error_page(browser.get(location))
