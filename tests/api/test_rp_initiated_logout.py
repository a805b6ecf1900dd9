"""RP-initiated sign-out (OpenID Connect RP-Initiated Logout 1.0): the hint, the confirmation page, and
the tokens of the session revoked.

How every test here runs (the app in process, both databases): ``tests/support/token_flows.py``.
"""

from __future__ import annotations

import httpx
import pytest
from starlette.testclient import TestClient

from tests.support import token_flows as flows
from tests.support.clocks import MovableClock

ON_BOTH_ENGINES = True  # every test here that uses the state database runs on SQLite and on PostgreSQL


SESSION_COOKIE = "rm_session"


def silent_authorize(http: TestClient, client_id: str) -> dict[str, str]:
    """``prompt=none``: the parameters of the redirect back to the client."""
    location, _ = flows.start_authorization(http, client_id, prompt="none")
    assert location.startswith(flows.REDIRECT_URI + "?"), location
    return flows.query_of(location)


def assert_error_page(response: httpx.Response) -> None:
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("text/html")
    assert "location" not in response.headers


def assert_page_headers(response: httpx.Response) -> None:
    assert response.headers["content-security-policy"].startswith("default-src 'none'")
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["cache-control"] == "no-store"


def cleared(response: httpx.Response, cookie: str) -> bool:
    """Whether the response tells the browser to drop ``cookie``."""
    for header in response.headers.get_list("set-cookie"):
        attributes = header.lower()
        if header.startswith(f"{cookie}=") and ("expires=thu, 01 jan 1970" in attributes or "max-age=0" in attributes):
            return True
    return False


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_end_session_refuses_an_unregistered_post_logout_redirect_uri(
    http: TestClient, world: flows.World, method: str
) -> None:
    tokens = flows.user_tokens(http, world.planner)

    for params in (
        {"client_id": world.planner.id, "post_logout_redirect_uri": "https://evil.example.com/"},
        {"id_token_hint": tokens["id_token"], "post_logout_redirect_uri": flows.REDIRECT_URI},
        {"post_logout_redirect_uri": flows.LOGOUT_URI},  # no client named: nothing to check it against
    ):
        response = flows.end_session(http, method, state="s1", **params)
        assert_error_page(response)
        assert_page_headers(response)

    assert "code" in silent_authorize(http, world.planner.id)  # still signed in


def test_end_session_refuses_an_id_token_hint_signed_by_a_foreign_key(
    http: TestClient, world: flows.World, stranger_key: flows.KeyPair
) -> None:
    tokens = flows.user_tokens(http, world.planner)
    forged = flows.look_alike(tokens["id_token"], stranger_key)

    response = flows.end_session(
        http, "GET", id_token_hint=forged, post_logout_redirect_uri=flows.LOGOUT_URI, state="s1"
    )

    assert_error_page(response)
    assert "code" in silent_authorize(http, world.planner.id)


def test_end_session_refuses_an_access_token_as_id_token_hint(http: TestClient, world: flows.World) -> None:
    tokens = flows.user_tokens(http, world.planner)

    response = flows.end_session(
        http, "GET", id_token_hint=tokens["access_token"], post_logout_redirect_uri=flows.LOGOUT_URI, state="s1"
    )

    assert_error_page(response)
    assert "code" in silent_authorize(http, world.planner.id)


def test_end_session_accepts_an_expired_id_token_hint_of_ours(
    http: TestClient, world: flows.World, clock: MovableClock
) -> None:
    tokens = flows.then_later(clock, lambda: flows.user_tokens(http, world.planner))
    assert flows.verified(http, tokens["id_token"], world.planner.id)["exp"] <= clock.now().timestamp()  # expired

    response = flows.end_session(
        http, "GET", id_token_hint=tokens["id_token"], post_logout_redirect_uri=flows.LOGOUT_URI, state="s1"
    )

    assert response.status_code == 302, response.text
    assert response.headers["location"] == f"{flows.LOGOUT_URI}?state=s1"


def test_end_session_refuses_an_id_token_hint_issued_to_another_client_id(http: TestClient, world: flows.World) -> None:
    tokens = flows.user_tokens(http, world.planner)

    response = flows.end_session(
        http,
        "GET",
        id_token_hint=tokens["id_token"],
        client_id=world.companion.id,
        post_logout_redirect_uri=flows.LOGOUT_URI,
    )

    assert_error_page(response)
    assert "code" in silent_authorize(http, world.planner.id)


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_end_session_with_a_hint_for_the_current_session_redirects_with_state(
    http: TestClient, world: flows.World, method: str
) -> None:
    tokens = flows.user_tokens(http, world.planner)
    assert SESSION_COOKIE in http.cookies

    response = flows.end_session(
        http, method, id_token_hint=tokens["id_token"], post_logout_redirect_uri=flows.LOGOUT_URI, state="s-42"
    )

    assert response.status_code == 302, response.text
    assert response.headers["location"] == f"{flows.LOGOUT_URI}?state=s-42"
    assert cleared(response, SESSION_COOKIE)
    assert SESSION_COOKIE not in http.cookies


