"""Debian's Chromium driven by Playwright (sync API), for the tests of pages in a real browser.

Playwright's own browser download is never used: a missing ``/usr/bin/chromium`` or axe-core fails the tests
(CI installs both), it does not skip them. Each page reached is checked with axe-core and saved as a screenshot.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Playwright, sync_playwright

from tests.support.live import ROOT

CHROMIUM = Path("/usr/bin/chromium")
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
SCREENSHOTS = ROOT / "reports" / "browser"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
TIMEOUT_MS = 10_000
BLOCKING_IMPACTS = ("serious", "critical")


# The browser


@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium package (apt-get install chromium)")
    if not AXE.exists():
        pytest.fail(f"{AXE} is missing: run `npm install` (or `npm ci`) at the project root for axe-core")
    browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
    yield browser
    browser.close()


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    """A fresh browser profile: no cookies. It bypasses the pages' CSP, which would block axe-core."""
    context = browser.new_context(bypass_csp=True, viewport={"width": 800, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    yield context
    context.close()


@pytest.fixture
def page(context: BrowserContext) -> Page:
    return context.new_page()


# Checks of each page


def on_page(page: Page, base: str, path: str) -> None:
    """Wait until the browser shows ``base`` + ``path`` (any query)."""
    page.wait_for_url(lambda url: url.split("?", 1)[0] == base + path)
    page.wait_for_load_state("load")


def check_page(page: Page, name: str) -> None:
    """Save a full-page screenshot, then fail on any serious or critical axe-core violation."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / f"{name}.png", full_page=True)
    page.add_script_tag(path=AXE)
    results: dict[str, Any] = page.evaluate(
        "async () => { const r = await axe.run(document, {resultTypes: ['violations']});"
        " return {violations: r.violations, passes: r.passes.length}; }"
    )
    assert results["passes"] > 0, f"axe-core checked nothing on the {name} page"
    blocking = [v for v in results["violations"] if v.get("impact") in BLOCKING_IMPACTS]
    report = "\n".join(
        f"- {v['id']} ({v['impact']}): {v['help']} <{v['helpUrl']}>\n"
        + "\n".join(f"    {node['target']}: {node['failureSummary']}" for node in v["nodes"])
        for v in blocking
    )
    assert not blocking, f"axe-core found serious or critical violations on the {name} page ({page.url}):\n{report}"
