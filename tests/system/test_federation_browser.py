"""Sign-in through an organization's own identity provider, in Debian's Chromium (identity/federation/).

The upstream company provider is panva's oidc-provider from npm (tests/support/upstream.py), on loopback, with its
own sign-in and consent pages; the service runs as users run it, with loopback outbound requests allowed (as in
development: ``MENUS_OUTBOUND_LOOPBACK``). The issue's Done-when steps, each timed (``-s`` shows the times and the
claims of the ID tokens the application received, for the closing note): (1) the operator claims corp.example for
Corp (``orgs claim-domain``); (2) Corp's owner registers the connection in the console, with the client registered
at the provider by Dynamic Client Registration; (3) a person of Corp signs in through the provider and becomes a
member; (4) an existing verified account is linked; (5) an unverified upstream email is refused linking; (6) SSO
required; (7) the provider's back-channel logout; and (8) the owner's "try it". The relying party is
the browser tests' own (tests/support/browser_rp.py), a first-party client of Corp. Our pages on the way are
checked with axe-core.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests
from playwright.sync_api import Browser, Page

from tests.support.browser_rp import RelyingParty, relying_party
from tests.support.chromium import TIMEOUT_MS, browser, check_page, context, on_page, page, playwright
from tests.support.identity_fixtures import PASSWORD
from tests.support.live import LiveService, live_service
from tests.support.upstream import Upstream, upstream_provider

__all__ = ["browser", "context", "page", "playwright"]  # the Chromium fixtures of tests/support/chromium.py


OWNER = "olivia@example.com"  # Corp's owner: her address is in no claimed domain, so she signs in with a password


@dataclass(frozen=True)
class Federation:
    service: LiveService
    upstream: Upstream
    rp: RelyingParty
    corp: dict[str, Any]
    client_secret: str
    owner: Page  # the owner's browser, signed in to the console

    @property
    def issuer(self) -> str:
        return self.service.url


@contextmanager
def done_when(step: int, what: str) -> Iterator[None]:
    """Time one of the issue's Done-when steps; ``-s`` shows it."""
    began = time.perf_counter()
    yield
    lap(step, what, began)


def lap(step: int, what: str, began: float) -> None:
    print(f"\nDone-when step {step} ({what}): {time.perf_counter() - began:.2f} s")


def shown_claims(step: int, claims: dict[str, Any]) -> None:
    print(f"\nDone-when step {step}: the ID token the application received: {json.dumps(claims, sort_keys=True)}")


@pytest.fixture(scope="module")
def federation(tmp_path_factory: pytest.TempPathFactory, browser: Browser) -> Iterator[Federation]:
    workdir = tmp_path_factory.mktemp("federation")
    with live_service(workdir) as service, upstream_provider(workdir) as upstream, relying_party() as rp:
        corp = service.cli_json("orgs", "create", "--name", "Corp")
        with done_when(1, "the operator claims corp.example for Corp"):
            service.cli("orgs", "claim-domain", corp["id"], "corp.example")
        service.cli_json(
            "users", "create", "--email", OWNER, "--name", "Olivia Owner", "--password-stdin",
            "--org", corp["id"], "--role", "owner", stdin=PASSWORD + "\n",
        )  # fmt: skip
        client = service.cli_json(
            "clients", "create", "--name", "Corp Menus", "--org", corp["id"], "--first-party",
            "--redirect-uri", rp.redirect_uri, "--post-logout-redirect-uri", rp.post_logout_redirect_uri,
            "--auth-method", "client_secret_basic", "--grant", "authorization_code",
            "--scope", "openid", "--scope", "profile", "--scope", "email",
        )  # fmt: skip
        rp.issuer, rp.client_id = service.url, client["client_id"]
        owner_context = browser.new_context(bypass_csp=True, viewport={"width": 800, "height": 900})
        owner_context.set_default_timeout(TIMEOUT_MS)
        owner = owner_context.new_page()
        with done_when(2, "Corp's owner configures the connection in the console"):
            connect_in_console(owner, service, upstream, corp)
        try:
            yield Federation(service, upstream, rp, corp, client["client_secret"], owner)
        finally:
            owner_context.close()


