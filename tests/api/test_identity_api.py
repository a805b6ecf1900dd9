"""The identity API through the ASGI app: authorization, sign-in pages, token endpoint, UserInfo, discovery.

Every test drives the app as a browser or a client would, with a TestClient that
does not follow redirects, so each hop and its headers can be checked.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import re
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import jwt
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.organizations import Organization, OrganizationStore
from identity.users import User, UserStore
from service.app import create_app
from service.console_api.relying_party import SERVICE_ORG_ID
from service.database.db import make_engine
from service.database.schema import upgrade
from service.identity_api import http_errors
from service.settings import Settings
from service.web.contracts import Contract, contract
from tests.support.clocks import MovableClock
from tests.support.defaults import POOL
from tests.support.identity_fixtures import CALLBACK, CALLBACK_WITH_QUERY, EMAIL, PASSWORD, Registered, register
from tests.support.identity_pages import (
    CHALLENGE,
    ISSUER,
    NONCE,
    SCOPE,
    SIGN_UP,
    STATE,
    VERIFIER,
    assert_error_page,
    assert_oauth_error,
    assert_page_headers,
    authorization,
    authorize,
    basic,
    basic_raw,
    bearer,
    code_of,
    exchange,
    hidden_fields,
    post_form,
    redirected_error,
    refresh,
    show,
    sign_in,
    signed_in_code,
    submit,
    to_client,
    to_page,
    token_request,
    tokens,
    verified,
)
from tests.support.postgres import throwaway_database


@pytest.fixture
def database_url(either_database: str) -> str:
    """Every test here runs on SQLite and on PostgreSQL."""
    return either_database


# Fixtures beside the shared ones of tests/support/identity_fixtures.py (org, user, web, browser).


@pytest.fixture
def two_org_user(engine: Engine, org: Organization) -> User:
    other = OrganizationStore(engine).create("Blue Harbor")
    return UserStore(engine).create("bo@example.com", "Bo Berg", PASSWORD, [(org.id, "member"), (other.id, "admin")])


@pytest.fixture
def partner(engine: Engine, org: Organization) -> Registered:
    """A third-party app: the user consents."""
    return register(engine, org, name="Partner Planner", first_party=False)


@pytest.fixture
def other_browser(app) -> Iterator[TestClient]:  # type: ignore[no-untyped-def]
    """A second browser on the same app."""
    with TestClient(app, follow_redirects=False) as browser:
        yield browser


@dataclass(frozen=True)
class Shared:
    """One app for the tests that only send refused or anonymous requests: building an app parses the
    contracts (about half a second), and these tests leave nothing behind that another could see."""

    app: Any
    engine: Engine
    org: Organization
    web: Registered
    clock: MovableClock  # the app's: a test that moves it moves it back


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def shared(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shared]:
    with ExitStack() as stack:
        if request.param == "sqlite":
            url = f"sqlite:///{tmp_path_factory.mktemp('shared') / 'state.sqlite3'}"
        else:
            url = stack.enter_context(throwaway_database())
        settings = Settings(database_url=url, validate_responses=True)
        engine = make_engine(settings.database_url, POOL)
        upgrade(engine)
        org = OrganizationStore(engine).create("Acme Foods")
        clock = MovableClock()
        yield Shared(create_app(settings, clock=clock), engine, org, register(engine, org), clock)
        engine.dispose()


@pytest.fixture
def visitor(shared: Shared) -> Iterator[TestClient]:
    """A new browser, without cookies, on the shared app."""
    with TestClient(shared.app, follow_redirects=False) as browser:
        yield browser


@pytest.fixture
def stranger(shared: Shared) -> Iterator[TestClient]:
    """A second browser on the shared app."""
    with TestClient(shared.app, follow_redirects=False) as browser:
        yield browser


# The authorization request: errors before the redirect URI is trusted are pages.


UNTRUSTED = {
    "unknown client_id": [("client_id", "cl_unknown"), ("redirect_uri", CALLBACK)],
    "missing client_id": [("redirect_uri", CALLBACK)],
    "missing redirect_uri": [("client_id", "{client}")],
    "unregistered redirect_uri": [("client_id", "{client}"), ("redirect_uri", "https://evil.example/callback")],
    "prefix of a registered redirect_uri": [("client_id", "{client}"), ("redirect_uri", "https://app.example/")],
    "registered redirect_uri plus a path": [("client_id", "{client}"), ("redirect_uri", CALLBACK + "/more")],
    "trailing slash": [("client_id", "{client}"), ("redirect_uri", CALLBACK + "/")],
    "other query": [("client_id", "{client}"), ("redirect_uri", CALLBACK + "?tenant=evil")],
    "repeated client_id": [("client_id", "{client}"), ("client_id", "{client}"), ("redirect_uri", CALLBACK)],
    "repeated redirect_uri": [("client_id", "{client}"), ("redirect_uri", CALLBACK), ("redirect_uri", CALLBACK)],
}


@pytest.mark.parametrize("method", ["GET", "POST"])
@pytest.mark.parametrize("case", list(UNTRUSTED), ids=list(UNTRUSTED))
def test_request_without_known_client_and_registered_redirect_uri_shows_error_page_and_never_redirects(
    visitor: TestClient, shared: Shared, case: str, method: str
) -> None:
    pairs = [(name, value.format(client=shared.web.id)) for name, value in UNTRUSTED[case]]
    pairs += [("response_type", "code"), ("scope", "openid"), ("state", STATE)]
    pairs += [("code_challenge", CHALLENGE), ("code_challenge_method", "S256")]
    if method == "POST":
        response = post_form(visitor, "/oauth2/authorize", pairs)
    else:
        response = visitor.get("/oauth2/authorize", params=pairs)
    assert_error_page(response)
    assert "evil.example" not in response.text


# After it, errors go back to the client.


REDIRECTED = {
    "missing response_type": ({"response_type": None}, [], "invalid_request"),
    "response_type token": ({"response_type": "token"}, [], "unsupported_response_type"),
    "response_type code id_token": ({"response_type": "code id_token"}, [], "unsupported_response_type"),
    "scope without openid": ({"scope": "profile email"}, [], "invalid_scope"),
    "missing scope": ({"scope": None}, [], "invalid_scope"),
    "missing PKCE": ({"code_challenge": None, "code_challenge_method": None}, [], "invalid_request"),
    "plain PKCE": ({"code_challenge": "p" * 43, "code_challenge_method": "plain"}, [], "invalid_request"),
    "challenge without method": ({"code_challenge_method": None}, [], "invalid_request"),
    "method without challenge": ({"code_challenge": None}, [], "invalid_request"),
    "malformed challenge": ({"code_challenge": "too-short"}, [], "invalid_request"),
    "challenge with padding": ({"code_challenge": CHALLENGE[:42] + "="}, [], "invalid_request"),
    "repeated scope": ({}, [("scope", "openid")], "invalid_request"),
    "repeated response_type": ({}, [("response_type", "code")], "invalid_request"),
    "prompt none with login": ({"prompt": "none login"}, [], "invalid_request"),
    "unknown prompt": ({"prompt": "sideways"}, [], "invalid_request"),
    "prompt create with login": ({"prompt": "create login"}, [], "invalid_request"),
    "negative max_age": ({"max_age": "-1"}, [], "invalid_request"),
    "non-numeric max_age": ({"max_age": "abc"}, [], "invalid_request"),
    "response_mode fragment": ({"response_mode": "fragment"}, [], "invalid_request"),
    "response_mode form_post": ({"response_mode": "form_post"}, [], "invalid_request"),
    "request object": ({"request": "eyJhbGciOiJub25lIn0.e30."}, [], "request_not_supported"),
    "request_uri": ({"request_uri": "https://app.example/request.jwt"}, [], "request_uri_not_supported"),
}


@pytest.mark.parametrize("method", ["GET", "POST"])
@pytest.mark.parametrize("case", list(REDIRECTED), ids=list(REDIRECTED))
def test_error_after_redirect_uri_is_trusted_redirects_with_error_state_and_iss(
    visitor: TestClient, shared: Shared, case: str, method: str
) -> None:
    changes, extra, error = REDIRECTED[case]
    response = authorize(visitor, shared.web.id, *extra, method=method, **changes)
    redirected_error(response, error)


def test_repeated_state_is_invalid_request_and_no_state_is_echoed(visitor: TestClient, shared: Shared) -> None:
    response = authorize(visitor, shared.web.id, ("state", "second-state"))
    redirected_error(response, "invalid_request", state=None)


def test_client_without_authorization_code_grant_is_unauthorized_client(visitor: TestClient, shared: Shared) -> None:
    service = register(shared.engine, shared.org, name="Batch job", grants=["client_credentials"])
    redirected_error(authorize(visitor, service.id), "unauthorized_client")


def test_client_registered_with_optional_pkce_may_omit_it(visitor: TestClient, shared: Shared) -> None:
    legacy = register(shared.engine, shared.org, name="Legacy server app", pkce_required=False)
    response = authorize(visitor, legacy.id, code_challenge=None, code_challenge_method=None)
    to_page(response, "sign-in")


def test_client_registered_with_optional_pkce_still_refuses_plain(visitor: TestClient, shared: Shared) -> None:
    legacy = register(shared.engine, shared.org, name="Legacy server app", pkce_required=False)
    response = authorize(visitor, legacy.id, code_challenge_method="plain")
    redirected_error(response, "invalid_request")


def test_unknown_parameters_are_ignored(visitor: TestClient, shared: Shared) -> None:
    response = authorize(visitor, shared.web.id, ("display", "popup"), ("x-custom", "1"), ("x-custom", "2"))
    to_page(response, "sign-in")


def test_parameters_sent_empty_are_treated_as_omitted(visitor: TestClient, shared: Shared) -> None:
    response = authorize(visitor, shared.web.id, prompt="", max_age="", login_hint="")
    to_page(response, "sign-in")


def test_error_redirect_keeps_the_redirect_uris_own_query(visitor: TestClient, shared: Shared) -> None:
    response = authorize(visitor, shared.web.id, redirect_uri=CALLBACK_WITH_QUERY, response_type="token")
    params = to_client(response, CALLBACK_WITH_QUERY)
    assert params["tenant"] == "acme"
    assert params["error"] == "unsupported_response_type" and params["state"] == STATE


def test_code_redirect_keeps_the_redirect_uris_own_query(browser: TestClient, web: Registered, user: User) -> None:
    location = to_page(authorize(browser, web.id, redirect_uri=CALLBACK_WITH_QUERY), "sign-in")
    params = to_client(sign_in(browser, location), CALLBACK_WITH_QUERY)
    assert params["tenant"] == "acme" and params["code"] and params["state"] == STATE


def test_each_interaction_is_bound_to_the_browser_by_its_own_cookie(visitor: TestClient, shared: Shared) -> None:
    response = authorize(visitor, shared.web.id)
    interaction = dict(parse_qsl(urlsplit(to_page(response, "sign-in")).query))["interaction"]
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"rm_ia_{interaction}=")
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Path=/" in cookie and "expires=" in cookie.lower()


def test_a_finished_interaction_deletes_its_cookie(browser: TestClient, web: Registered, user: User) -> None:
    location = to_page(authorize(browser, web.id), "sign-in")
    interaction = dict(parse_qsl(urlsplit(location).query))["interaction"]
    response = sign_in(browser, location)
    code_of(response)
    (cookie,) = [c for c in response.headers.get_list("set-cookie") if c.startswith(f"rm_ia_{interaction}=")]
    assert "1970" in cookie
    assert not [name for name in browser.cookies if name.startswith("rm_ia_")]


def test_starting_another_sign_in_leaves_a_pending_one_usable(browser: TestClient, web: Registered, user: User) -> None:
    first = to_page(authorize(browser, web.id), "sign-in")
    to_page(authorize(browser, web.id), "sign-in")  # e.g. a cross-site form post to /oauth2/authorize
    assert browser.get(first).status_code == 200


# prompt=none never shows a page.


def test_prompt_none_when_signed_out_redirects_with_login_required(visitor: TestClient, shared: Shared) -> None:
    redirected_error(authorize(visitor, shared.web.id, prompt="none"), "login_required")


def test_prompt_none_for_third_party_client_without_consent_redirects_with_consent_required(
    browser: TestClient, web: Registered, partner: Registered, user: User
) -> None:
    signed_in_code(browser, web.id)
    redirected_error(authorize(browser, partner.id, prompt="none"), "consent_required")


def test_consent_for_one_organization_leaves_prompt_none_for_another_with_consent_required(
    browser: TestClient, web: Registered, partner: Registered, two_org_user: User, org: Organization
) -> None:
    """Consent is given per (user, client, organization): the tokens speak for the organization chosen."""
    picker = to_page(
        sign_in(browser, to_page(authorize(browser, partner.id), "sign-in"), "bo@example.com"), "select-organization"
    )
    code_of(submit(browser, to_page(submit(browser, picker, {"org_id": org.id}), "consent"), {"decision": "allow"}))
    code_of(authorize(browser, partner.id, prompt="none"))  # the organization consented for: silent
    other = next(m.org.id for m in two_org_user.memberships if m.org.id != org.id)
    switch = to_page(authorize(browser, web.id, prompt="select_account"), "select-organization")
    code_of(submit(browser, switch, {"org_id": other}))  # switched in another (first-party) application
    redirected_error(authorize(browser, partner.id, prompt="none"), "consent_required")


def test_prompt_none_when_organization_is_not_chosen_redirects_with_account_selection_required(
    browser: TestClient, web: Registered, two_org_user: User
) -> None:
    location = to_page(authorize(browser, web.id), "sign-in")
    to_page(sign_in(browser, location, two_org_user.email), "select-organization")
    # Signed in, but the picker was left without a choice: the session has no organization.
    redirected_error(authorize(browser, web.id, prompt="none"), "account_selection_required")


def test_prompt_none_with_a_sign_in_older_than_max_age_redirects_with_login_required(
    browser: TestClient, web: Registered, user: User
) -> None:
    signed_in_code(browser, web.id)
    redirected_error(authorize(browser, web.id, prompt="none", max_age="0"), "login_required")


def test_prompt_none_when_signed_in_and_nothing_to_ask_gives_a_code(
    browser: TestClient, web: Registered, user: User
) -> None:
    signed_in_code(browser, web.id)
    code_of(authorize(browser, web.id, prompt="none"))


# A signed-in browser.


def test_signed_in_browser_gets_a_code_silently_from_a_first_party_client(
    browser: TestClient, web: Registered, user: User
) -> None:
    first = signed_in_code(browser, web.id)
    signed_in = verified(browser, tokens(browser, web, first)["id_token"], web.id)
    second = code_of(authorize(browser, web.id))
    assert second != first
    silent = verified(browser, tokens(browser, web, second)["id_token"], web.id)
    assert silent["sub"] == user.id
    assert (silent["sid"], silent["auth_time"]) == (signed_in["sid"], signed_in["auth_time"])


def test_prompt_login_shows_the_sign_in_page_although_signed_in(
    browser: TestClient, web: Registered, user: User
) -> None:
    signed_in_code(browser, web.id)
    location = to_page(authorize(browser, web.id, prompt="login"), "sign-in")
    code_of(sign_in(browser, location))


def test_max_age_shorter_than_the_sign_in_asks_for_credentials_again_and_renews_auth_time(
    browser: TestClient, web: Registered, user: User
) -> None:
    first = verified(browser, tokens(browser, web, signed_in_code(browser, web.id))["id_token"], web.id)
    code_of(authorize(browser, web.id, max_age="3600"))  # a fresh sign-in is young enough
    time.sleep(1)  # auth_time counts whole seconds
    location = to_page(authorize(browser, web.id, max_age="0"), "sign-in")
    second = verified(browser, tokens(browser, web, code_of(sign_in(browser, location)))["id_token"], web.id)
    assert second["auth_time"] > first["auth_time"]
    assert second["sid"] == first["sid"]  # the same session, renewed: its other grants live on


def test_login_hint_prefills_the_email_field(visitor: TestClient, shared: Shared) -> None:
    location = to_page(authorize(visitor, shared.web.id, login_hint="hint@example.com"), "sign-in")
    page = show(visitor, location)
    assert re.search(r'<input id="email" name="email"[^>]* value="hint@example.com"', page.text)


def test_login_hint_is_escaped_in_the_sign_in_page(visitor: TestClient, shared: Shared) -> None:
    hint = '"><script>alert(1)</script>'
    page = show(visitor, to_page(authorize(visitor, shared.web.id, login_hint=hint), "sign-in"))
    assert "<script" not in page.text
    assert 'value="&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"' in page.text


# The sign-in page.


def test_sign_in_page_has_labelled_inputs_a_csrf_token_and_no_script(visitor: TestClient, shared: Shared) -> None:
    page = show(visitor, to_page(authorize(visitor, shared.web.id), "sign-in"))
    html = page.text
    assert '<label for="email">' in html and '<input id="email" name="email"' in html
    assert '<label for="password">' in html and '<input id="password" name="password"' in html
    fields = hidden_fields(html)
    assert set(fields) == {"interaction", "csrf_token"} and len(fields["csrf_token"]) >= 20
    assert "<script" not in html.lower()
    assert "script-src" not in page.headers["content-security-policy"]
    assert "default-src 'none'" in page.headers["content-security-policy"]


def test_sign_in_post_with_a_wrong_csrf_token_shows_an_error_page(visitor: TestClient, shared: Shared) -> None:
    location = to_page(authorize(visitor, shared.web.id), "sign-in")
    response = submit(visitor, location, {"csrf_token": "forged", "email": EMAIL, "password": PASSWORD})
    assert_error_page(response)
    assert "rm_session" not in response.headers.get("set-cookie", "")


def test_sign_in_post_without_a_csrf_token_is_refused(visitor: TestClient, shared: Shared) -> None:
    location = to_page(authorize(visitor, shared.web.id), "sign-in")
    interaction = location.split("=", 1)[1]
    response = post_form(visitor, "/sign-in", [("interaction", interaction), ("email", EMAIL), ("password", PASSWORD)])
    assert_error_page(response)


def test_sign_in_from_another_browser_shows_an_error_page(
    visitor: TestClient, stranger: TestClient, shared: Shared
) -> None:
    location = to_page(authorize(visitor, shared.web.id), "sign-in")
    fields = hidden_fields(show(visitor, location).text)
    assert_error_page(stranger.get(location))
    response = post_form(stranger, "/sign-in", [*fields.items(), ("email", EMAIL), ("password", PASSWORD)])
    assert_error_page(response)
    assert "rm_session" not in response.headers.get("set-cookie", "")


@pytest.mark.parametrize("page", ["sign-in", "sign-up", "select-organization", "consent"])
def test_unknown_interaction_shows_an_error_page(visitor: TestClient, page: str) -> None:
    assert_error_page(visitor.get(f"/{page}", params={"interaction": "int_unknown"}))


@pytest.mark.parametrize("page", ["sign-in", "sign-up", "select-organization", "consent"])
def test_page_without_an_interaction_shows_an_error_page(visitor: TestClient, page: str) -> None:
    assert_error_page(visitor.get(f"/{page}"))


def test_authorization_form_post_of_another_media_type_shows_an_error_page(visitor: TestClient, shared: Shared) -> None:
    response = visitor.post("/oauth2/authorize", json=dict(authorization(shared.web.id)))
    assert_error_page(response, status=415)


def test_expired_interaction_shows_an_error_page(visitor: TestClient, shared: Shared) -> None:
    location = to_page(authorize(visitor, shared.web.id), "sign-in")
    later = timedelta(minutes=16).total_seconds()  # interactions live 15 minutes
    shared.clock.advance(later)
    try:
        assert_error_page(visitor.get(location))
    finally:
        shared.clock.advance(-later)


def test_repeated_form_field_shows_an_error_page(visitor: TestClient, shared: Shared) -> None:
    location = to_page(authorize(visitor, shared.web.id), "sign-in")
    fields = hidden_fields(show(visitor, location).text)
    pairs = [*fields.items(), ("email", EMAIL), ("email", "other@example.com"), ("password", PASSWORD)]
    assert_error_page(post_form(visitor, "/sign-in", pairs))


@pytest.mark.parametrize(
    ("email", "password"),
    [(EMAIL, "wrong password here"), ("nobody@example.com", PASSWORD), (EMAIL, "p" * 1025)],
    ids=["password", "email", "password too long"],
)
def test_wrong_email_or_password_says_invalid_email_or_password(
    browser: TestClient, web: Registered, user: User, email: str, password: str
) -> None:
    location = to_page(authorize(browser, web.id), "sign-in")
    response = sign_in(browser, location, email, password)
    assert response.status_code == 200
    assert_page_headers(response)
    assert "Invalid email or password" in response.text
    assert f'value="{email}"' in response.text  # the email is kept, the password is not
    assert password not in response.text


def test_five_failed_sign_ins_throttle_the_account_even_with_the_right_password(
    browser: TestClient, web: Registered, user: User
) -> None:
    location = to_page(authorize(browser, web.id), "sign-in")
    for _ in range(5):
        assert "Invalid email or password" in sign_in(browser, location, password="wrong password here").text
    response = sign_in(browser, location)
    assert_error_page(response, status=429)
    assert 1 <= int(response.headers["retry-after"]) <= 15 * 60


def test_twenty_failed_sign_ins_from_one_address_throttle_every_account(
    browser: TestClient, web: Registered, user: User
) -> None:
    location = to_page(authorize(browser, web.id), "sign-in")
    for n in range(20):
        assert sign_in(browser, location, f"nobody{n}@example.com").status_code == 200
    response = sign_in(browser, location)
    assert_error_page(response, status=429)
    assert int(response.headers["retry-after"]) >= 1


def test_throttling_is_per_account_without_regard_to_case(browser: TestClient, web: Registered, user: User) -> None:
    location = to_page(authorize(browser, web.id), "sign-in")
    for email in ("ANA@example.com", "ana@EXAMPLE.com", " ana@example.com", "Ana@Example.Com", EMAIL):
        assert sign_in(browser, location, email, "wrong password here").status_code == 200
    assert sign_in(browser, location).status_code == 429


def test_sign_in_sets_a_new_http_only_lax_session_cookie(browser: TestClient, web: Registered, user: User) -> None:
    browser.cookies.set("rm_session", "chosen-by-an-attacker", domain="testserver.local", path="/")
    location = to_page(authorize(browser, web.id), "sign-in")
    response = sign_in(browser, location)
    code_of(response)
    (cookie,) = [c for c in response.headers.get_list("set-cookie") if c.startswith("rm_session=")]
    assert re.match(r"rm_session=[\w-]{43};", cookie), cookie
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Path=/" in cookie
    first = browser.cookies.get("rm_session", domain="testserver.local")
    assert first and first != "chosen-by-an-attacker"

    location = to_page(authorize(browser, web.id, prompt="login"), "sign-in")
    code_of(sign_in(browser, location))
    assert browser.cookies.get("rm_session", domain="testserver.local") not in (None, first)


def test_a_new_sign_in_ends_the_session_of_the_previous_cookie(
    browser: TestClient, other_browser: TestClient, web: Registered, user: User
) -> None:
    signed_in_code(browser, web.id)
    previous = browser.cookies.get("rm_session", domain="testserver.local")
    assert previous
    other_browser.cookies.set("rm_session", previous, domain="testserver.local", path="/")
    code_of(authorize(other_browser, web.id, prompt="none"))  # the cookie is the session

    location = to_page(authorize(browser, web.id, prompt="login"), "sign-in")
    code_of(sign_in(browser, location))
    redirected_error(authorize(other_browser, web.id, prompt="none"), "login_required")


def test_sign_in_compares_the_email_without_regard_to_case(browser: TestClient, web: Registered, user: User) -> None:
    location = to_page(authorize(browser, web.id), "sign-in")
    code = code_of(sign_in(browser, location, "  ANA@Example.COM "))
    assert verified(browser, tokens(browser, web, code)["id_token"], web.id)["sub"] == user.id


def test_a_finished_sign_in_cannot_be_posted_again(browser: TestClient, web: Registered, user: User) -> None:
    location = to_page(authorize(browser, web.id), "sign-in")
    fields = {**hidden_fields(show(browser, location).text), "email": EMAIL, "password": PASSWORD}
    code_of(post_form(browser, "/sign-in", list(fields.items())))
    assert_error_page(post_form(browser, "/sign-in", list(fields.items())))
    assert_error_page(browser.get(location))


# Sign-up.


def test_prompt_create_redirects_to_the_sign_up_page(visitor: TestClient, shared: Shared) -> None:
    location = to_page(authorize(visitor, shared.web.id, prompt="create", login_hint="new@example.com"), "sign-up")
    html = show(visitor, location).text
    for name in ("name", "email", "password", "organization"):
        assert f'<label for="{name}">' in html and f'<input id="{name}" name="{name}"' in html
    assert set(hidden_fields(html)) == {"interaction", "csrf_token"}
    assert 'value="new@example.com"' in html


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"password": "short"}, "The password must be 8 to 1024 characters."),
        ({"password": "p" * 1025}, "The password must be 8 to 1024 characters."),
        ({"email": "not-an-email"}, "The email address is not valid."),
        ({"email": "ANA@example.com"}, "A user with this email address already exists."),
        ({"name": "  "}, "The name must be 1 to 200 characters."),
        ({"organization": ""}, "The organization&#39;s name must be 1 to 200 characters."),
    ],
    ids=["short password", "long password", "bad email", "duplicate email", "blank name", "missing organization"],
)
def test_sign_up_field_errors_show_the_form_again_with_the_message(
    browser: TestClient, web: Registered, user: User, engine: Engine, changes: dict[str, str], message: str
) -> None:
    location = to_page(authorize(browser, web.id, prompt="create"), "sign-up")
    response = submit(browser, location, {**SIGN_UP, **changes})
    assert response.status_code == 200, response.text
    assert_page_headers(response)
    assert 'aria-invalid="true"' in response.text
    assert message in response.text
    assert f'value="{PASSWORD}"' not in response.text  # a password is never sent back
    assert [u.email for u in UserStore(engine).list()] == [EMAIL]
    organizations = [o.name for o in OrganizationStore(engine).list() if o.id != SERVICE_ORG_ID]  # not the console's
    assert organizations == ["Acme Foods"]


@pytest.mark.parametrize("field", ["name", "organization"])
def test_sign_up_with_a_name_too_long_shows_the_form_again_with_the_message(
    browser: TestClient, web: Registered, field: str
) -> None:
    location = to_page(authorize(browser, web.id, prompt="create"), "sign-up")
    response = submit(browser, location, {**SIGN_UP, field: "N" * 201})
    assert response.status_code == 200, response.text
    assert 'aria-invalid="true"' in response.text and "must be 1 to 200 characters." in response.text


def test_sign_up_creates_user_and_owned_organization_and_tokens_carry_it(
    browser: TestClient, web: Registered, engine: Engine
) -> None:
    location = to_page(authorize(browser, web.id, prompt="create"), "sign-up")
    response = submit(browser, location, SIGN_UP)
    assert "rm_session=" in response.headers["set-cookie"]
    code = code_of(response)
    (created,) = [u for u in UserStore(engine).list() if u.email == "bo@example.com"]
    assert [(m.org.name, m.role) for m in created.memberships] == [("Bo's Bakery", "owner")]
    id_token = verified(browser, tokens(browser, web, code)["id_token"], web.id)
    assert id_token["sub"] == created.id
    assert (id_token["org_id"], id_token["org_name"]) == (created.memberships[0].org.id, "Bo's Bakery")
    assert (id_token["name"], id_token["email"]) == ("Bo Berg", "bo@example.com")


# The organization picker.


def test_user_of_two_organizations_chooses_one_and_tokens_carry_it(
    browser: TestClient, web: Registered, two_org_user: User
) -> None:
    location = to_page(authorize(browser, web.id), "sign-in")
    picker = to_page(sign_in(browser, location, two_org_user.email), "select-organization")
    html = show(browser, picker).text
    for membership in two_org_user.memberships:
        assert f'name="org_id" value="{membership.org.id}"' in html and membership.org.name in html
    chosen = two_org_user.memberships[1].org
    body = tokens(browser, web, code_of(submit(browser, picker, {"org_id": chosen.id})))
    id_token = verified(browser, body["id_token"], web.id)
    access = verified(browser, body["access_token"], ISSUER)
    assert (id_token["org_id"], id_token["org_name"]) == (chosen.id, chosen.name)
    assert (access["org_id"], access["org_name"]) == (chosen.id, chosen.name)
    info = browser.get("/oauth2/userinfo", headers=bearer(body["access_token"])).json()
    assert (info["org_id"], info["org_name"]) == (chosen.id, chosen.name)


@pytest.mark.parametrize("choice", ["stranger", "none"])
def test_choosing_an_organization_the_user_is_not_in_shows_the_picker_again_with_an_error(
    browser: TestClient, web: Registered, two_org_user: User, engine: Engine, choice: str
) -> None:
    stranger = OrganizationStore(engine).create("Corner Deli")
    location = to_page(authorize(browser, web.id), "sign-in")
    picker = to_page(sign_in(browser, location, two_org_user.email), "select-organization")
    response = submit(browser, picker, {"org_id": stranger.id} if choice == "stranger" else {})
    assert response.status_code == 200
    assert_page_headers(response)
    assert "Choose one of your organizations." in response.text
    assert stranger.name not in response.text


def test_session_remembers_the_organization_and_prompt_select_account_asks_again(
    browser: TestClient, web: Registered, two_org_user: User
) -> None:
    first, second = (m.org for m in two_org_user.memberships)
    location = to_page(authorize(browser, web.id), "sign-in")
    picker = to_page(sign_in(browser, location, two_org_user.email), "select-organization")
    code_of(submit(browser, picker, {"org_id": first.id}))

    silent = tokens(browser, web, code_of(authorize(browser, web.id)))
    assert verified(browser, silent["id_token"], web.id)["org_id"] == first.id

    picker = to_page(authorize(browser, web.id, prompt="select_account"), "select-organization")
    again = tokens(browser, web, code_of(submit(browser, picker, {"org_id": second.id})))
    assert verified(browser, again["id_token"], web.id)["org_id"] == second.id


def test_prompt_select_account_shows_the_picker_even_for_a_user_of_one_organization(
    browser: TestClient, web: Registered, user: User, org: Organization
) -> None:
    signed_in_code(browser, web.id)
    picker = to_page(authorize(browser, web.id, prompt="select_account"), "select-organization")
    code_of(submit(browser, picker, {"org_id": org.id}))


def test_user_of_one_organization_never_sees_the_picker(browser: TestClient, web: Registered, user: User) -> None:
    body = tokens(browser, web, signed_in_code(browser, web.id))
    assert verified(browser, body["id_token"], web.id)["org_name"] == "Acme Foods"


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


# The token endpoint: client authentication.


def test_code_exchange_with_client_secret_basic_answers_tokens(
    browser: TestClient, web: Registered, user: User
) -> None:
    body = tokens(browser, web, signed_in_code(browser, web.id))
    assert set(body) == {"access_token", "token_type", "expires_in", "scope", "id_token"}
    assert body["token_type"] == "Bearer" and body["expires_in"] == 600 and body["scope"] == SCOPE


def test_code_exchange_with_client_secret_post_for_a_client_registered_so(
    browser: TestClient, engine: Engine, org: Organization, user: User
) -> None:
    poster = register(engine, org, name="Poster", auth_method="client_secret_post")
    code = signed_in_code(browser, poster.id)
    pairs = [
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", CALLBACK),
        ("code_verifier", VERIFIER),
        ("client_id", poster.id),
        ("client_secret", poster.secret),
    ]
    response = token_request(browser, pairs)
    assert response.status_code == 200, response.text
    assert verified(browser, response.json()["id_token"], poster.id)["azp"] == poster.id


def test_client_secret_post_client_using_basic_is_invalid_client(visitor: TestClient, shared: Shared) -> None:
    poster = register(shared.engine, shared.org, name="Poster", auth_method="client_secret_post")
    response = token_request(visitor, [("grant_type", "authorization_code"), ("code", "x")], basic(poster))
    assert_oauth_error(response, 401, "invalid_client")
    assert response.headers["www-authenticate"].startswith("Basic ")


def test_basic_credentials_are_form_decoded(browser: TestClient, web: Registered, user: User) -> None:
    code = signed_in_code(browser, web.id)

    def encoded(value: str) -> str:
        return "".join(f"%{byte:02X}" for byte in value.encode())

    pairs = [("grant_type", "authorization_code"), ("code", code), ("redirect_uri", CALLBACK)]
    pairs.append(("code_verifier", VERIFIER))
    response = token_request(browser, pairs, basic_raw(encoded(web.id), encoded(web.secret)))
    assert response.status_code == 200, response.text


def test_wrong_client_secret_is_invalid_client_with_a_basic_challenge(visitor: TestClient, shared: Shared) -> None:
    wrong = Registered(shared.web.id, shared.web.secret + "x")
    response = token_request(visitor, [("grant_type", "authorization_code"), ("code", "x")], basic(wrong))
    assert_oauth_error(response, 401, "invalid_client")
    assert response.headers["www-authenticate"].startswith("Basic ")


def test_why_client_authentication_failed_is_logged_never_answered(
    visitor: TestClient, shared: Shared, caplog: pytest.LogCaptureFixture
) -> None:
    wrong = Registered(shared.web.id, shared.web.secret + "x")
    with caplog.at_level(logging.INFO, logger="service.identity"):
        response = token_request(visitor, [("grant_type", "authorization_code"), ("code", "x")], basic(wrong))
    assert response.json()["error_description"] == "Client authentication failed."
    assert f"invalid_client: The secret of client {shared.web.id} is wrong." in caplog.messages
    assert "secret of client" not in response.text


def test_every_path_answers_errors_in_the_form_its_operations_declare() -> None:
    forms = http_errors.ErrorForms(contract("identity.yaml"), "/tenant-a")
    assert forms.of("/tenant-a/sign-in") == "page"
    assert forms.of("/tenant-a/oauth2/token") == "oauth"
    assert forms.of("/tenant-a/oauth2/userinfo") == "resource"
    assert forms.of("/tenant-a/nothing-here") == "resource"


@pytest.mark.parametrize(
    "operations",
    [{"post": {"operationId": "token.exchange"}}, {"get": {"x-error-form": "page"}, "post": {"x-error-form": "oauth"}}],
    ids=["missing", "disagreeing"],
)
def test_an_operation_without_its_one_error_form_stops_the_app_from_starting(operations: dict[str, Any]) -> None:
    identity = Contract("identity.yaml", {"paths": {"/oauth2/token": operations}})
    with pytest.raises(ValueError, match="x-error-form"):
        http_errors.ErrorForms(identity, "")


@pytest.mark.parametrize(
    "authorization", ["Basic", "Basic !!!", "Basic " + base64.b64encode(b"no-colon").decode()], ids=str
)
def test_malformed_basic_header_is_invalid_client(visitor: TestClient, shared: Shared, authorization: str) -> None:
    response = token_request(visitor, [("grant_type", "client_credentials")], {"Authorization": authorization})
    assert_oauth_error(response, 401, "invalid_client")


def test_unknown_client_is_invalid_client(visitor: TestClient, shared: Shared) -> None:
    unknown = Registered("cl_unknown", shared.web.secret)
    response = token_request(visitor, [("grant_type", "authorization_code"), ("code", "x")], basic(unknown))
    assert_oauth_error(response, 401, "invalid_client")
    assert response.headers["www-authenticate"].startswith("Basic ")


def test_client_secret_basic_client_using_client_secret_post_is_invalid_client(
    visitor: TestClient, shared: Shared
) -> None:
    pairs = [
        ("grant_type", "authorization_code"),
        ("code", "x"),
        ("client_id", shared.web.id),
        ("client_secret", shared.web.secret),
    ]
    response = token_request(visitor, pairs)
    assert_oauth_error(response, 401, "invalid_client")
    assert response.headers["www-authenticate"] == f'Basic realm="{ISSUER}", charset="UTF-8"'


def test_basic_and_client_secret_together_is_invalid_request(visitor: TestClient, shared: Shared) -> None:
    pairs = [("grant_type", "authorization_code"), ("code", "x"), ("redirect_uri", CALLBACK)]
    pairs.append(("client_secret", shared.web.secret))  # both valid: the request still uses two methods
    assert_oauth_error(token_request(visitor, pairs, basic(shared.web)), 400, "invalid_request")


def test_error_description_quoting_the_request_keeps_to_printable_ascii(visitor: TestClient, shared: Shared) -> None:
    """RFC 6749 §5.2: error_description is %x20-21 / %x23-5B / %x5D-7E, whatever the client sent."""
    name = 'gr\u00e4nt"\\\u2028'  # no control character: one is refused before any quoting (test_control_characters)
    response = token_request(
        visitor, [(name, "a"), (name, "b"), ("grant_type", "client_credentials")], basic(shared.web)
    )
    assert_oauth_error(response, 400, "invalid_request")
    description = response.json()["error_description"]
    assert all(0x20 <= ord(ch) <= 0x7E and ch not in '"\\' for ch in description), description
    assert "gr?nt'??" in description


def test_token_request_without_client_authentication_is_invalid_client(visitor: TestClient, shared: Shared) -> None:
    """RFC 9110 §15.5.2: a 401 carries a challenge, even when the client tried no HTTP authentication scheme."""
    pairs = [("grant_type", "authorization_code"), ("code", "x"), ("client_id", shared.web.id)]
    response = token_request(visitor, pairs)
    assert_oauth_error(response, 401, "invalid_client")
    assert response.headers["www-authenticate"] == f'Basic realm="{ISSUER}", charset="UTF-8"'


@pytest.mark.parametrize(
    ("pairs", "status", "error"),
    [
        ([("code", "x")], 400, "invalid_request"),
        ([("grant_type", "")], 400, "invalid_request"),
        ([("grant_type", "password"), ("username", EMAIL), ("password", PASSWORD)], 400, "unsupported_grant_type"),
        ([("grant_type", "implicit")], 400, "unsupported_grant_type"),
        ([("grant_type", "authorization_code"), ("code", "x"), ("code", "y")], 400, "invalid_request"),
        ([("grant_type", "authorization_code"), ("grant_type", "authorization_code")], 400, "invalid_request"),
        ([("grant_type", "authorization_code"), ("redirect_uri", CALLBACK)], 400, "invalid_request"),
        ([("grant_type", "client_credentials")], 400, "unauthorized_client"),
    ],
    ids=[
        "missing grant_type",
        "empty grant_type",
        "password grant",
        "implicit grant",
        "repeated code",
        "repeated grant_type",
        "missing code",
        "grant not registered",
    ],
)
def test_malformed_token_request_is_refused_with_its_error_code(
    visitor: TestClient, shared: Shared, pairs: list[tuple[str, str]], status: int, error: str
) -> None:
    assert_oauth_error(token_request(visitor, pairs, basic(shared.web)), status, error)


def test_every_token_response_forbids_caching(visitor: TestClient, shared: Shared) -> None:
    service = register(shared.engine, shared.org, name="Cron", grants=["client_credentials"], scopes=["members:read"])
    answers = [
        token_request(visitor, [("grant_type", "client_credentials")], basic(service)),
        token_request(visitor, [("grant_type", "password")], basic(service)),
        token_request(visitor, [("grant_type", "client_credentials")], basic(Registered(service.id, "wrong"))),
    ]
    assert [response.status_code for response in answers] == [200, 400, 401]
    for response in answers:
        assert response.headers["cache-control"] == "no-store" and response.headers["pragma"] == "no-cache"


def test_client_id_in_the_body_must_name_the_basic_client(visitor: TestClient, shared: Shared) -> None:
    pairs = [("grant_type", "authorization_code"), ("code", "x"), ("client_id", "cl_someone_else")]
    response = token_request(visitor, pairs, basic(shared.web))
    assert_oauth_error(response, 401, "invalid_client")
    assert response.headers["www-authenticate"].startswith("Basic ")


def test_token_request_with_a_wrong_media_type_is_refused_without_caching(visitor: TestClient, shared: Shared) -> None:
    response = visitor.post("/oauth2/token", json={"grant_type": "authorization_code"}, headers=basic(shared.web))
    assert response.status_code in (400, 415)
    assert response.json()["error"] == "invalid_request"
    assert response.headers["cache-control"] == "no-store" and response.headers["pragma"] == "no-cache"


# The token endpoint: the authorization code.


def test_code_with_a_different_redirect_uri_is_invalid_grant(browser: TestClient, web: Registered, user: User) -> None:
    code = signed_in_code(browser, web.id)
    assert_oauth_error(exchange(browser, web, code, redirect_uri=CALLBACK_WITH_QUERY), 400, "invalid_grant")


@pytest.mark.parametrize(
    "verifier", [None, "w" * 43, VERIFIER + "x", VERIFIER.upper()], ids=["missing", "other", "longer", "case"]
)
def test_code_without_its_pkce_verifier_is_invalid_grant(
    browser: TestClient, web: Registered, user: User, verifier: str | None
) -> None:
    code = signed_in_code(browser, web.id)
    assert_oauth_error(exchange(browser, web, code, verifier=verifier), 400, "invalid_grant")


def test_verifier_sent_for_a_code_without_challenge_is_invalid_grant(
    browser: TestClient, engine: Engine, org: Organization, user: User
) -> None:
    legacy = register(engine, org, name="Legacy server app", pkce_required=False)
    code = signed_in_code(browser, legacy.id, code_challenge=None, code_challenge_method=None)
    assert_oauth_error(exchange(browser, legacy, code), 400, "invalid_grant")


def test_code_without_challenge_exchanges_without_verifier(
    browser: TestClient, engine: Engine, org: Organization, user: User
) -> None:
    legacy = register(engine, org, name="Legacy server app", pkce_required=False)
    code = signed_in_code(browser, legacy.id, code_challenge=None, code_challenge_method=None)
    assert verified(browser, tokens(browser, legacy, code, verifier=None)["id_token"], legacy.id)["sub"] == user.id


def test_code_of_another_client_is_invalid_grant(
    browser: TestClient, web: Registered, engine: Engine, org: Organization, user: User
) -> None:
    other = register(engine, org, name="Other app")
    code = signed_in_code(browser, web.id)
    assert_oauth_error(exchange(browser, other, code), 400, "invalid_grant")
    # Another client's attempt neither uses the code up nor passes for a replay: its own client still redeems it.
    assert exchange(browser, web, code).status_code == 200


def test_unknown_code_is_invalid_grant(visitor: TestClient, shared: Shared) -> None:
    assert_oauth_error(exchange(visitor, shared.web, "not-a-code-we-issued"), 400, "invalid_grant")


def test_code_older_than_sixty_seconds_is_invalid_grant(
    browser: TestClient, web: Registered, user: User, clock: MovableClock
) -> None:
    code = signed_in_code(browser, web.id)
    clock.advance(61)
    assert_oauth_error(exchange(browser, web, code), 400, "invalid_grant")


def test_replayed_code_is_invalid_grant_and_revokes_the_tokens_issued_from_it(
    browser: TestClient, web: Registered, user: User
) -> None:
    code = signed_in_code(browser, web.id, scope="openid offline_access")
    first = tokens(browser, web, code)
    assert browser.get("/oauth2/userinfo", headers=bearer(first["access_token"])).status_code == 200

    assert_oauth_error(exchange(browser, web, code), 400, "invalid_grant")

    response = browser.get("/oauth2/userinfo", headers=bearer(first["access_token"]))
    assert response.status_code == 401 and response.json()["error"] == "invalid_token"
    assert_oauth_error(refresh(browser, web, first["refresh_token"]), 400, "invalid_grant")


def test_replayed_code_also_revokes_the_tokens_refreshed_from_it(
    browser: TestClient, web: Registered, user: User
) -> None:
    code = signed_in_code(browser, web.id, scope="openid offline_access")
    refreshed = refresh(browser, web, tokens(browser, web, code)["refresh_token"])
    assert refreshed.status_code == 200, refreshed.text
    later = refreshed.json()

    assert_oauth_error(exchange(browser, web, code), 400, "invalid_grant")

    assert browser.get("/oauth2/userinfo", headers=bearer(later["access_token"])).status_code == 401
    assert_oauth_error(refresh(browser, web, later["refresh_token"]), 400, "invalid_grant")


# Token contents.


def test_id_token_verifies_with_the_jwks_and_carries_the_sign_in(
    browser: TestClient, web: Registered, user: User, org: Organization
) -> None:
    body = tokens(browser, web, signed_in_code(browser, web.id))
    claims = verified(browser, body["id_token"], web.id)
    digest = hashlib.sha256(body["access_token"].encode()).digest()
    at_hash = base64.urlsafe_b64encode(digest[:16]).rstrip(b"=").decode()
    assert claims["iss"] == ISSUER and claims["aud"] == web.id and claims["azp"] == web.id
    assert claims["sub"] == user.id and claims["nonce"] == NONCE and claims["at_hash"] == at_hash
    assert (claims["org_id"], claims["org_name"]) == (org.id, "Acme Foods")
    assert claims["sid"].startswith("ses_")
    assert claims["iat"] - 5 <= claims["auth_time"] <= claims["iat"] < claims["exp"]
    assert (claims["name"], claims["email"], claims["email_verified"]) == ("Ana Lima", EMAIL, False)
    assert jwt.get_unverified_header(body["id_token"])["typ"] == "JWT"


@pytest.mark.parametrize(
    ("scope", "present"),
    [
        ("openid", set()),
        ("openid profile", {"name"}),
        ("openid email", {"email", "email_verified"}),
        ("openid profile email", {"name", "email", "email_verified"}),
    ],
)
def test_id_token_and_userinfo_carry_name_and_email_only_with_their_scopes(
    browser: TestClient, web: Registered, user: User, scope: str, present: set[str]
) -> None:
    body = tokens(browser, web, signed_in_code(browser, web.id, scope=scope))
    assert body["scope"] == scope
    claims = verified(browser, body["id_token"], web.id)
    assert {"name", "email", "email_verified"} & set(claims) == present
    info = browser.get("/oauth2/userinfo", headers=bearer(body["access_token"])).json()
    assert set(info) == {"sub", "org_id", "org_name"} | present


def test_id_token_has_no_nonce_when_none_was_sent(browser: TestClient, web: Registered, user: User) -> None:
    body = tokens(browser, web, signed_in_code(browser, web.id, nonce=None))
    assert "nonce" not in verified(browser, body["id_token"], web.id)


def test_unknown_and_unallowed_scopes_are_dropped(
    browser: TestClient, engine: Engine, org: Organization, user: User
) -> None:
    narrow = register(engine, org, name="Narrow", scopes=["openid", "email"])
    body = tokens(browser, narrow, signed_in_code(browser, narrow.id, scope="openid profile email members:read foo"))
    assert body["scope"] == "openid email"


def test_access_token_is_an_at_jwt_for_the_issuer_with_jti_client_scope_and_organization(
    browser: TestClient, web: Registered, user: User, org: Organization
) -> None:
    body = tokens(browser, web, signed_in_code(browser, web.id))
    assert jwt.get_unverified_header(body["access_token"])["typ"] == "at+jwt"
    claims = verified(browser, body["access_token"], ISSUER)
    assert claims["aud"] == ISSUER and claims["sub"] == user.id and claims["client_id"] == web.id
    assert claims["scope"] == SCOPE and claims["jti"]
    assert (claims["org_id"], claims["org_name"]) == (org.id, "Acme Foods")
    assert claims["exp"] - claims["iat"] == 600
    assert claims["sid"] == verified(browser, body["id_token"], web.id)["sid"]


@pytest.mark.parametrize(("scope", "refreshable"), [("openid", False), ("openid offline_access", True)])
def test_refresh_token_only_when_offline_access_is_asked(
    browser: TestClient, web: Registered, user: User, scope: str, refreshable: bool
) -> None:
    body = tokens(browser, web, signed_in_code(browser, web.id, scope=scope))
    assert ("refresh_token" in body) is refreshable
    if refreshable:
        assert refresh(browser, web, body["refresh_token"]).status_code == 200


def test_refresh_token_only_for_a_client_with_the_refresh_token_grant(
    browser: TestClient, engine: Engine, org: Organization, user: User
) -> None:
    plain = register(engine, org, name="No refresh", grants=["authorization_code"], scopes=["openid", "offline_access"])
    body = tokens(browser, plain, signed_in_code(browser, plain.id, scope="openid offline_access"))
    assert "refresh_token" not in body


# UserInfo.


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_userinfo_answers_the_users_claims_by_scope(
    browser: TestClient, web: Registered, user: User, org: Organization, method: str
) -> None:
    body = tokens(browser, web, signed_in_code(browser, web.id))
    response = browser.request(method, "/oauth2/userinfo", headers=bearer(body["access_token"]))
    assert response.status_code == 200, response.text
    assert response.headers["cache-control"] == "no-store"
    assert response.json() == {
        "sub": user.id,
        "name": "Ana Lima",
        "email": EMAIL,
        "email_verified": False,
        "org_id": org.id,
        "org_name": "Acme Foods",
    }


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_userinfo_without_a_token_is_invalid_token_with_a_bare_bearer_challenge(
    visitor: TestClient, method: str
) -> None:
    response = visitor.request(method, "/oauth2/userinfo")
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_token"
    assert response.headers["www-authenticate"] == f'Bearer realm="{ISSUER}"'


@pytest.mark.parametrize("token", ["garbage", "eyJhbGciOiJub25lIn0.e30.", "a.b.c"])
def test_userinfo_with_a_token_not_ours_is_invalid_token(visitor: TestClient, token: str) -> None:
    response = visitor.get("/oauth2/userinfo", headers=bearer(token))
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_token"
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith(f'Bearer realm="{ISSUER}"') and 'error="invalid_token"' in challenge


def test_userinfo_refuses_an_id_token_as_an_access_token(browser: TestClient, web: Registered, user: User) -> None:
    body = tokens(browser, web, signed_in_code(browser, web.id))
    response = browser.get("/oauth2/userinfo", headers=bearer(body["id_token"]))
    assert response.status_code == 401 and response.json()["error"] == "invalid_token"


@pytest.mark.parametrize("authorization", ["Bearer a b", "Bearer a,b", "Bearer "], ids=["space", "comma", "empty"])
def test_userinfo_with_a_malformed_authorization_header_is_invalid_request(
    visitor: TestClient, authorization: str
) -> None:
    response = visitor.get("/oauth2/userinfo", headers={"Authorization": authorization})
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"
    assert response.headers["www-authenticate"].startswith("Bearer ")


def test_userinfo_with_a_user_token_without_openid_is_insufficient_scope(
    browser: TestClient, web: Registered, user: User
) -> None:
    body = tokens(browser, web, signed_in_code(browser, web.id, scope="openid offline_access"))
    narrowed = token_request(
        browser,
        [("grant_type", "refresh_token"), ("refresh_token", body["refresh_token"]), ("scope", "offline_access")],
        basic(web),
    )
    assert narrowed.status_code == 200, narrowed.text
    assert narrowed.json()["scope"] == "offline_access" and "id_token" not in narrowed.json()
    response = browser.get("/oauth2/userinfo", headers=bearer(narrowed.json()["access_token"]))
    assert response.status_code == 403
    assert response.json()["error"] == "insufficient_scope"
    challenge = response.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge and 'scope="openid"' in challenge


def test_userinfo_refuses_an_application_token_as_invalid_token(visitor: TestClient, shared: Shared) -> None:
    service = register(
        shared.engine, shared.org, name="Directory sync", grants=["client_credentials"], scopes=["members:read"]
    )
    response = token_request(visitor, [("grant_type", "client_credentials"), ("scope", "members:read")], basic(service))
    assert response.status_code == 200, response.text
    app_token = response.json()["access_token"]
    assert verified(visitor, app_token, ISSUER)["sub"] == service.id
    response = visitor.get("/oauth2/userinfo", headers=bearer(app_token))
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_token"
    assert 'error="invalid_token"' in response.headers["www-authenticate"]


# Discovery.


def test_discovery_lists_the_supported_values_and_endpoints_under_the_issuer(visitor: TestClient) -> None:
    response = visitor.get("/.well-known/openid-configuration")
    assert response.status_code == 200
    document = response.json()
    assert document["issuer"] == ISSUER
    assert document["response_types_supported"] == ["code"]
    assert sorted(document["grant_types_supported"]) == ["authorization_code", "client_credentials", "refresh_token"]
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert document["id_token_signing_alg_values_supported"] == ["RS256"]
    assert sorted(document["token_endpoint_auth_methods_supported"]) == [
        "client_secret_basic",
        "client_secret_post",
        "private_key_jwt",
    ]
    assert sorted(document["prompt_values_supported"]) == ["consent", "create", "login", "none", "select_account"]
    assert document["response_modes_supported"] == ["query"]
    assert document["subject_types_supported"] == ["public"]
    assert document["authorization_response_iss_parameter_supported"] is True
    assert {"openid", "profile", "email", "offline_access", "members:read"} <= set(document["scopes_supported"])
    assert {"sub", "sid", "auth_time", "nonce", "org_id", "org_name"} <= set(document["claims_supported"])
    assert document["authorization_endpoint"] == f"{ISSUER}/oauth2/authorize"
    assert document["token_endpoint"] == f"{ISSUER}/oauth2/token"
    assert document["userinfo_endpoint"] == f"{ISSUER}/oauth2/userinfo"
    assert document["jwks_uri"] == f"{ISSUER}/jwks"
    assert document["introspection_endpoint"] == f"{ISSUER}/oauth2/introspect"
    assert document["revocation_endpoint"] == f"{ISSUER}/oauth2/revoke"
    assert document["end_session_endpoint"] == f"{ISSUER}/oauth2/end-session"


def test_jwks_serves_public_rsa_keys_only(visitor: TestClient) -> None:
    response = visitor.get("/jwks")
    assert response.status_code == 200
    keys = response.json()["keys"]
    assert keys and all(key["kty"] == "RSA" and key["kid"] for key in keys)
    assert not any(set(key) & {"d", "p", "q", "dp", "dq", "qi"} for key in keys)


def test_issuer_with_a_path_serves_every_endpoint_under_it(
    settings: Settings, engine: Engine, org: Organization
) -> None:
    tenant = f"{ISSUER}/tenant-a"
    web = register(engine, org)
    UserStore(engine).create(EMAIL, "Ana Lima", PASSWORD, [(org.id, "owner")])
    with TestClient(create_app(settings.with_changes(issuer=tenant)), follow_redirects=False) as browser:
        document = browser.get("/tenant-a/.well-known/openid-configuration").json()
        assert document["issuer"] == tenant
        for name in ("authorization", "token", "userinfo", "introspection", "revocation", "end_session"):
            assert document[f"{name}_endpoint"].startswith(f"{tenant}/oauth2/"), name
        assert document["jwks_uri"] == f"{tenant}/jwks"
        assert browser.get("/.well-known/openid-configuration").status_code == 404
        assert browser.get("/oauth2/authorize", params=authorization(web.id)).status_code == 404
        assert browser.get("/tenant-a/jwks").status_code == 200

        response = browser.get("/tenant-a/oauth2/authorize", params=authorization(web.id))
        assert response.status_code == 302
        location = response.headers["location"]
        assert location.startswith("/tenant-a/sign-in?interaction=")
        assert "Path=/tenant-a" in response.headers["set-cookie"]
        page = browser.get(location)
        assert 'action="/tenant-a/sign-in"' in page.text
        fields = {**hidden_fields(page.text), "email": EMAIL, "password": PASSWORD}
        response = post_form(browser, "/tenant-a/sign-in", list(fields.items()))
        params = to_client(response)
        assert params["iss"] == tenant
        pairs = [("grant_type", "authorization_code"), ("code", params["code"]), ("redirect_uri", CALLBACK)]
        pairs.append(("code_verifier", VERIFIER))
        body = post_form(browser, "/tenant-a/oauth2/token", pairs, basic(web)).json()
        keys = jwt.PyJWKSet.from_dict(browser.get("/tenant-a/jwks").json())
        kid = jwt.get_unverified_header(body["id_token"])["kid"]
        claims = jwt.decode(body["id_token"], key=keys[kid], algorithms=["RS256"], audience=web.id, issuer=tenant)
        assert claims["iss"] == tenant
        assert browser.get("/tenant-a/oauth2/userinfo", headers=bearer(body["access_token"])).status_code == 200


@pytest.mark.parametrize("path", ["/jwks", "/.well-known/openid-configuration"])
def test_head_answers_like_get_without_a_body(visitor: TestClient, path: str) -> None:
    response = visitor.head(path)
    assert response.status_code == 200 and response.content == b""
    assert response.headers["content-type"] == "application/json"


# A database outage, and an unexpected error: each endpoint's own form, never a stack trace.


def database_down(*args: object, **kwargs: object) -> None:
    raise sa.exc.OperationalError("SELECT 1", {}, ConnectionRefusedError("connection refused"))


def test_database_outage_answers_503_in_the_oauth_form_at_the_token_endpoint(
    app, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("identity.token_endpoint.TokenEndpoint.exchange", database_down)
    with TestClient(app) as client:
        response = client.post("/oauth2/token", data={"grant_type": "client_credentials"})
    assert response.status_code == 503 and response.headers["retry-after"] == "5"
    assert response.json()["error"] == "temporarily_unavailable"
    assert response.headers["cache-control"] == "no-store"


def test_database_outage_answers_a_503_page_on_the_sign_in_pages(app, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("identity.flow.SignInFlow.start", database_down)
    with TestClient(app) as client:
        response = client.get("/oauth2/authorize", params={"client_id": "cli_x"})
    assert response.status_code == 503 and response.headers["retry-after"] == "5"
    assert response.headers["content-type"].startswith("text/html")
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]


def test_unexpected_error_answers_500_without_a_trace(app, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("secret internal detail")

    monkeypatch.setattr("identity.userinfo_claims.UserInfo.claims", broken)
    with TestClient(app) as client:
        response = client.get("/oauth2/userinfo", headers={"Authorization": "Bearer abc"})
    assert response.status_code == 500 and response.json()["error"] == "server_error"
    assert "secret internal detail" not in response.text and "Traceback" not in response.text
