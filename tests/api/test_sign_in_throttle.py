"""Sign-in throttling (identity/accounts/throttle.py): slowed guessing, no lock-out by anyone, counting by network.

Through the pages, each browser has an address of its own (Starlette's TestClient ``client``), as
attackers and account owners on different networks would. The counters live in the state database
whatever the rate limit's storage: nodes with and without Redis (a database of the test's own:
tests/support/redis_db.py) share one bound, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any
from urllib.parse import unquote

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from data.catalog import Catalog
from identity.accounts.device_cookies import DEVICE_COOKIE
from identity.accounts.organizations import OrganizationStore
from identity.accounts.passwords import PasswordHashing
from identity.accounts.throttle import SignInThrottle, SqlCounters, account_key, network
from identity.accounts.users import User, UserStore
from identity.common.errors import Throttled
from identity.common.tables import sign_in_failures
from service.database.db import make_engine
from service.database.schema import upgrade
from service.settings import Settings
from tests.support.apps import make_app
from tests.support.clocks import MovableClock
from tests.support.defaults import ACCOUNT_LIMIT, ADDRESS_LIMIT, POOL, SIGN_IN_WINDOW, THROTTLE
from tests.support.identity_fixtures import EMAIL, PASSWORD, Registered, register
from tests.support.identity_pages import SIGN_UP, assert_error_page, authorize, code_of, sign_in, submit, to_page
from tests.support.live import free_port
from tests.support.passwords import FAST_HASHING
from tests.support.throttling import assert_network_bounded

WRONG = "wrong password here"
_hosts = itertools.count(1)


@pytest.fixture
def on_network(app: Any) -> Iterator[Any]:
    """``on_network(address)``: a browser whose requests come from ``address`` (a fresh one when omitted)."""
    opened: list[TestClient] = []

    def browser(address: str | None = None) -> TestClient:
        n = next(_hosts)
        client = TestClient(app, follow_redirects=False, client=(address or f"198.51.{n // 250}.{n % 250 + 1}", 40000))
        opened.append(client.__enter__())
        return client

    yield browser
    for client in opened:
        client.__exit__(None, None, None)


def attempt_sign_in(browser: TestClient, web: Registered, email: str = EMAIL, password: str = PASSWORD) -> Any:
    return sign_in(browser, to_page(authorize(browser, web.id), "sign-in"), email, password)


def account_failures(engine: Engine, email: str) -> int:
    with engine.connect() as connection:
        found = connection.scalar(
            sa.select(sign_in_failures.c.failures).where(sign_in_failures.c.key == account_key(email))
        )
    return int(found or 0)


# Account lock-out by anyone


def test_wrong_passwords_from_other_networks_do_not_lock_the_owner_out(
    on_network: Any, web: Registered, user: User
) -> None:
    attacker = on_network("203.0.113.7")
    for _ in range(ACCOUNT_LIMIT):
        assert "Invalid email or password" in attempt_sign_in(attacker, web, password=WRONG).text
    assert_error_page(attempt_sign_in(attacker, web, password=WRONG), status=429)
    assert_error_page(attempt_sign_in(attacker, web), status=429)  # the right password from there: refused too
    owner = on_network("192.0.2.10")
    code_of(attempt_sign_in(owner, web))  # the owner's network has no failures: signed in


def test_a_guarded_account_lets_each_fresh_network_try_once(on_network: Any, web: Registered, user: User) -> None:
    for _ in range(ACCOUNT_LIMIT):
        attempt_sign_in(on_network(), web, password=WRONG)  # five networks, one failure each
    fresh = on_network()
    assert "Invalid email or password" in attempt_sign_in(fresh, web, password=WRONG).text
    assert_error_page(attempt_sign_in(fresh, web, password=WRONG), status=429)


def test_an_address_over_its_limit_is_refused_before_the_account_is_charged(
    on_network: Any, web: Registered, user: User, engine: Engine
) -> None:
    attacker = on_network("203.0.113.8")
    for n in range(ADDRESS_LIMIT):
        attempt_sign_in(attacker, web, f"nobody{n}@example.com", WRONG)
    for _ in range(ACCOUNT_LIMIT + 2):
        assert_error_page(attempt_sign_in(attacker, web, password=WRONG), status=429)
    assert account_failures(engine, EMAIL) == 0
    code_of(attempt_sign_in(on_network("192.0.2.11"), web))


def test_sign_ups_with_an_existing_email_never_charge_its_account(
    on_network: Any, web: Registered, user: User, engine: Engine
) -> None:
    prober = on_network("203.0.113.9")
    for _ in range(ACCOUNT_LIMIT + 1):
        response = submit(
            prober, to_page(authorize(prober, web.id, prompt="create"), "sign-up"), {**SIGN_UP, "email": EMAIL}
        )
        assert "already exists" in response.text
    assert account_failures(engine, EMAIL) == 0
    code_of(attempt_sign_in(on_network("192.0.2.12"), web))


# Account enumeration


def test_sign_ups_count_against_their_network_like_sign_ins(on_network: Any, web: Registered, user: User) -> None:
    prober = on_network("203.0.113.10")
    for n in range(ADDRESS_LIMIT):
        attempt_sign_in(prober, web, f"probe{n}@example.com", WRONG)
    location = to_page(authorize(prober, web.id, prompt="create"), "sign-up")
    assert_error_page(submit(prober, location, {**SIGN_UP, "email": EMAIL}), status=429)


def test_known_and_unknown_emails_each_pay_one_argon2_verification(
    settings: Settings, engine: Engine, catalog: Catalog, clock: MovableClock, web: Registered, user: User
) -> None:
    verified: list[str] = []

    class Counting:
        def hash(self, password: str) -> str:
            return FAST_HASHING.hasher.hash(password)

        def verify(self, hash: str, password: str) -> bool:  # noqa: A002 (argon2-cffi's name)
            verified.append(hash)
            return FAST_HASHING.hasher.verify(hash, password)

    counting = PasswordHashing(Counting(), FAST_HASHING.dummy_hash)
    app = make_app(settings, catalog=catalog, clock=clock, password_hashing=counting)
    with (
        TestClient(app, follow_redirects=False, client=("198.51.100.1", 40000)) as first,
        TestClient(app, follow_redirects=False, client=("198.51.100.2", 40000)) as second,
    ):
        known = attempt_sign_in(first, web, EMAIL, WRONG)
        unknown = attempt_sign_in(second, web, "nobody@example.com", WRONG)
    assert len(verified) == 2 and verified[0] != verified[1]  # the account's hash, then the stand-in's
    assert verified[1] == FAST_HASHING.dummy_hash
    assert _without_tokens(known.text.replace(EMAIL, "E")) == _without_tokens(
        unknown.text.replace("nobody@example.com", "E")
    )


def _without_tokens(html: str) -> str:
    return re.sub(r'value="[\w-]{20,}"', 'value="…"', re.sub(r"interaction=int_[\w-]+", "interaction=…", html))


# Throttle keys by network


@pytest.mark.parametrize(
    ("address", "counted_as"),
    [
        ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
        ("2001:DB8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"),
        ("::ffff:192.0.2.1", "192.0.2.1"),
        ("192.0.2.1", "192.0.2.1"),
        ("fe80::1%eth0", "fe80::/64"),
        ("unknown", "unknown"),
    ],
)
def test_addresses_count_by_network(address: str, counted_as: str) -> None:
    assert network(address) == counted_as


def test_one_host_rotating_through_its_ipv6_64_meets_the_address_limit(engine: Engine) -> None:
    throttle = SignInThrottle(engine, THROTTLE)
    for n in range(ADDRESS_LIMIT):
        throttle.attempt(f"user{n}@example.com", f"2001:db8:5:6::{n + 1:x}")
    with pytest.raises(Throttled):
        throttle.attempt("new@example.com", "2001:db8:5:6:dead:beef:0:1")
    throttle.attempt("new@example.com", "2001:db8:5:7::1")  # the next /64 is another network


def test_ipv4_mapped_addresses_share_the_ipv4_address_counter(engine: Engine) -> None:
    throttle = SignInThrottle(engine, THROTTLE)
    for n in range(ADDRESS_LIMIT):
        throttle.attempt(f"user{n}@example.com", "192.0.2.50" if n % 2 else "::ffff:192.0.2.50")
    with pytest.raises(Throttled):
        throttle.attempt("new@example.com", "::ffff:c000:232")


# The rules


@pytest.fixture
def counters(engine: Engine) -> SqlCounters:
    return SqlCounters(engine, SIGN_IN_WINDOW)


def test_concurrent_guesses_from_one_network_are_counted_before_the_password_is_checked(counters: SqlCounters) -> None:
    throttle = SignInThrottle(counters, THROTTLE)

    def guess(_: int) -> bool:
        try:
            throttle.attempt("ana@example.com", "10.0.1.1")
        except Throttled:
            return False
        return True

    with ThreadPoolExecutor(max_workers=8) as pool:
        allowed = list(pool.map(guess, range(16)))
    assert allowed.count(True) == ACCOUNT_LIMIT


def test_guarded_account_refuses_networks_with_failures_and_admits_a_fresh_one_once(counters: SqlCounters) -> None:
    throttle = SignInThrottle(counters, THROTTLE)
    for n in range(ACCOUNT_LIMIT):
        throttle.attempt("Ana@example.com", f"10.0.0.{n}")
        throttle.failed("ANA@example.com")
    with pytest.raises(Throttled) as raised:
        throttle.attempt("ana@example.com", "10.0.0.0")
    assert 0 < raised.value.retry_after <= 15 * 60
    throttle.attempt("ana@example.com", "10.0.0.99")  # a network without attempts here
    throttle.succeeded("ana@example.com", "10.0.0.99")  # the owner: signed in
    throttle.attempt("ana@example.com", "10.0.0.99")  # and again later
    throttle.attempt("bo@example.com", "10.0.0.0")  # another account is not affected


def test_address_is_throttled_after_its_attempts_at_any_accounts(counters: SqlCounters) -> None:
    throttle = SignInThrottle(counters, THROTTLE)
    assert_network_bounded(throttle.attempt, "10.0.0.1")
    throttle.attempt("new@example.com", "10.0.0.2")


def test_success_gives_the_address_its_attempt_back(counters: SqlCounters) -> None:
    throttle = SignInThrottle(counters, replace(THROTTLE, account_limit=2, address_limit=2))
    throttle.attempt("ana@example.com", "10.0.0.1")
    throttle.attempt("ana@example.com", "10.0.0.1")
    throttle.succeeded("ana@example.com", "10.0.0.1")
    throttle.attempt("ana@example.com", "10.0.0.1")  # the address had 2 attempts, one given back
    with pytest.raises(Throttled):
        throttle.attempt("bo@example.com", "10.0.0.1")


def test_sign_up_attempts_count_against_the_network_only(counters: SqlCounters) -> None:
    throttle = SignInThrottle(counters, replace(THROTTLE, address_limit=3))
    for _ in range(3):
        throttle.signing_up("10.0.0.1")
    with pytest.raises(Throttled):
        throttle.signing_up("10.0.0.1")
    assert counters.peek(account_key("ana@example.com")) == (0, 0)


def test_throttle_window_ends(engine: Engine) -> None:
    """The account's failures throttle it (engaged, checked) until its window ends; then it starts afresh."""
    clock = MovableClock()
    throttle = SignInThrottle(SqlCounters(engine, SIGN_IN_WINDOW, clock), THROTTLE)
    for _ in range(ACCOUNT_LIMIT):
        throttle.attempt("ana@example.com", "10.0.0.1")
        throttle.failed("ana@example.com")
    with pytest.raises(Throttled):
        throttle.attempt("ana@example.com", "10.0.0.1")  # engaged within the window
    clock.advance(SIGN_IN_WINDOW.total_seconds() + 60)
    throttle.attempt("ana@example.com", "10.0.0.1")  # a new window starts at one attempt
    throttle.attempt("ana@example.com", "10.0.0.1")


