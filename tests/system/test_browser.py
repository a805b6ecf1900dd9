"""The sign-in pages in a real browser: Debian's Chromium, driven by Playwright (sync API).

The provider runs as users run it (``tests/support/live.py``); its organizations, users and a
third-party client (so the consent page shows) are made with the command line. The
relying party is a small HTTP server of the test's own (``tests/support/browser_rp.py``): its
"Sign in" link starts a code flow with PKCE S256, ``state`` and ``nonce``, and its callback
records the code, which the test redeems at the token endpoint.

Every provider page reached is checked with axe-core (no violation of impact "serious" or
"critical") and saved as a full-page screenshot under ``reports/browser/``. The pages forbid
every script by their Content-Security-Policy, so the browser contexts bypass it to inject axe.

Playwright's own browser download is never used: a missing ``/usr/bin/chromium`` or axe-core
fails the tests (CI installs both), it does not skip them.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests
from playwright.sync_api import Page

from tests.support.browser_rp import SCOPE, RelyingParty, relying_party
from tests.support.chromium import SCREENSHOTS, browser, check_page, context, on_page, page, playwright
from tests.support.identity_fixtures import PASSWORD
from tests.support.live import LiveProvider, live_service

__all__ = ["browser", "context", "page", "playwright"]  # the Chromium fixtures of tests/support/chromium.py

# The provider and the relying party: one of each for the module


@dataclass(frozen=True)
class Provider(LiveProvider):
    rp: RelyingParty
    client_secret: str


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    with live_service(tmp_path_factory.mktemp("browser")) as service, relying_party() as rp:
        acme, beta, ana, bo = service.two_organizations(PASSWORD)
        # No --first-party: a third-party client, so the consent page shows.
        client = service.cli_json(
            "clients", "create", "--name", "Menu Planner", "--org", acme["id"],
            "--redirect-uri", rp.redirect_uri, "--post-logout-redirect-uri", rp.post_logout_redirect_uri,
            "--auth-method", "client_secret_basic", "--grant", "authorization_code",
            "--scope", "openid", "--scope", "profile", "--scope", "email",
        )  # fmt: skip
        rp.issuer, rp.client_id = service.url, client["client_id"]
        yield Provider(
            service=service, acme=acme, beta=beta, ana=ana, bo=bo, rp=rp, client_secret=client["client_secret"]
        )


# Checks of each page


def focused(page: Page) -> str:
    """The focused element, as ``tag#id`` or ``tag:text``; ``body`` when no element of the page has focus."""
    return str(
        page.evaluate(
            "() => { const e = document.activeElement;"
            " if (!e || e === document.body) return 'body';"
            " return e.tagName.toLowerCase() + (e.id ? '#' + e.id : ':' + e.textContent.trim()); }"
        )
    )


def claims_of(jwt: str) -> dict[str, Any]:
    """The payload of a JWT; its signature is the API tests' concern."""
    payload = jwt.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))  # type: ignore[no-any-return]


def redeem(p: Provider, callback: dict[str, str]) -> dict[str, Any]:
    """The relying party's side of the callback: check ``state`` and ``iss``, redeem the code (client_secret_basic)."""
    assert set(callback) == {"code", "state", "iss"}, callback
    assert callback["iss"] == p.issuer
    request = p.rp.requests[callback["state"]]  # a state the relying party issued
    answer = requests.post(
        f"{p.issuer}/oauth2/token",
        data={
            "grant_type": "authorization_code",
            "code": callback["code"],
            "redirect_uri": p.rp.redirect_uri,
            "code_verifier": request.code_verifier,
        },
        auth=(p.rp.client_id, p.client_secret),
        timeout=10,
    )
    assert answer.status_code == 200, answer.text
    token: dict[str, Any] = answer.json()
    assert token["access_token"] and token["id_token"] and token["token_type"].lower() == "bearer"
    assert token["scope"].split() == SCOPE.split()
    claims = claims_of(token["id_token"])
    assert (claims["iss"], claims["aud"], claims["nonce"]) == (p.issuer, p.rp.client_id, request.nonce)
    return token


