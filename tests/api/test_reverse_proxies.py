"""Forwarded headers (service/web/forwarded.py): believed only from ``MENUS_TRUSTED_PROXIES``.

From any other peer, ``X-Forwarded-For`` changes nothing: rotating it does not escape the sign-in throttle's
per-network bound. Behind a trusted proxy, the client is the right-most address that is not a trusted proxy.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from identity.accounts.users import User
from service.settings import Settings
from tests.support.apps import make_app
from tests.support.defaults import ADDRESS_LIMIT
from tests.support.identity_fixtures import Registered
from tests.support.identity_pages import assert_error_page, authorize, sign_in, to_page

WRONG = "wrong password here"
PROXY = "10.0.0.2"
_spoofed = (f"198.18.{n // 250}.{n % 250 + 1}" for n in itertools.count())


@pytest.fixture
def behind_proxy(settings: Settings, engine: Any, catalog: Any, clock: Any) -> Iterator[TestClient]:
    """The service with MENUS_TRUSTED_PROXIES=10.0.0.0/24, seen from the proxy at 10.0.0.2."""
    app = make_app(
        settings.with_changes(trusted_proxies=("10.0.0.0/24",)),
        catalog=catalog,
        clock=clock,
    )
    with TestClient(app, follow_redirects=False, client=(PROXY, 40000)) as browser:
        yield browser


def guess(browser: TestClient, web: Registered, n: int, forwarded_for: str) -> Any:
    browser.headers["X-Forwarded-For"] = forwarded_for
    return sign_in(browser, to_page(authorize(browser, web.id), "sign-in"), f"nobody{n}@example.com", WRONG)


def test_rotating_forwarded_addresses_from_an_untrusted_peer_do_not_escape_the_network_bound(
    app: Any, web: Registered, user: User
) -> None:
    with TestClient(app, follow_redirects=False, client=("203.0.113.50", 40000)) as attacker:
        for n in range(ADDRESS_LIMIT):
            assert "Invalid email or password" in guess(attacker, web, n, next(_spoofed)).text
        assert_error_page(guess(attacker, web, ADDRESS_LIMIT, next(_spoofed)), status=429)


def test_forwarded_for_from_loopback_is_ignored_unless_loopback_is_trusted(
    app: Any, web: Registered, user: User
) -> None:
    with TestClient(app, follow_redirects=False, client=("127.0.0.1", 40000)) as local:
        for n in range(ADDRESS_LIMIT):
            guess(local, web, n, next(_spoofed))
        assert_error_page(guess(local, web, ADDRESS_LIMIT, next(_spoofed)), status=429)


def test_behind_a_trusted_proxy_the_right_most_untrusted_address_is_the_client(
    behind_proxy: TestClient, web: Registered, user: User
) -> None:
    for n in range(ADDRESS_LIMIT):  # the client rotates what it writes; the proxies append what they saw
        guess(behind_proxy, web, n, f"{next(_spoofed)}, 203.0.113.60, 10.0.0.7")
    assert_error_page(guess(behind_proxy, web, ADDRESS_LIMIT, f"{next(_spoofed)}, 203.0.113.60"), status=429)
    other = guess(behind_proxy, web, ADDRESS_LIMIT + 1, "203.0.113.60, 192.0.2.80, 10.0.0.7")
    assert "Invalid email or password" in other.text  # another client behind the same proxy: its own bound


@pytest.mark.parametrize("junk", ["foo", "010.9.4.1", "unknown", "203.0.113.70:443"])
def test_an_unparsable_forwarded_address_counts_as_the_proxys_own(
    behind_proxy: TestClient, web: Registered, user: User, junk: str
) -> None:
    for n in range(ADDRESS_LIMIT):
        guess(behind_proxy, web, n, f"{next(_spoofed)}, {junk}")
    assert_error_page(guess(behind_proxy, web, ADDRESS_LIMIT, f"{next(_spoofed)}, {junk}"), status=429)
    assert_error_page(guess(behind_proxy, web, ADDRESS_LIMIT + 1, junk), status=429)  # all counted as 10.0.0.2
