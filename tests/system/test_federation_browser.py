"""Sign-in through an organization's own identity provider, in Debian's Chromium (identity/federation/).

The upstream company provider is panva's oidc-provider from npm (tests/support/upstream.py), on loopback, with its
own sign-in and consent pages; the service runs as users run it, with loopback outbound requests allowed (as in
development: ``MENUS_OUTBOUND_LOOPBACK``). The operator claims corp.example for Corp; Corp's connection is
registered at the provider (Dynamic Client Registration) and here with the command line (``orgs connect``, the
operator's side of what an owner does in the console); the relying party is the browser tests' own
(tests/support/browser_rp.py), a first-party client of Corp. Our pages on the way are checked with axe-core.
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

from tests.support.browser_rp import RelyingParty, relying_party
from tests.support.chromium import browser, check_page, context, on_page, page, playwright
from tests.support.identity_fixtures import PASSWORD
from tests.support.live import LiveService, live_service
from tests.support.upstream import Upstream, upstream_provider

__all__ = ["browser", "context", "page", "playwright"]  # the Chromium fixtures of tests/support/chromium.py


@dataclass(frozen=True)
class Federation:
    service: LiveService
    upstream: Upstream
    rp: RelyingParty
    corp: dict[str, Any]
    client_secret: str

    @property
    def issuer(self) -> str:
        return self.service.url


@pytest.fixture(scope="module")
def federation(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Federation]:
    workdir = tmp_path_factory.mktemp("federation")
    with live_service(workdir) as service, upstream_provider(workdir) as upstream, relying_party() as rp:
        corp = service.cli_json("orgs", "create", "--name", "Corp")
        service.cli("orgs", "claim-domain", corp["id"], "corp.example")
        ours = upstream.register(
            redirect_uri=f"{service.url}/federation/{corp['id']}/callback",
            post_logout_redirect_uri=f"{service.url}/federation/signed-out",
            backchannel_logout_uri=f"{service.url}/federation/{corp['id']}/backchannel-logout",
        )
        service.cli(
            "orgs", "connect", corp["id"], "--issuer", upstream.issuer, "--client-id", ours["client_id"],
            "--client-secret-stdin", stdin=ours["client_secret"] + "\n",
        )  # fmt: skip
        client = service.cli_json(
            "clients", "create", "--name", "Corp Menus", "--org", corp["id"], "--first-party",
            "--redirect-uri", rp.redirect_uri, "--post-logout-redirect-uri", rp.post_logout_redirect_uri,
            "--auth-method", "client_secret_basic", "--grant", "authorization_code",
            "--scope", "openid", "--scope", "profile", "--scope", "email",
        )  # fmt: skip
        rp.issuer, rp.client_id = service.url, client["client_id"]
        yield Federation(service, upstream, rp, corp, client["client_secret"])


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
    claims = signed_in_through_provider(page, f, "ana@corp.example", screenshot="federation-email-first")
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
    claims = signed_in_through_provider(page, f, "bo@corp.example")
    assert claims["sub"] == bo["id"] and claims["amr"] == ["fed"]
    assert {org["id"] for org in member_of(f, "bo@corp.example")["orgs"]} == {elsewhere["id"], f.corp["id"]}


def test_an_unverified_upstream_email_is_refused_linking(page: Page, federation: Federation) -> None:
    f = federation
    cy = f.service.create_user("cy@corp.example", "Cy Chen", PASSWORD, f.corp["id"])
    f.service.cli("users", "verify-email", "cy@corp.example")
    f.upstream.set_account("cy@corp.example", email="cy@corp.example", email_verified=False, name="Cy")
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
        start(page, f)
        give_email(page, f, "dee@example.com")  # not a claimed domain: the password form
        on_page(page, f.issuer, "/sign-in")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        # The right password signs Dee in nowhere: the browser goes on to Corp's provider.
        page.wait_for_url(lambda url: url.startswith(f.upstream.issuer + "/interaction/"))
        assert not any(cookie["name"] == "rm_session" for cookie in page.context.cookies(f.issuer))
    finally:
        f.service.cli(
            "orgs", "connect", f.corp["id"], "--issuer", f.upstream.issuer,
            "--client-id", upstream_client["client_id"], "--sso-optional",
        )  # fmt: skip


def test_the_providers_back_channel_logout_ends_the_session_here(page: Page, federation: Federation) -> None:
    f = federation
    signed_in_through_provider(page, f, "eve@corp.example")
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


def test_an_owner_tries_the_connection_and_sees_the_claims_received(page: Page, federation: Federation) -> None:
    f = federation
    owner = f.service.cli_json(
        "users", "create", "--email", "owen@example.com", "--name", "Owen Owner", "--password-stdin",
        "--org", f.corp["id"], "--role", "owner", stdin=PASSWORD + "\n",
    )  # fmt: skip
    start(page, f)
    give_email(page, f, owner["email"])
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    on_page(page, f.rp.url, "/callback")
    page.goto(f"{f.issuer}/federation/{f.corp['id']}/test")
    sign_in_upstream(page, f, "tess@corp.example")
    page.wait_for_url(lambda url: url.startswith(f"{f.issuer}/federation/{f.corp['id']}/callback"))
    assert page.get_by_role("heading", level=1).inner_text() == "Your organization's sign-in works"
    assert "tess@corp.example" in page.get_by_role("table").inner_text()
    check_page(page, "federation-test")
    assert not any(user["email"] == "tess@corp.example" for user in f.service.cli_json("users", "list"))