def open_relying_party(page: Page, p: Provider, prompt: str | None = None) -> str:
    """Open the relying party's page; the state of the authorization request behind its "Sign in" link."""
    page.goto(p.rp.url + ("/?" + urlencode({"prompt": prompt}) if prompt else "/"))
    href = page.get_by_role("link", name="Sign in").get_attribute("href")
    assert href and href.startswith(p.issuer + "/oauth2/authorize?"), href
    query = parse_qs(urlsplit(href).query)
    assert query["code_challenge_method"] == ["S256"] and query["response_type"] == ["code"]
    return query["state"][0]


def start_sign_in(page: Page, p: Provider, prompt: str | None = None) -> str:
    """Open the relying party's page and click "Sign in"; the state of the request it made."""
    state = open_relying_party(page, p, prompt)
    page.get_by_role("link", name="Sign in").click()
    return state


def consent(page: Page, p: Provider, client_name: str = "Menu Planner") -> None:
    on_page(page, p.issuer, "/consent")
    assert page.get_by_role("heading", level=1).inner_text() == f"Allow {client_name}?"
    check_page(page, "consent")
    page.get_by_role("button", name="Allow").click()


def callback_of(page: Page, p: Provider, state: str, screenshot: str | None = None) -> dict[str, str]:
    on_page(page, p.rp.url, "/callback")
    assert page.get_by_role("heading", level=1).inner_text() == "Signed in"
    if screenshot:
        page.screenshot(path=SCREENSHOTS / f"{screenshot}.png", full_page=True)
    with p.rp.lock:
        callback = p.rp.callbacks[-1]
    assert callback["state"] == state
    return callback


# The tests


def test_browser_signs_up_consents_returns_with_a_code_and_signs_out_after_confirming(
    page: Page, provider: Provider
) -> None:
    p = provider
    state = start_sign_in(page, p, prompt="create")

    on_page(page, p.issuer, "/sign-up")
    check_page(page, "sign-up")
    page.get_by_label("Your name").fill("Cleo Cruz")
    page.get_by_label("Email").fill("cleo@example.com")
    page.get_by_label("Password").fill("short")
    page.get_by_label("Organization name").fill("Cleo's Kitchen")
    page.get_by_role("button", name="Create account").click()

    # A weak password: the page comes back with the field marked, its error tied to it, the other values kept.
    page.wait_for_selector("[aria-invalid=true]")
    on_page(page, p.issuer, "/sign-up")
    password = page.get_by_label("Password")
    assert password.get_attribute("aria-invalid") == "true"
    assert page.get_by_role("alert").inner_text() == "Please correct the fields marked below."
    described_by = "e => e.getAttribute('aria-describedby').split(' ').map(id => document.getElementById(id).id)"
    assert password.evaluate(described_by) == ["password-error", "password-hint"]  # the error, then the hint
    assert page.get_by_label("Your name").input_value() == "Cleo Cruz"
    check_page(page, "sign-up-errors")
    password.fill(PASSWORD)
    page.get_by_role("button", name="Create account").click()

    consent(page, p)
    callback = callback_of(page, p, state, screenshot="callback")
    token = redeem(p, callback)
    claims = claims_of(token["id_token"])
    assert claims["org_name"] == "Cleo's Kitchen"  # the organization made at sign-up, without a picker
    assert claims["email"] == "cleo@example.com" and claims["name"] == "Cleo Cruz"

    # Sign out without an ID token hint: the provider asks first, then sends the browser back with the state.
    query = {"client_id": p.rp.client_id, "post_logout_redirect_uri": p.rp.post_logout_redirect_uri, "state": "bye-1"}
    page.goto(f"{p.issuer}/oauth2/end-session?{urlencode(query)}")
    assert page.get_by_role("heading", level=1).inner_text() == "Sign out?"
    assert "cleo@example.com" in page.inner_text("main")
    check_page(page, "end-session")
    page.get_by_role("button", name="Sign out").click()
    on_page(page, p.rp.url, "/signed-out")
    assert p.rp.sign_outs[-1] == {"state": "bye-1"}

    # The session is over: the next sign-in asks for credentials.
    start_sign_in(page, p)
    on_page(page, p.issuer, "/sign-in")


