"""Sign-in throttling: guessing is slowed per network and per account, and nobody can lock a user out.

Three counters, each over a window of a window (15 minutes by default) from its first count:

- the **network** (``address``): an IPv4 address, or an IPv6 /64 (one host owns a whole /64 and could
  rotate through it); an IPv4-mapped IPv6 address counts as its IPv4 address. Every sign-in and every
  sign-up attempt counts, before anything else; past ``address_limit`` the attempt is refused at once,
  before the account is looked at or charged. A successful sign-in takes its attempt back.
- the **pair** (account, network): the attempts of one network at one account. Past ``account_limit``
  that network is refused for that account; other networks are not.
- the **account**: failed sign-ins from every network. At ``account_limit`` failures the account is
  *guarded*: until the window ends, only a network that has made no attempt at it in the window is let
  through, once (a failure there counts it as tried). The right password from a network without
  failures still signs in: an attacker can slow the guessing at an account, never lock its owner out.

Counts happen *before* the password is checked, each in one atomic statement, so concurrent guesses
cannot all slip under a limit; the account is charged only once the password turned out wrong. An
unknown email has the same counters as a known one (keyed by its hash), so throttling says nothing
about which accounts exist. Sign-ups count against their network only: a sign-up with someone's
email never charges their account.

The email step of home-realm discovery (the sign-in page that asks for the address first) counts against its
network only, on a counter of its own (``discovering``): never per email.

Bound: an attacker gets at most ``account_limit`` guesses at an account from each network, one more
from each fresh network once the account is guarded, and ``address_limit`` attempts per network in
all, per window.

One source of truth: the counters live in the state database, always, on every node, whatever
``MENUS_RATE_LIMIT_STORAGE`` says and whether Redis answers. A node with Redis and a node without it
count in the same rows, and nothing counted during a Redis outage is forgotten when Redis returns (the
bound held 20 + 20 when each storage kept counts of its own). A sign-in already pays tens of
milliseconds of Argon2; the three indexed single-row statements it adds are not worth a second store.

A browser that signed in as a user before carries a device cookie (``identity.accounts.device_cookies``); its
attempts at that user's account skip the per-network count (never the account's or the pair's), so
an attacker behind the same address as the user (a NAT, an IPv6 /64) cannot lock them out.

Behind a reverse proxy the address is the client's only when the proxy's ``X-Forwarded-For`` is
trusted (``MENUS_TRUSTED_PROXIES``); otherwise every client shares the proxy's address and its counter.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from identity.common.clock import SYSTEM_CLOCK, Clock, utc
from identity.common.digests import sha256_hex
from identity.common.errors import Throttled
from identity.common.tables import sign_in_failures

IPV6_NETWORK = 64  # IPv6 addresses count by their /64: the smallest network one subscriber gets


def network(address: str) -> str:
    """The network an address counts for: IPv4 as is (also when IPv4-mapped), IPv6 by its /64."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])  # without an IPv6 zone (fe80::1%eth0)
    except ValueError:
        return address[:64]  # not an address ("unknown", a unix socket): counted as given
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, IPV6_NETWORK), strict=False))
    return str(ip)


def account_key(email: str) -> str:
    return "account:" + sha256_hex(email.strip().casefold())


def address_key(address: str) -> str:
    return "address:" + network(address)


def discovery_key(address: str) -> str:
    return "discovery:" + network(address)


def pair_key(email: str, address: str) -> str:
    return "pair:" + sha256_hex(email.strip().casefold() + "\n" + network(address))


class Counters(Protocol):
    """Counters that restart a window (``ThrottlePolicy.window``) after their first count."""

    def add(self, key: str) -> tuple[int, int]:
        """One more, atomically: the count and the whole seconds left in the window."""

    def peek(self, key: str) -> tuple[int, int]:
        """The count and seconds left, without counting (0, 0 when the window has passed)."""

    def take_back(self, key: str) -> None:
        """One less, never below zero."""

    def clear(self, key: str) -> None: ...


class SqlCounters:
    """Counters in the state database's ``sign_in_failures`` table: shared by every node."""

    def __init__(self, engine: Engine, window: timedelta, clock: Clock = SYSTEM_CLOCK) -> None:
        self._engine = engine
        self._window = window
        self._clock = clock

    def add(self, key: str) -> tuple[int, int]:
        at = self._clock.now()
        count, window_start = self._increment(key, at)
        return count, _seconds_left(window_start, self._window, at)

    def peek(self, key: str) -> tuple[int, int]:
        table, at = sign_in_failures, self._clock.now()
        with self._engine.connect() as connection:
            row = connection.execute(
                sa.select(table.c.failures, table.c.window_start).where(
                    table.c.key == key, table.c.window_start > at - self._window
                )
            ).first()
        return (int(row.failures), _seconds_left(utc(row.window_start), self._window, at)) if row else (0, 0)

    def take_back(self, key: str) -> None:
        table = sign_in_failures
        with self._engine.begin() as connection:
            connection.execute(
                table.update().where(table.c.key == key, table.c.failures > 0).values(failures=table.c.failures - 1)
            )

    def clear(self, key: str) -> None:
        with self._engine.begin() as connection:
            connection.execute(sign_in_failures.delete().where(sign_in_failures.c.key == key))

    def _increment(self, key: str, at: datetime) -> tuple[int, datetime]:
        """Add one in a single UPDATE (restarting a window that has passed), or insert the first row."""
        table = sign_in_failures
        for _ in range(3):
            with self._engine.begin() as connection:
                changed = (
                    connection.execute(
                        table.update()
                        .where(table.c.key == key, table.c.window_start <= at - self._window)
                        .values(failures=1, window_start=at)
                    ).rowcount
                    or connection.execute(
                        table.update().where(table.c.key == key).values(failures=table.c.failures + 1)
                    ).rowcount
                )
                if changed:
                    row = connection.execute(
                        sa.select(table.c.failures, table.c.window_start).where(table.c.key == key)
                    ).one()
                    return int(row.failures), utc(row.window_start)
            try:
                with self._engine.begin() as connection:
                    connection.execute(table.insert().values(key=key, failures=1, window_start=at))
                return 1, at
            except IntegrityError:
                continue  # another request inserted it first; count again
        raise RuntimeError("the sign-in counter kept changing under three attempts")  # pragma: no cover