# One bound for the deployment, whatever each node's storage


def two_nodes(database_url: str, catalog: Catalog, first: str, second: str) -> tuple[Any, Any, Registered]:
    """Two apps over one state database, each with its own rate-limit storage; and a web client there."""
    engine = make_engine(database_url, POOL)
    upgrade(engine)
    org = OrganizationStore(engine).create("Acme Foods")
    UserStore(engine, hashing=FAST_HASHING).create(EMAIL, "Ana Lima", PASSWORD, [(org.id, "owner")])
    web = register(engine, org)
    engine.dispose()
    nodes = [
        make_app(Settings(database_url=database_url, rate_limit_storage=s), catalog=catalog) for s in (first, second)
    ]
    return nodes[0], nodes[1], web


def attempts_until_refused(node: Any, web: Registered, address: str, most: int) -> int:
    """Wrong-password attempts at random emails from ``address`` before the first 429 (``most`` at most)."""
    with TestClient(node, follow_redirects=False, client=(address, 40000)) as browser:
        for n in range(most):
            response = attempt_sign_in(browser, web, f"random{n}@example.com", WRONG)
            if response.status_code == 429:
                return n
    return most


def test_a_node_with_redis_and_a_node_without_share_one_network_bound(
    either_database: str, catalog: Catalog, redis_url: str
) -> None:
    with_redis, without, web = two_nodes(either_database, catalog, redis_url, "memory://")
    half = ADDRESS_LIMIT // 2
    assert attempts_until_refused(with_redis, web, "203.0.113.20", half) == half
    assert attempts_until_refused(without, web, "203.0.113.20", ADDRESS_LIMIT) == ADDRESS_LIMIT - half