def connect_in_console(page: Page, service: LiveService, upstream: Upstream, corp: dict[str, Any]) -> None:
    """The owner signs in to the console, opens "Sign-in connection", registers us at the provider with the URIs the
    page gives, and saves the connection; the page then shows it, without its secret."""
    page.goto(f"{service.url}/console/")
    page.get_by_role("link", name="Sign in", exact=True).click()
    on_page(page, service.url, "/sign-in")
    page.get_by_label("Email").fill(OWNER)
    page.get_by_role("button", name="Continue").click()
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    on_page(page, service.url, "/console/")
    page.get_by_role("link", name="Sign-in connection").click()
    on_page(page, service.url, "/console/connection")
    check_page(page, "federation-console-connection-new")
    uris = {
        name: page.locator(f"dt:text-is('{name}') + dd").inner_text()
        for name in ("Redirect URI", "Back-channel logout URI", "Post-logout redirect URI")
    }
    ours = upstream.register(
        redirect_uri=uris["Redirect URI"],
        post_logout_redirect_uri=uris["Post-logout redirect URI"],
        backchannel_logout_uri=uris["Back-channel logout URI"],
    )
    assert uris["Redirect URI"] == f"{service.url}/federation/{corp['id']}/callback"
    page.get_by_label("Issuer").fill(upstream.issuer)
    page.get_by_label("Client id").fill(ours["client_id"])
    page.get_by_label("Client secret").fill(ours["client_secret"])
    page.get_by_role("button", name="Save the connection").click()
    on_page(page, service.url, "/console/connection")
    assert page.get_by_role("heading", name="Change the connection").is_visible()
    assert ours["client_id"] in page.content() and ours["client_secret"] not in page.content()
    check_page(page, "federation-console-connection")


def claims_of(jwt: str) -> dict[str, Any]:
    payload = jwt.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))  # type: ignore[no-any-return]


def start(page: Page, f: Federation, prompt: str | None = None) -> str:
    page.goto(f.rp.url + ("/?" + urlencode({"prompt": prompt}) if prompt else "/"))
    link = page.get_by_role("link", name="Sign in")
    href = link.get_attribute("href") or ""
    link.click()
    return parse_qs(urlsplit(href).query)["state"][0]


def give_email(page: Page, f: Federation, email: str, screenshot: str | None = None) -> None:
    """Our sign-in page asks for the email first."""
    on_page(page, f.issuer, "/sign-in")
    assert page.get_by_label("Password").count() == 0
    if screenshot:
        check_page(page, screenshot)
    page.get_by_label("Email").fill(email)
    page.get_by_role("button", name="Continue").click()


def sign_in_upstream(page: Page, f: Federation, login: str) -> None:
    """The provider's own pages: its sign-in (any login and password), then its consent."""
    page.wait_for_url(lambda url: url.startswith(f.upstream.issuer + "/interaction/"))
    page.locator("input[name=login]").fill(login)
    page.locator("input[name=password]").fill("anything at all")
    page.get_by_role("button", name="Sign-in").click()
    page.wait_for_url(lambda url: url.startswith(f.upstream.issuer + "/interaction/"))
    page.get_by_role("button", name="Continue").click()


def redeem(f: Federation, state: str) -> dict[str, Any]:
    with f.rp.lock:
        callback = f.rp.callbacks[-1]
    assert callback["state"] == state and callback["iss"] == f.issuer, callback
    request = f.rp.requests[state]
    answer = requests.post(
        f"{f.issuer}/oauth2/token",
        data={
            "grant_type": "authorization_code",
            "code": callback["code"],
            "redirect_uri": f.rp.redirect_uri,
            "code_verifier": request.code_verifier,
        },
        auth=(f.rp.client_id, f.client_secret),
        timeout=10,
    )
    assert answer.status_code == 200, answer.text
    return answer.json()  # type: ignore[no-any-return]


def signed_in_through_provider(page: Page, f: Federation, email: str, screenshot: str | None = None) -> dict[str, Any]:
    state = start(page, f)
    give_email(page, f, email, screenshot)
    sign_in_upstream(page, f, email)
    on_page(page, f.rp.url, "/callback")
    assert page.get_by_role("heading", level=1).inner_text() == "Signed in"
    return claims_of(redeem(f, state)["id_token"])


def member_of(f: Federation, email: str) -> dict[str, Any]:
    return next(user for user in f.service.cli_json("users", "list") if user["email"] == email)


def test_a_new_person_of_corp_signs_in_through_the_upstream_and_becomes_a_member(
    page: Page, federation: Federation
) -> None:
    f = federation
    with done_when(3, "a person of Corp signs in through the provider and becomes a member"):
        claims = signed_in_through_provider(page, f, "ana@corp.example", screenshot="federation-email-first")
    shown_claims(3, claims)
    assert claims["amr"] == ["fed"] and claims["acr"] == "urn:regional-menus:acr:federated"
    assert claims["email"] == "ana@corp.example" and claims["email_verified"] is True
    assert claims["org_id"] == f.corp["id"]
    ana = member_of(f, "ana@corp.example")
    assert claims["sub"] == ana["id"]
    assert [(org["id"], org["role"]) for org in ana["orgs"]] == [(f.corp["id"], "member")]


def test_an_existing_verified_account_is_linked(page: Page, federation: Federation) -> None:
    f = federation
    elsewhere = f.service.cli_json("orgs", "create", "--name", "Bo's Bakery")
    bo = f.service.create_user("bo@corp.example", "Bo Berg", PASSWORD, elsewhere["id"])
    f.service.cli("users", "verify-email", "bo@corp.example")
    with done_when(4, "an existing verified account is linked"):
        claims = signed_in_through_provider(page, f, "bo@corp.example")
    assert claims["sub"] == bo["id"] and claims["amr"] == ["fed"]
    assert {org["id"] for org in member_of(f, "bo@corp.example")["orgs"]} == {elsewhere["id"], f.corp["id"]}