def _seconds_left(window_start: datetime, window: timedelta, at: datetime) -> int:
    return max(1, math.ceil((window_start + window - at).total_seconds()))


@dataclass(frozen=True, slots=True)
class ThrottlePolicy:
    """How many attempts each counter allows per window (the values: ``service/settings/table.py``)."""

    account_limit: int  # failed sign-ins per account (and attempts per account from one network)
    address_limit: int  # sign-in and sign-up attempts per network
    window: timedelta  # a counter restarts this long after its first count


class SignInThrottle:
    def __init__(self, counters: Counters | Engine, policy: ThrottlePolicy) -> None:
        self._counters: Counters = SqlCounters(counters, policy.window) if isinstance(counters, Engine) else counters
        self.account_limit = policy.account_limit
        self.address_limit = policy.address_limit

    def attempt(self, email: str, address: str, *, known_device: bool = False) -> None:
        """Before a password is checked: raise ``Throttled`` when this network may not try this account now.

        ``known_device``: the browser holds a valid device cookie for this account (OWASP, "Slow Brute Force
        Protection Using Device Cookies"): the network's count is skipped; the pair and account bounds hold.
        """
        if not known_device:
            self._charge_network(address)
        tried, pair_left = self._counters.add(pair_key(email, address))
        if tried > self.account_limit:
            raise Throttled(pair_left)  # this network has had its guesses at this account
        failures, account_left = self._counters.peek(account_key(email))
        if failures >= self.account_limit and tried > 1:
            # Guarded: only a network without attempts here in the window gets through (once).
            raise Throttled(min(pair_left, account_left))

    def failed(self, email: str) -> None:
        """The password was wrong (or the account unknown): one failure more for the account."""
        self._counters.add(account_key(email))

    def succeeded(self, email: str, address: str, *, known_device: bool = False) -> None:
        """A sign-in succeeded: the network's tries at the account are forgotten and its attempt given back.

        The account's failures stay until their window ends, so a guessing attacker's other networks stay
        refused; the owner, whose network has no failures now, signs in.
        """
        self._counters.clear(pair_key(email, address))
        if not known_device:  # a known device's attempt was never charged to the network
            self._counters.take_back(address_key(address))

    def signing_up(self, address: str) -> None:
        """A sign-up attempt counts against its network only (never against the account of its email)."""
        self._charge_network(address)

    def discovering(self, address: str) -> None:
        """The email step of home-realm discovery (the address alone, asked first): ``address_limit`` per network
        in the window, on a counter of its own (it neither spends the network's sign-in attempts nor is ever
        counted per email, so no one can use it to keep a person from signing in). It bounds how fast one network
        can ask which domains go to which provider, and how many sign-ins at providers it can start."""
        attempts, left = self._counters.add(discovery_key(address))
        if attempts > self.address_limit:
            raise Throttled(left)

    def signed_up(self, email: str) -> None:
        """A new account starts clean: guesses made at its email before it existed are forgotten."""
        self._counters.clear(account_key(email))

    def requesting_reset(self, email: str, address: str) -> bool:
        """A password-reset request: it counts against its network (Throttled past the network's bound, whatever
        the address) and against the account of its email; False once the account has had ``account_limit``
        requests in the window (no more mail then, and the same answer on the page)."""
        self._charge_network(address)
        requests, _ = self._counters.add("reset:" + sha256_hex(email.strip().casefold()))
        return requests <= self.account_limit

    def verification_mail(self, email: str) -> bool:
        """A verification mail for the account of ``email`` (a client that requires a verified address paused
        its sign-in): False once the account has had ``account_limit`` of them in the window, so nobody can
        flood a mailbox (no more mail then, and the same answer on the page)."""
        mails, _ = self._counters.add("verify:" + sha256_hex(email.strip().casefold()))
        return mails <= self.account_limit

    def account_exists_mail(self, email: str) -> bool:
        """A "someone tried to sign up with your address" mail to the account of ``email``: False once the
        account has had ``account_limit`` of them in the window (sign-ups from many networks flood no mailbox;
        the sign-up page answers the same)."""
        mails, _ = self._counters.add("exists:" + sha256_hex(email.strip().casefold()))
        return mails <= self.account_limit

    def requesting_verification(self, email: str, address: str) -> bool:
        """A "send the link again" request: it counts against its network (Throttled past the network's bound)
        and, as every verification mail, against the account (``verification_mail``)."""
        self._charge_network(address)
        return self.verification_mail(email)

    def _charge_network(self, address: str) -> None:
        attempts, left = self._counters.add(address_key(address))
        if attempts > self.address_limit:
            raise Throttled(left)
