"""An organization runs itself, in Debian's Chromium, with mail read from a real SMTP server (aiosmtpd).

The owner signs up and invites a teammate; the invitation arrives by SMTP; the teammate follows its link and signs
up into the organization (no organization is made for them); the owner makes them an admin; the admin registers an
application; the application signs the teammate in (code + PKCE); the owner rotates its secret; the old secret works
within its grace and fails after it (the service's clock moved, never slept); the owner removes the teammate, whose
tokens stop at once. The service runs in this process (``tests/support/in_process.py``) so that its clock can move.
Every console page reached is checked with axe-core. The time of each of the issue's eight Done-when steps is
printed (``pytest -s``) for the closing note.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from time import perf_counter

import pytest
import requests
from playwright.sync_api import Browser, BrowserContext, Page, expect

from tests.support.browser_rp import RelyingParty, relying_party
from tests.support.chromium import TIMEOUT_MS, browser, check_page, playwright
from tests.support.identity_fixtures import PASSWORD
from tests.support.in_process import InProcess, in_process_service
from tests.support.smtp import SmtpServer, smtp_server

__all__ = ["browser", "playwright"]  # the Chromium fixtures of tests/support/chromium.py

OWNER, TEAMMATE = "olga@example.com", "tom@example.com"
LINK = re.compile(r"(https?://\S+/console/invitation\?token=[A-Za-z0-9_-]+)")


@pytest.fixture(scope="module")
def smtp() -> Iterator[SmtpServer]:
    with smtp_server() as server:
        yield server


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, smtp: SmtpServer) -> Iterator[InProcess]:
    with in_process_service(tmp_path_factory.mktemp("journey"), smtp_url=smtp.url, mail_poll_interval=0.2) as service:
        yield service


class StepTimes:
    """The wall-clock time of each step of the journey, printed as each ends (visible with ``pytest -s``)."""

    def __init__(self) -> None:
        self.taken: list[tuple[str, float]] = []
        self._current: tuple[str, float] | None = None

    def step(self, name: str) -> None:
        """``name`` begins; the step before it ends."""
        self.end()
        self._current = (name, perf_counter())

    def end(self) -> None:
        if self._current is not None:
            name, began = self._current
            self.taken.append((name, perf_counter() - began))
            print(f"journey step {len(self.taken)}: {name}: {self.taken[-1][1]:.2f} s")
            self._current = None


def new_context(browser: Browser) -> BrowserContext:
    context = browser.new_context(bypass_csp=True, viewport={"width": 1100, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    return context


def invitation_link(smtp: SmtpServer, recipient: str) -> str:
    for _ in range(3):
        for message in reversed(smtp.inbox.wait_for(len(smtp.inbox.messages) or 1)):
            if message["To"] == recipient and "invited" in str(message["Subject"]):
                body = message.get_body(("plain",))
                assert body is not None
                found = LINK.search(body.get_content())
                assert found, body.get_content()
                return found.group(1)
        smtp.inbox.wait_for(len(smtp.inbox.messages) + 1)
    raise AssertionError(f"no invitation reached {recipient}")


def sign_up(page: Page, name: str, email: str, organization: str | None) -> None:
    page.get_by_label("Your name").fill(name)
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    if organization is not None:
        page.get_by_label("Organization name").fill(organization)
    page.get_by_role("button", name="Create account").click()


def token(service: InProcess, client_id: str, secret: str, **form: str) -> requests.Response:
    return requests.post(f"{service.url}/oauth2/token", data=form, auth=(client_id, secret), timeout=10)


def userinfo(service: InProcess, access_token: str) -> int:
    answer = requests.get(
        f"{service.url}/oauth2/userinfo", headers={"Authorization": f"Bearer {access_token}"}, timeout=10
    )
    return answer.status_code


def test_an_organization_runs_itself(browser: Browser, service: InProcess, smtp: SmtpServer, tmp_path: Path) -> None:
    owner_context, teammate_context = new_context(browser), new_context(browser)
    owner, teammate = owner_context.new_page(), teammate_context.new_page()
    console = f"{service.url}/console/"
    steps = StepTimes()

    # The owner signs up, and invites a teammate by mail
    steps.step("the owner signs up and invites a teammate by mail")
    owner.goto(console)
    owner.get_by_role("link", name="Create an account").click()
    sign_up(owner, "Olga Owner", OWNER, "Olive Grove")
    expect(owner.get_by_text("Olive Grove", exact=True)).to_be_visible()
    owner.get_by_role("link", name="Members").click()
    check_page(owner, "journey-members")
    owner.get_by_label("Email address").fill(TEAMMATE)
    owner.get_by_label("Role", exact=True).select_option("member")
    owner.get_by_role("button", name="Send invitation").click()
    expect(owner.get_by_role("cell", name=TEAMMATE, exact=True)).to_be_visible()

    # The mail arrives through SMTP; the teammate follows its link and signs up into the organization
    steps.step("the invitation arrives by SMTP; the teammate signs up into the organization")
    link = invitation_link(smtp, TEAMMATE)
    assert link.startswith(console + "invitation?token=")
    teammate.goto(link)
    expect(teammate.get_by_text("You are invited to join")).to_be_visible()
    check_page(teammate, "journey-invitation")
    teammate.get_by_role("link", name="Create an account").click()
    expect(teammate.get_by_text("no new organization is made for you")).to_be_visible()
    sign_up(teammate, "Tom Teammate", TEAMMATE, None)
    expect(teammate.locator("nav[aria-label=Account]")).to_contain_text("Olive Grove")
    expect(teammate.locator("nav[aria-label=Account]")).to_contain_text("(member)")

    # The owner makes them an admin
    steps.step("the owner makes them an admin")
    owner.reload()
    owner.get_by_label("Role of Tom Teammate").select_option("admin")
    owner.get_by_role("button", name="Change the role of Tom Teammate").click()
    expect(owner.get_by_label("Role of Tom Teammate")).to_have_value("admin")

    with relying_party() as rp:
        rp.issuer = service.url
        # The admin registers an application
        steps.step("the admin registers an application (its secret shown once)")
        teammate.goto(console + "apps")
        expect(teammate.locator("nav[aria-label=Account]")).to_contain_text("(admin)")
        check_page(teammate, "journey-apps")
        teammate.get_by_label("Name", exact=True).fill("Grove Planner")
        teammate.get_by_label("Redirect URIs", exact=True).fill(rp.redirect_uri)
        teammate.get_by_label("Sign-out redirect URIs").fill(rp.post_logout_redirect_uri)
        teammate.get_by_role("button", name="Register application").click()
        secret = teammate.locator("#secret").input_value()
        client_id = teammate.locator("dd code").first.inner_text()
        assert secret.startswith("cs_") and client_id.startswith("cli_")
        rp.client_id = client_id
        teammate.reload()  # shown once
        expect(teammate.get_by_text("This secret is no longer shown")).to_be_visible()

        # The application signs the teammate in: code flow with PKCE, the consent page, the code redeemed
        steps.step("the application signs the teammate in (code + PKCE)")
        tokens = sign_in_with(teammate, rp, service, client_id, secret)
        assert userinfo(service, tokens["access_token"]) == 200

        # The owner rotates the secret: the old one works within the grace, and not after
        steps.step("the owner rotates the secret: the old one works in its grace, not after")
        owner.goto(console + "apps")
        owner.get_by_role("link", name="Grove Planner").click()
        owner.get_by_role("button", name="Rotate the secret").click()
        new_secret = owner.locator("#secret").input_value()
        assert new_secret != secret
        refreshed = token(service, client_id, secret, grant_type="refresh_token", refresh_token=tokens["refresh_token"])
        assert refreshed.status_code == 200, refreshed.text
        service.clock.advance(service.settings.client_secret_grace + 60)
        refused = token(
            service, client_id, secret, grant_type="refresh_token", refresh_token=refreshed.json()["refresh_token"]
        )
        assert refused.status_code == 401 and refused.json()["error"] == "invalid_client"
        fresh = token(
            service, client_id, new_secret, grant_type="refresh_token", refresh_token=refreshed.json()["refresh_token"]
        )
        assert fresh.status_code == 200, fresh.text
        assert userinfo(service, fresh.json()["access_token"]) == 200

        # The owner removes the teammate: their tokens stop at once
        steps.step("the owner removes the teammate: their tokens stop at once")
        owner.goto(console + "members")
        owner.get_by_role("link", name="Remove Tom Teammate").click()
        check_page(owner, "journey-remove")
        owner.get_by_role("button", name="Remove member").click()
        expect(owner.get_by_role("cell", name=re.compile("Tom Teammate"))).to_have_count(0)
        assert userinfo(service, fresh.json()["access_token"]) == 401
        gone = token(
            service, client_id, new_secret, grant_type="refresh_token", refresh_token=fresh.json()["refresh_token"]
        )
        assert gone.status_code == 400 and gone.json()["error"] == "invalid_grant"

    # The trail says who did what
    steps.step("the trail says who did what")
    owner.goto(console + "audit")
    check_page(owner, "journey-audit")
    for kind in ("member removed", "client secret rotated", "client created", "member role changed", "member invited"):
        expect(owner.get_by_role("cell", name=kind, exact=True).first).to_be_visible()
    steps.end()
    owner_context.close()
    teammate_context.close()


def sign_in_with(page: Page, rp: RelyingParty, service: InProcess, client_id: str, secret: str) -> dict[str, str]:
    page.goto(rp.authorization_request(None, scope="openid profile email offline_access").url)
    page.get_by_role("button", name="Allow").click()
    page.wait_for_url(lambda url: url.startswith(rp.redirect_uri))
    callback = rp.callbacks[-1]
    request = rp.requests[callback["state"]]
    answer = token(
        service,
        client_id,
        secret,
        grant_type="authorization_code",
        code=callback["code"],
        redirect_uri=rp.redirect_uri,
        code_verifier=request.code_verifier,
    )
    assert answer.status_code == 200, answer.text
    tokens: dict[str, str] = answer.json()
    return tokens
