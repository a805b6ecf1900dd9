"""Forwarded headers at a live ``regional-menus serve``: a local client cannot pick its address.

uvicorn trusts ``X-Forwarded-For`` from 127.0.0.1 by default; the service turns that off and believes it only
from ``MENUS_TRUSTED_PROXIES`` (service/web/forwarded.py). These tests run on loopback, as a local client or a
proxy on the same host passing headers through would.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode, urljoin

import pytest
import requests

from tests.support.defaults import ADDRESS_LIMIT
from tests.support.form_browser import TIMEOUT, Browser, Page
from tests.support.identity_fixtures import PASSWORD
from tests.support.live import REDIRECT_URI, LiveService, live_service
from tests.support.pkce_pairs import pkce_pair

_spoofed = (f"198.18.{n // 250}.{n % 250 + 1}" for n in itertools.count())


def sign_in_client(service: LiveService) -> str:
    acme, _, _, _ = service.two_organizations(PASSWORD)
    client = service.cli_json(
        "clients", "create", "--name", "Menu Planner", "--org", acme["id"], "--redirect-uri", REDIRECT_URI,
        "--auth-method", "client_secret_basic", "--first-party",
    )  # fmt: skip
    return str(client["client_id"])


@pytest.fixture(scope="module")
def untrusting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveService, str]]:
    with live_service(tmp_path_factory.mktemp("forwarded")) as service:
        yield service, sign_in_client(service)


@pytest.fixture(scope="module")
def behind_loopback_proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveService, str]]:
    env = {"MENUS_TRUSTED_PROXIES": "127.0.0.1"}
    with live_service(tmp_path_factory.mktemp("forwarded-trusted"), env) as service:
        yield service, sign_in_client(service)


def guess(service: LiveService, client_id: str, n: int, forwarded_for: str) -> requests.Response:
    """One wrong sign-in at a made-up email, sent with ``X-Forwarded-For: forwarded_for``."""
    query = {
        "response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT_URI, "scope": "openid",
        "state": "s", "code_challenge": pkce_pair()[1], "code_challenge_method": "S256",
    }  # fmt: skip
    browser = Browser(service.url)
    browser.http.headers["X-Forwarded-For"] = forwarded_for
    page = browser.go(f"{service.url}/oauth2/authorize?{urlencode(query)}")
    assert isinstance(page, Page)
    data: dict[str, Any] = {**page.form.fields, "email": f"nobody{n}@example.com", "password": "wrong password"}
    return browser.http.post(urljoin(page.url, page.form.action), data=data, allow_redirects=False, timeout=TIMEOUT)


def test_rotating_forwarded_addresses_from_loopback_meet_the_per_network_bound(
    untrusting: tuple[LiveService, str],
) -> None:
    service, client_id = untrusting
    for n in range(ADDRESS_LIMIT):
        assert guess(service, client_id, n, next(_spoofed)).status_code == 200  # the sign-in page again
    assert guess(service, client_id, ADDRESS_LIMIT, next(_spoofed)).status_code == 429


def test_a_trusted_proxys_forwarded_address_is_the_client(behind_loopback_proxy: tuple[LiveService, str]) -> None:
    service, client_id = behind_loopback_proxy
    for n in range(ADDRESS_LIMIT):
        guess(service, client_id, n, f"{next(_spoofed)}, 203.0.113.60")
    assert guess(service, client_id, ADDRESS_LIMIT, f"{next(_spoofed)}, 203.0.113.60").status_code == 429
    assert guess(service, client_id, ADDRESS_LIMIT + 1, "203.0.113.61").status_code == 200  # another client
