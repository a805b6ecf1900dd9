"""The developer console in a real browser: Debian's Chromium driven by Playwright, against a live server.

A new user signs up from the console's "Create an account" link (a new organization), lands in the
console, creates a key, copies it, calls the menus API with it, reloads the page that showed it (which
shows it no more and creates no other key: POST/redirect/GET), sees its usage move after a flush,
revokes it (401 from then on) and signs out, which ends the provider's session too. Every console
page is checked with axe-core (``tests/system/test_browser.check_page``). Screenshots of the keys page, the
one-time key page and the usage chart are written to ``reports/console/``; ``CONSOLE_SCREENSHOTS``
names another folder (the ones in ``docs/`` were taken with ``CONSOLE_SCREENSHOTS=docs``).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
import requests
import sqlalchemy as sa
from playwright.sync_api import Browser, BrowserContext, Page, expect

from tests.support.chromium import ROOT, TIMEOUT_MS, browser, check_page, on_page, playwright
from tests.support.identity_fixtures import PASSWORD
from tests.support.live import LiveService, live_service

__all__ = ["browser", "playwright"]  # the Chromium fixtures of tests/support/chromium.py

SCREENSHOTS = ROOT / os.environ.get("CONSOLE_SCREENSHOTS", "reports/console")


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    with live_service(tmp_path_factory.mktemp("console"), {"MENUS_USAGE_FLUSH_INTERVAL": "1"}) as live:
        yield live


@pytest.fixture
def context(browser: Browser, service: LiveService) -> Iterator[BrowserContext]:
    """A fresh profile that may use the clipboard; it bypasses the pages' CSP, which would block axe-core."""
    context = browser.new_context(bypass_csp=True, viewport={"width": 1100, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=service.url)
    context.set_default_timeout(TIMEOUT_MS)
    yield context
    context.close()


def menus(service: LiveService, key: str) -> int:
    answer = requests.get(
        f"{service.url}/v1/menus/dishes?diet=vegan", headers={"Authorization": f"Bearer {key}"}, timeout=10
    )
    return answer.status_code


def today_count(page: Page, key_name: str) -> int:
    row = page.get_by_role("row").filter(has_text=key_name)
    return int(row.locator("td.number").first.inner_text())


def shoot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / f"{name}.png", full_page=True)


def seed_history(service: LiveService, org_name: str) -> None:
    """A second key with 29 days of earlier traffic, so the chart in the screenshots has a history to show."""
    org = next(o for o in service.cli_json("orgs", "list") if o["name"] == org_name)
    service.cli("api-keys", "create", "--name", "nightly import", "--org", org["id"])
    key_id = next(k["id"] for k in service.cli_json("api-keys", "list") if k["name"] == "nightly import")
    engine = sa.create_engine(
        service.env.get("MENUS_DATABASE_URL") or f"sqlite:///{service.workdir / 'var' / 'regional-menus.sqlite3'}"
    )
    today = datetime.now(UTC).date()
    rows = [
        {"k": key_id, "d": today - timedelta(days=n), "c": c, "r": r}
        for n in range(1, 30)
        for c, r in ((2, 300 + 40 * ((n * 7) % 11)), (4, 5 + (n * 3) % 17), (5, 1 if n % 9 == 0 else 0))
        if r
    ]
    with engine.begin() as connection:
        connection.execute(
            sa.text("INSERT INTO api_key_usage (key_id, day, status_class, requests) VALUES (:k, :d, :c, :r)"), rows
        )
    engine.dispose()


def test_a_new_user_signs_up_creates_copies_uses_watches_revokes_a_key_and_signs_out(
    context: BrowserContext, service: LiveService
) -> None:
    page = context.new_page()
    console = f"{service.url}/console/"
    page.goto(console)
    check_page(page, "console-welcome")
    page.get_by_role("link", name="Create an account").click()

    on_page(page, service.url, "/sign-up")
    page.get_by_label("Your name").fill("Rosa Díaz")
    page.get_by_label("Email").fill("rosa@example.com")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_label("Organization name").fill("Rosa's Recipes")
    page.get_by_role("button", name="Create account").click()

    on_page(page, service.url, "/console/")  # first-party: no consent page
    assert page.get_by_role("heading", name="Getting started").is_visible()
    assert page.get_by_role("link", name="menus API (Swagger UI)").get_attribute("href") == f"{service.url}/v1/ui/"
    check_page(page, "console-getting-started")

    page.get_by_label("New key name").fill("recipe app")
    page.get_by_role("button", name="Create key").click()
    on_page(page, service.url, "/console/keys/new")  # POST/redirect/GET
    field = page.get_by_label("API key “recipe app”")
    key = field.input_value()
    assert re.fullmatch(r"rmk_[A-Za-z0-9_-]{43}", key) and field.get_attribute("readonly") is not None
    assert key in page.get_by_label("A ready curl command").input_value()
    page.get_by_role("button", name="Copy key").click()
    expect(page.get_by_role("button", name="Copied")).to_be_visible()
    assert page.evaluate("navigator.clipboard.readText()") == key
    check_page(page, "console-new-key")
    shoot(page, "console-new-key")

    assert [menus(service, key) for _ in range(3)] == [200, 200, 200]
    page.reload()  # shown once: a reload neither shows the key again nor creates another
    on_page(page, service.url, "/console/keys/new")
    assert page.get_by_role("heading", level=1).inner_text() == "This key is no longer shown"
    assert key not in page.content()
    check_page(page, "console-key-gone")
    page.get_by_role("link", name="Back to the keys").click()
    on_page(page, service.url, "/console/")
    assert page.get_by_role("row").filter(has_text="recipe app").count() == 1
    page.go_back()
    assert key not in page.content()  # nor does the back button
    page.go_forward()
    on_page(page, service.url, "/console/")
    on_page(page, service.url, "/console/")
    assert key not in page.content()  # never shown again
    deadline = time.monotonic() + 15
    while today_count(page, "recipe app") < 3 and time.monotonic() < deadline:
        time.sleep(0.5)  # flushed every second (MENUS_USAGE_FLUSH_INTERVAL=1)
        page.reload()
    assert today_count(page, "recipe app") == 3
    check_page(page, "console-keys")

    seed_history(service, "Rosa's Recipes")
    page.reload()
    shoot(page, "console-keys")
    page.locator("figure").screenshot(path=SCREENSHOTS / "console-usage-chart.png")

    page.get_by_role("link", name="Revoke recipe app").click()
    assert page.get_by_role("heading", level=1).inner_text() == "Revoke this key?"
    check_page(page, "console-revoke")
    page.get_by_role("button", name="Revoke key").click()
    on_page(page, service.url, "/console/")
    assert page.get_by_role("row").filter(has_text="recipe app").locator("td").nth(6).inner_text() == "revoked"
    assert menus(service, key) == 401

    page.get_by_role("button", name="Sign out").click()
    on_page(page, service.url, "/console/")
    assert page.get_by_role("link", name="Create an account").is_visible()
    page.get_by_role("link", name="Sign in", exact=True).click()
    on_page(page, service.url, "/sign-in")  # the provider's session ended too: credentials are asked again