def test_attempts_counted_while_redis_was_unreachable_still_count_when_it_answers(
    either_database: str, catalog: Catalog, redis_url: str
) -> None:
    unreachable = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there: the outage
    during, after, web = two_nodes(either_database, catalog, unreachable, redis_url)
    assert attempts_until_refused(during, web, "203.0.113.21", ADDRESS_LIMIT - 3) == ADDRESS_LIMIT - 3
    assert attempts_until_refused(after, web, "203.0.113.21", ADDRESS_LIMIT) == 3


# Device cookies (OWASP): a browser that signed in as a user before skips the network's bound for that user


def test_a_known_browser_signs_in_on_a_network_an_attacker_exhausted(
    on_network: Any, web: Registered, user: User
) -> None:
    owner = on_network("203.0.113.30")
    code_of(attempt_sign_in(owner, web))  # signed in once: the browser now holds a device cookie
    attacker = on_network("203.0.113.30")  # the same NAT
    for n in range(ADDRESS_LIMIT):
        attempt_sign_in(attacker, web, f"random{n}@example.com", WRONG)
    assert_error_page(attempt_sign_in(attacker, web), status=429)  # the network is over its bound
    neighbour = on_network("203.0.113.30")
    assert_error_page(attempt_sign_in(neighbour, web), status=429)  # a browser without the cookie: refused
    code_of(sign_in(owner, to_page(authorize(owner, web.id, prompt="login"), "sign-in")))  # the owner's: signed in