def test_browser_signs_in_a_member_of_two_organizations_who_picks_one_consents_and_signs_out(
    page: Page, provider: Provider
) -> None:
    p = provider
    state = start_sign_in(page, p)

    on_page(page, p.issuer, "/sign-in")
    assert page.get_by_role("heading", level=1).inner_text() == "Sign in"
    check_page(page, "sign-in")
    page.get_by_label("Email").fill(p.bo["email"])
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()

    on_page(page, p.issuer, "/select-organization")
    choices = page.get_by_role("radio")
    assert choices.count() == 2
    assert [choices.nth(i).get_attribute("value") for i in range(2)] == [p.acme["id"], p.beta["id"]]
    check_page(page, "organization-picker")
    page.get_by_label("Beta Bakery").check()
    page.get_by_role("button", name="Continue").click()

    consent(page, p)
    token = redeem(p, callback_of(page, p, state))
    claims = claims_of(token["id_token"])
    assert (claims["sub"], claims["org_id"], claims["org_name"]) == (p.bo["id"], p.beta["id"], "Beta Bakery")

    # An ID token hint naming the current session signs out at once: no confirmation page.
    query = {
        "id_token_hint": token["id_token"],
        "post_logout_redirect_uri": p.rp.post_logout_redirect_uri,
        "state": "bye-2",
    }
    page.goto(f"{p.issuer}/oauth2/end-session?{urlencode(query)}")
    on_page(page, p.rp.url, "/signed-out")
    assert p.rp.sign_outs[-1] == {"state": "bye-2"}
    answer = requests.get(
        f"{p.issuer}/oauth2/userinfo", headers={"Authorization": f"Bearer {token['access_token']}"}, timeout=10
    )
    assert answer.status_code == 401  # the session's tokens are revoked with it


def test_keyboard_alone_signs_in_through_labelled_fields_in_order(page: Page, provider: Provider) -> None:
    p = provider
    state = open_relying_party(page, p)
    page.keyboard.press("Tab")
    assert focused(page) == "a:Sign in"
    page.keyboard.press("Enter")

    on_page(page, p.issuer, "/sign-in")
    email, password = page.get_by_label("Email"), page.get_by_label("Password")
    assert email.get_attribute("name") == "email" and password.get_attribute("type") == "password"
    assert focused(page) == "input#email"  # autofocus
    page.keyboard.press("Shift+Tab")  # nothing focusable comes before it: focus leaves the page
    assert focused(page) == "body"
    # From the start of the page, Tab walks email, password, the submit button, then the two links.
    order = []
    for _ in range(5):
        page.keyboard.press("Tab")
        order.append(focused(page))
    assert order == [
        "input#email",
        "input#password",
        "button:Sign in",
        "a:Forgot your password?",
        "a:Create an account",
    ]

    for _ in range(4):
        page.keyboard.press("Shift+Tab")
    assert focused(page) == "input#email"
    page.keyboard.type(p.ana["email"])
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Tab")
    assert focused(page) == "button:Sign in"
    page.keyboard.press("Enter")

    on_page(page, p.issuer, "/consent")
    page.keyboard.press("Tab")
    assert focused(page) == "button:Allow"
    page.keyboard.press("Enter")

    token = redeem(p, callback_of(page, p, state))
    claims = claims_of(token["id_token"])
    assert (claims["sub"], claims["org_id"]) == (p.ana["id"], p.acme["id"])


def test_an_unknown_client_gets_an_accessible_error_page_and_no_redirect(page: Page, provider: Provider) -> None:
    p = provider
    query = {
        "response_type": "code",
        "client_id": "no-such-client",
        "redirect_uri": p.rp.redirect_uri,
        "scope": SCOPE,
        "state": "s",
        "code_challenge": "x" * 43,
        "code_challenge_method": "S256",
    }
    response = page.goto(f"{p.issuer}/oauth2/authorize?{urlencode(query)}")
    assert response is not None and response.status == 400
    assert response.headers["content-security-policy"].startswith("default-src 'none';")  # bypassed only for axe
    assert page.url.startswith(p.issuer + "/oauth2/authorize?")  # never sent to the unverified redirect URI
    assert all(callback.get("state") != "s" for callback in p.rp.callbacks)
    assert page.get_by_role("heading", level=1).inner_text() == "Unknown application"
    assert page.get_by_role("alert").inner_text() == "No application is registered with this client_id."
    check_page(page, "error")