def test_an_unverified_upstream_email_is_refused_linking(page: Page, federation: Federation) -> None:
    f = federation
    cy = f.service.create_user("cy@corp.example", "Cy Chen", PASSWORD, f.corp["id"])
    f.service.cli("users", "verify-email", "cy@corp.example")
    f.upstream.set_account("cy@corp.example", email="cy@corp.example", email_verified=False, name="Cy")
    with done_when(5, "an unverified upstream email is refused linking"):
        start(page, f)
        give_email(page, f, "cy@corp.example")
        sign_in_upstream(page, f, "cy@corp.example")
        page.wait_for_url(lambda url: url.startswith(f"{f.issuer}/federation/{f.corp['id']}/callback"))
    assert page.get_by_role("heading", level=1).inner_text() == "Your organization's sign-in failed"
    assert "does not say the address is verified" in page.get_by_role("alert").inner_text()
    check_page(page, "federation-refused")
    assert member_of(f, "cy@corp.example")["id"] == cy["id"]
    with f.rp.lock:
        assert all(callback.get("state") for callback in f.rp.callbacks)  # the app was sent nothing for it


def test_sso_required_blocks_the_password_form(page: Page, federation: Federation) -> None:
    f = federation
    f.service.create_user("dee@example.com", "Dee Diaz", PASSWORD, f.corp["id"])
    upstream_client = f.upstream.register(
        redirect_uri=f"{f.issuer}/federation/{f.corp['id']}/callback",
        post_logout_redirect_uri=f"{f.issuer}/federation/signed-out",
        backchannel_logout_uri=f"{f.issuer}/federation/{f.corp['id']}/backchannel-logout",
    )
    f.service.cli(
        "orgs", "connect", f.corp["id"], "--issuer", f.upstream.issuer, "--client-id", upstream_client["client_id"],
        "--client-secret-stdin", "--sso-required", stdin=upstream_client["client_secret"] + "\n",
    )  # fmt: skip
    try:
        began = time.perf_counter()
        start(page, f)
        give_email(page, f, "dee@example.com")  # not a claimed domain: the password form
        on_page(page, f.issuer, "/sign-in")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        # The right password signs Dee in nowhere: the browser goes on to Corp's provider.
        page.wait_for_url(lambda url: url.startswith(f.upstream.issuer + "/interaction/"))
        assert not any(cookie["name"] == "rm_session" for cookie in page.context.cookies(f.issuer))
        lap(6, "SSO required: a right password signs in nowhere", began)
    finally:
        f.service.cli(
            "orgs", "connect", f.corp["id"], "--issuer", f.upstream.issuer,
            "--client-id", upstream_client["client_id"], "--sso-optional",
        )  # fmt: skip


def test_the_providers_back_channel_logout_ends_the_session_here(page: Page, federation: Federation) -> None:
    f = federation
    began = time.perf_counter()
    shown_claims(7, signed_in_through_provider(page, f, "eve@corp.example"))
    # Signed in here: a new sign-in of the app needs no page.
    start(page, f)
    on_page(page, f.rp.url, "/callback")
    assert page.get_by_role("heading", level=1).inner_text() == "Signed in"
    # Signing out at the provider: it posts its logout token to our back-channel logout URI.
    page.goto(f"{f.upstream.issuer}/session/end")
    page.get_by_role("button", name="Yes, sign me out").click()
    page.wait_for_load_state("load")
    start(page, f)
    on_page(page, f.issuer, "/sign-in")  # our session ended: the email is asked again
    lap(7, "the provider's back-channel logout ends the session", began)


def test_an_owner_tries_the_connection_and_sees_the_claims_received(federation: Federation) -> None:
    """From the console's connection page: nobody is signed in or made a member by it."""
    f, page = federation, federation.owner
    with done_when(8, "the owner tries the connection and sees the claims received (item 1's try-it)"):
        page.goto(f"{f.issuer}/console/connection")
        page.get_by_role("link", name="Try the sign-in").click()
        sign_in_upstream(page, f, "tess@corp.example")
        page.wait_for_url(lambda url: url.startswith(f"{f.issuer}/federation/{f.corp['id']}/callback"))
        assert page.get_by_role("heading", level=1).inner_text() == "Your organization's sign-in works"
        received = page.get_by_role("table").inner_text()
    print(f"\nDone-when step 8: the claims shown:\n{received}")
    assert "tess@corp.example" in received
    check_page(page, "federation-test")
    assert not any(user["email"] == "tess@corp.example" for user in f.service.cli_json("users", "list"))