def test_a_device_cookie_never_lifts_the_account_bound(on_network: Any, web: Registered, user: User) -> None:
    owner = on_network("203.0.113.31")
    code_of(attempt_sign_in(owner, web))
    for _ in range(ACCOUNT_LIMIT):
        location = to_page(authorize(owner, web.id, prompt="login"), "sign-in")
        assert "Invalid email or password" in sign_in(owner, location, password=WRONG).text
    assert_error_page(sign_in(owner, to_page(authorize(owner, web.id, prompt="login"), "sign-in")), status=429)


def test_a_device_cookie_counts_only_for_the_user_it_names(
    on_network: Any, engine: Engine, org: Any, web: Registered, user: User
) -> None:
    UserStore(engine, hashing=FAST_HASHING).create("bo@example.com", "Bo Berg", PASSWORD, [(org.id, "member")])
    browser = on_network("203.0.113.32")
    code_of(attempt_sign_in(browser, web))  # known for Ana, not for Bo
    for n in range(ADDRESS_LIMIT):
        attempt_sign_in(on_network("203.0.113.32"), web, f"random{n}@example.com", WRONG)
    location = to_page(authorize(browser, web.id, prompt="login"), "sign-in")
    assert_error_page(sign_in(browser, location, "bo@example.com"), status=429)


def test_the_device_cookie_is_http_only_same_site_lax_and_names_no_email(
    on_network: Any, web: Registered, user: User
) -> None:
    browser = on_network()
    response = attempt_sign_in(browser, web)
    (cookie,) = [c for c in response.headers.get_list("set-cookie") if c.startswith(DEVICE_COOKIE + "=")]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "expires=" in cookie.lower()
    value = unquote(cookie.split(";", 1)[0].partition("=")[2])  # random letters may spell "ana": look for the address
    assert EMAIL not in value and "@" not in value and user.id in value
