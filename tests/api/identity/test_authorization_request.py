"""The authorization request (RFC 6749 §4.1.1, OpenID Connect Core §3.1.2): errors before the redirect URI
is trusted are pages, after it they go back to the client; each interaction is bound to its browser."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import pytest
from starlette.testclient import TestClient

from identity.accounts.users import User
from tests.support import identity_pages as pages
from tests.support.identity_fixtures import CALLBACK, CALLBACK_WITH_QUERY, Registered, Shared, register

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
    pairs += [("response_type", "code"), ("scope", "openid"), ("state", pages.STATE)]
    pairs += [("code_challenge", pages.CHALLENGE), ("code_challenge_method", "S256")]
    if method == "POST":
        response = pages.post_form(visitor, "/oauth2/authorize", pairs)
    else:
        response = visitor.get("/oauth2/authorize", params=pairs)
    pages.assert_error_page(response)
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
    "challenge with padding": ({"code_challenge": pages.CHALLENGE[:42] + "="}, [], "invalid_request"),
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
    response = pages.authorize(visitor, shared.web.id, *extra, method=method, **changes)
    pages.redirected_error(response, error)


def test_repeated_state_is_invalid_request_and_no_state_is_echoed(visitor: TestClient, shared: Shared) -> None:
    response = pages.authorize(visitor, shared.web.id, ("state", "second-state"))
    pages.redirected_error(response, "invalid_request", state=None)


def test_client_without_authorization_code_grant_is_unauthorized_client(visitor: TestClient, shared: Shared) -> None:
    service = register(shared.engine, shared.org, name="Batch job", grants=["client_credentials"])
    pages.redirected_error(pages.authorize(visitor, service.id), "unauthorized_client")


def test_client_registered_with_optional_pkce_may_omit_it(visitor: TestClient, shared: Shared) -> None:
    legacy = register(shared.engine, shared.org, name="Legacy server app", pkce_required=False)
    response = pages.authorize(visitor, legacy.id, code_challenge=None, code_challenge_method=None)
    pages.to_page(response, "sign-in")


def test_client_registered_with_optional_pkce_still_refuses_plain(visitor: TestClient, shared: Shared) -> None:
    legacy = register(shared.engine, shared.org, name="Legacy server app", pkce_required=False)
    response = pages.authorize(visitor, legacy.id, code_challenge_method="plain")
    pages.redirected_error(response, "invalid_request")


def test_unknown_parameters_are_ignored(visitor: TestClient, shared: Shared) -> None:
    response = pages.authorize(visitor, shared.web.id, ("display", "popup"), ("x-custom", "1"), ("x-custom", "2"))
    pages.to_page(response, "sign-in")


def test_parameters_sent_empty_are_treated_as_omitted(visitor: TestClient, shared: Shared) -> None:
    response = pages.authorize(visitor, shared.web.id, prompt="", max_age="", login_hint="")
    pages.to_page(response, "sign-in")


def test_error_redirect_keeps_the_redirect_uris_own_query(visitor: TestClient, shared: Shared) -> None:
    response = pages.authorize(visitor, shared.web.id, redirect_uri=CALLBACK_WITH_QUERY, response_type="token")
    params = pages.to_client(response, CALLBACK_WITH_QUERY)
    assert params["tenant"] == "acme"
    assert params["error"] == "unsupported_response_type" and params["state"] == pages.STATE


def test_code_redirect_keeps_the_redirect_uris_own_query(browser: TestClient, web: Registered, user: User) -> None:
    location = pages.to_page(pages.authorize(browser, web.id, redirect_uri=CALLBACK_WITH_QUERY), "sign-in")
    params = pages.to_client(pages.sign_in(browser, location), CALLBACK_WITH_QUERY)
    assert params["tenant"] == "acme" and params["code"] and params["state"] == pages.STATE


def test_each_interaction_is_bound_to_the_browser_by_its_own_cookie(visitor: TestClient, shared: Shared) -> None:
    response = pages.authorize(visitor, shared.web.id)
    interaction = dict(parse_qsl(urlsplit(pages.to_page(response, "sign-in")).query))["interaction"]
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"rm_ia_{interaction}=")
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Path=/" in cookie and "expires=" in cookie.lower()


def test_a_finished_interaction_deletes_its_cookie(browser: TestClient, web: Registered, user: User) -> None:
    location = pages.to_page(pages.authorize(browser, web.id), "sign-in")
    interaction = dict(parse_qsl(urlsplit(location).query))["interaction"]
    response = pages.sign_in(browser, location)
    pages.code_of(response)
    (cookie,) = [c for c in response.headers.get_list("set-cookie") if c.startswith(f"rm_ia_{interaction}=")]
    assert "1970" in cookie
    assert not [name for name in browser.cookies if name.startswith("rm_ia_")]


def test_starting_another_sign_in_leaves_a_pending_one_usable(browser: TestClient, web: Registered, user: User) -> None:
    first = pages.to_page(pages.authorize(browser, web.id), "sign-in")
    pages.to_page(pages.authorize(browser, web.id), "sign-in")  # e.g. a cross-site form post to /oauth2/authorize
    assert browser.get(first).status_code == 200