def test_end_session_with_a_hint_of_an_earlier_session_asks_for_confirmation(
    http: TestClient, world: flows.World
) -> None:
    earlier = flows.user_tokens(http, world.planner)
    signed_out = flows.end_session(
        http, "GET", id_token_hint=earlier["id_token"], post_logout_redirect_uri=flows.LOGOUT_URI
    )
    assert signed_out.status_code == 302, signed_out.text
    flows.user_tokens(http, world.planner)  # a new session

    response = flows.end_session(
        http, "GET", id_token_hint=earlier["id_token"], post_logout_redirect_uri=flows.LOGOUT_URI
    )

    assert response.status_code == 200, response.text
    assert "csrf_token" in flows.hidden_inputs(response.text)
    assert "code" in silent_authorize(http, world.planner.id)


def test_signing_out_ends_the_session_everywhere_and_revokes_its_tokens(http: TestClient, world: flows.World) -> None:
    planner = flows.user_tokens(http, world.planner)
    companion = flows.user_tokens(http, world.companion)  # the same browser session, no second sign-in

    response = flows.end_session(
        http, "GET", id_token_hint=planner["id_token"], post_logout_redirect_uri=flows.LOGOUT_URI
    )
    assert response.status_code == 302, response.text

    assert silent_authorize(http, world.planner.id)["error"] == "login_required"
    assert silent_authorize(http, world.companion.id)["error"] == "login_required"
    for registered, tokens in ((world.planner, planner), (world.companion, companion)):
        flows.assert_oauth_error(flows.refresh(http, registered, tokens["refresh_token"]), "invalid_grant")
        assert flows.introspect(http, registered, tokens["access_token"]) == {"active": False}
        assert flows.userinfo_status(http, tokens["access_token"]) == 401


def test_signing_out_revokes_access_tokens_refreshed_in_the_session(http: TestClient, world: flows.World) -> None:
    tokens = flows.user_tokens(http, world.planner)
    refreshed = flows.refresh(http, world.planner, tokens["refresh_token"]).json()

    response = flows.end_session(
        http, "GET", id_token_hint=tokens["id_token"], post_logout_redirect_uri=flows.LOGOUT_URI
    )
    assert response.status_code == 302, response.text

    assert flows.introspect(http, world.planner, refreshed["access_token"]) == {"active": False}
    flows.assert_oauth_error(flows.refresh(http, world.planner, refreshed["refresh_token"]), "invalid_grant")


def test_end_session_without_a_hint_asks_for_confirmation(http: TestClient, world: flows.World) -> None:
    flows.user_tokens(http, world.planner)

    response = flows.end_session(
        http, "GET", client_id=world.planner.id, post_logout_redirect_uri=flows.LOGOUT_URI, state="s1"
    )

    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/html")
    assert_page_headers(response)
    html = response.text
    assert '<form method="post" action="/oauth2/end-session">' in html
    assert flows.hidden_inputs(html)["csrf_token"]
    assert '<button type="submit" name="confirm" value="yes">' in html
    assert "<script" not in html.lower()
    assert "code" in silent_authorize(http, world.planner.id)  # asking signs nobody out


def confirmation_form(http: TestClient, world: flows.World) -> dict[str, str]:
    """Sign in, open the confirmation page, and return its hidden fields."""
    flows.user_tokens(http, world.planner)
    page = flows.end_session(
        http, "GET", client_id=world.planner.id, post_logout_redirect_uri=flows.LOGOUT_URI, state="s1"
    )
    assert page.status_code == 200, page.text
    return flows.hidden_inputs(page.text)


def test_confirming_sign_out_with_a_wrong_csrf_token_is_refused(http: TestClient, world: flows.World) -> None:
    form = confirmation_form(http, world)

    response = http.post("/oauth2/end-session", data={**form, "csrf_token": "forged", "confirm": "yes"})

    assert_error_page(response)
    assert_page_headers(response)
    assert "code" in silent_authorize(http, world.planner.id)


def test_confirming_sign_out_signs_out_and_redirects(http: TestClient, world: flows.World) -> None:
    form = confirmation_form(http, world)
    assert form["client_id"] == world.planner.id and form["post_logout_redirect_uri"] == flows.LOGOUT_URI

    response = http.post("/oauth2/end-session", data={**form, "confirm": "yes"})

    assert response.status_code == 302, response.text
    assert response.headers["location"] == f"{flows.LOGOUT_URI}?state=s1"
    assert cleared(response, SESSION_COOKIE)
    assert silent_authorize(http, world.planner.id)["error"] == "login_required"


def test_confirming_sign_out_without_a_redirect_uri_shows_the_signed_out_page(
    http: TestClient, world: flows.World
) -> None:
    tokens = flows.user_tokens(http, world.planner)
    page = flows.end_session(http, "GET")
    assert page.status_code == 200, page.text

    response = http.post("/oauth2/end-session", data={**flows.hidden_inputs(page.text), "confirm": "yes"})

    assert response.status_code == 200, response.text
    assert_page_headers(response)
    assert "signed out" in response.text.lower()
    assert cleared(response, SESSION_COOKIE)
    assert silent_authorize(http, world.planner.id)["error"] == "login_required"
    flows.assert_oauth_error(flows.refresh(http, world.planner, tokens["refresh_token"]), "invalid_grant")


def test_declining_sign_out_keeps_the_session(http: TestClient, world: flows.World) -> None:
    form = confirmation_form(http, world)

    response = http.post("/oauth2/end-session", data={**form, "confirm": "no"})

    assert response.status_code == 200, response.text
    assert_page_headers(response)
    assert not cleared(response, SESSION_COOKIE)
    assert "code" in silent_authorize(http, world.planner.id)
