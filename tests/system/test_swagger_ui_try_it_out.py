"""Swagger UI's "Try it out" with what the documents pre-fill gives a meaningful answer, in Debian's Chromium.

A user opens the live Swagger UI, authorizes, and on each operation clicks Try it out → Execute without typing
anything else: Swagger UI sends every parameter's `example` at once, so the examples must work together (the menus
filters are one set that finds two Kerala dishes). Each menus operation must answer 200 with data; discovery
answers its metadata; the token operation, authorized with the Basic credentials of the application client that
``serve --demo`` prints, pre-fills a client_credentials request (no client secret in the form beside Basic) and
gets a token.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Locator, Page

from tests.support.chromium import SCREENSHOTS, browser, context, page, playwright
from tests.support.live import LiveService, live_service

__all__ = ["browser", "context", "page", "playwright"]  # the Chromium fixtures of tests/support/chromium.py

MENUS_OPERATIONS = [
    "menus.list_regions",
    "menus.get_region",
    "menus.list_dishes",
    "menus.get_dish",
    "menus.random_dishes",
]


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    with live_service(tmp_path_factory.mktemp("swagger-ui"), args=("--demo",)) as service:
        yield service


def demo_application_client(service: LiveService) -> tuple[str, str]:
    """The application client and secret ``serve --demo`` printed (in the server's log), as a new user reads them."""
    printed = (service.workdir / "server.log").read_text(encoding="utf-8")
    section = printed.split("Call the directory as an application", 1)[1]
    found = re.search(r"Client:\s+(cli_\w+).*?Secret:\s+(cs_[\w-]+)", section, re.DOTALL)
    assert found, printed
    return found.group(1), found.group(2)


def authorize(page: Page, scheme: str, *values: str) -> None:
    """Swagger UI's Authorize dialog: fill the one security scheme ``scheme`` and close."""
    page.click("button.authorize")
    container = page.locator(".modal-ux .auth-container").filter(has_text=scheme)
    for field, value in zip(container.locator("input").all(), values, strict=True):
        field.fill(value)
    container.locator("button.authorize").click()
    page.click(".modal-ux button.btn-done")


def try_it_out(page: Page, operation_id: str) -> tuple[int, str, Any]:
    """Open the operation, Try it out, Execute as pre-filled: (status, request URL, parsed answer)."""
    # Swagger UI's block ids escape the operationId's dots with a backslash: operations-<tag>-menus\\.get_dish.
    escaped = operation_id.replace(".", "\\\\.")
    operation: Locator = page.locator(f"[id$='-{escaped}']")
    operation.locator(".opblock-summary").first.click()
    operation.locator("button.try-out__btn").click()
    operation.locator("button.execute").click()
    status = operation.locator(".live-responses-table .response .response-col_status").first
    status.wait_for()
    url = operation.locator(".request-url pre").first.inner_text()
    body = operation.locator(".live-responses-table .response-col_description pre").first.inner_text()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    operation.screenshot(path=SCREENSHOTS / f"swagger-ui-{operation_id}.png")
    return int(status.inner_text().strip()), url, json.loads(body)


def test_every_menus_operation_answers_200_with_data_as_pre_filled(page: Page, service: LiveService) -> None:
    page.goto(f"{service.url}/v1/ui/")
    page.wait_for_selector(".opblock")
    authorize(page, "apiKey", service.api_key("swagger-ui"))
    answers = {operation_id: try_it_out(page, operation_id) for operation_id in MENUS_OPERATIONS}
    for operation_id, (status, url, body) in answers.items():
        print(f"{operation_id}: {status} {url} → {json.dumps(body)[:100]}")  # shown with pytest -s
        assert status == 200 and body["data"], (operation_id, status, url, body)
    _, url, dishes = answers["menus.list_dishes"]
    assert "q=coconut" in url and "diet=pescatarian" in url
    assert {dish["slug"] for dish in dishes["data"]} == {"kerala-egg-roast", "karimeen-pollichathu"}
    assert answers["menus.random_dishes"][2]["total"] == 2
    assert answers["menus.get_region"][2]["data"]["slug"] == "kerala"


def test_discovery_and_the_token_operation_answer_as_pre_filled(page: Page, service: LiveService) -> None:
    client_id, secret = demo_application_client(service)
    page.goto(f"{service.url}/ui/")
    page.wait_for_selector(".opblock")
    status, _, discovery = try_it_out(page, "oidc.discovery")
    assert status == 200 and discovery["issuer"] == service.url and discovery["token_endpoint"]
    authorize(page, "clientSecretBasic", client_id, secret)
    status, _, token = try_it_out(page, "token.exchange")
    assert status == 200, token
    assert token["token_type"] == "Bearer" and token["scope"] == "members:read" and token["access_token"]
    assert base64.b64decode(token["access_token"].split(".")[1] + "==")
