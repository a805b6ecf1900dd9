"""Durability under a crash: SIGKILL in the middle of sustained sign-ins, refreshes and revocations, a restart
on the same state, and nothing that was acknowledged is lost.

Client threads each run token families one after another: a browser sign-in (Argon2) and its code exchanged,
refreshes (each rotates the refresh token, RFC 9700 §4.14.2), and to end some families a revocation (RFC 7009)
of the newest refresh token (the whole family goes) or of one access token (that token alone). Every answer a
client got is written in its ledger; the one request a thread had in flight when the server died was never
acknowledged, so its effect may or may not have landed. After the restart on the same database and port (so
the same issuer), introspection must say of every token exactly what the ledger implies:

- a family whose revocation was acknowledged: every token inactive;
- an access token whose revocation was acknowledged: inactive, and the family's other tokens unaffected;
- a refresh token the client rotated (it got the next one): inactive, as rotation requires;
- every other access token: active; the newest refresh token: active, and it still refreshes.

Only a family with a request in flight at the kill may differ where that request would have changed it (its
newest refresh token rotated or revoked, its tokens revoked). The signing keys (the JWKS), the API keys and
the SQLite file itself (integrity and foreign key checks) must be intact.
"""

from __future__ import annotations

import signal
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests
import sqlalchemy as sa

from identity.api_keys.keys import api_keys
from identity.common.tables import signing_keys
from service.database.db import commit_without_waiting, make_engine, service_secrets
from tests.support.defaults import POOL
from tests.support.live import LiveService, free_port, live_service
from tests.support.postgres import throwaway_database
from tests.support.traffic import TIMEOUT, Tenant, introspect, provision, refresh, revoke, sign_in_for_tokens

THREADS = 4
REFRESHES_PER_FAMILY = 3
OPERATIONS_BEFORE_KILL = 80  # acknowledged operations (all threads) before SIGKILL
KINDS = ("sign-in", "refresh", "revocation of a refresh token (its family)", "revocation of an access token")
LIFETIMES = {"MENUS_ACCESS_TOKEN_TTL": "3600"}  # no token expires while the test runs, however slow the machine


@dataclass
class Family:
    """One sign-in's tokens as its client knows them."""

    access: list[str] = field(default_factory=list)
    refresh: list[str] = field(default_factory=list)  # in the order received: all but the last were rotated
    family_revoked: bool = False  # the revocation of the newest refresh token was acknowledged
    access_revoked: str | None = None  # an access token whose revocation was acknowledged
    in_flight: str | None = None  # the operation under way when the server died (never acknowledged)


@dataclass
class Ledger:
    families: list[Family] = field(default_factory=list)
    acknowledged: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def done(self, kind: str) -> None:
        with self.lock:
            self.acknowledged[kind] += 1

    def total(self) -> int:
        with self.lock:
            return sum(self.acknowledged.values())


def client(tenant: Tenant, ledger: Ledger, number: int) -> None:
    """Families until the server dies: the operation then in flight is noted, and the thread ends."""
    for round_ in range(10_000):
        family = Family()
        with ledger.lock:
            ledger.families.append(family)
        try:
            family.in_flight = "sign-in"
            tokens = sign_in_for_tokens(tenant)
            family.access.append(tokens["access_token"])
            family.refresh.append(tokens["refresh_token"])
            ledger.done("sign-in")
            for _ in range(REFRESHES_PER_FAMILY):
                family.in_flight = "refresh"
                tokens = refresh(tenant, family.refresh[-1])
                family.access.append(tokens["access_token"])
                family.refresh.append(tokens["refresh_token"])
                ledger.done("refresh")
            ending = (number + round_) % 3
            if ending == 0:
                family.in_flight = "revoke refresh token"
                revoke(tenant, family.refresh[-1])
                family.family_revoked = True
                ledger.done("revocation of a refresh token (its family)")
            elif ending == 1:
                family.in_flight = "revoke access token"
                revoke(tenant, family.access[0])
                family.access_revoked = family.access[0]
                ledger.done("revocation of an access token")
            family.in_flight = None
        except (requests.RequestException, AssertionError):  # refused, timed out, or cut mid-answer
            return  # the server died under this request; family.in_flight says which


def kill_under_load(service: LiveService, tenant: Tenant) -> Ledger:
    assert service.process is not None
    ledger = Ledger()
    threads = [threading.Thread(target=client, args=(tenant, ledger, n), daemon=True) for n in range(THREADS)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 300
    while ledger.total() < OPERATIONS_BEFORE_KILL and time.monotonic() < deadline:
        time.sleep(0.02)
    service.process.send_signal(signal.SIGKILL)
    service.process.wait(timeout=TIMEOUT)
    for thread in threads:
        thread.join(timeout=TIMEOUT)
        assert not thread.is_alive(), "a client did not notice the server had died"
    assert ledger.total() >= OPERATIONS_BEFORE_KILL, "the clients did not get going"
    return ledger


def active(tenant: Tenant, token: str) -> bool:
    return bool(introspect(tenant, token)["active"])


def lost_tokens(tenant: Tenant, family: Family) -> list[str]:
    """What introspection says that the ledger forbids: each a line naming the token's place and state."""
    lost: list[str] = []
    uncertain = family.in_flight in ("refresh", "revoke refresh token", "revoke access token")
    for position, token in enumerate(family.refresh):
        newest = position == len(family.refresh) - 1
        expected = newest and not family.family_revoked
        if active(tenant, token) != expected and not (newest and uncertain):
            lost.append(f"refresh token {position} active={not expected}, expected {expected}")
    for position, token in enumerate(family.access):
        expected = not family.family_revoked and token != family.access_revoked
        maybe_revoked = family.in_flight == "revoke refresh token" or (
            family.in_flight == "revoke access token" and position == 0
        )
        if active(tenant, token) != expected and not maybe_revoked:
            lost.append(f"access token {position} active={not expected}, expected {expected}")
    return lost


def state(service: LiveService, database_url: str) -> dict[str, Any]:
    """What must survive untouched: the published JWKS, the signing keys, the API keys and the service secrets
    (the cursor keys), row for row."""
    engine = make_engine(database_url, POOL)
    try:
        with engine.connect() as connection:
            rows = {
                table.name: sorted(tuple(row) for row in connection.execute(sa.select(table)))
                for table in (signing_keys, api_keys, service_secrets)
            }
    finally:
        engine.dispose()
    return {"jwks": requests.get(f"{service.url}/jwks", timeout=TIMEOUT).json(), **rows}


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh database of each engine: its URL (the SQLite file is where ``serve`` puts it by default)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'var' / 'regional-menus.sqlite3'}"
        return
    with throwaway_database() as url:
        yield url


def test_sigkill_under_load_loses_no_acknowledged_token_revocation_or_key(tmp_path: Path, database: str) -> None:
    """Every token a client received is as the ledger says after a crash and restart; keys and tables intact."""
    env, port = {**LIFETIMES, "MENUS_DATABASE_URL": database}, free_port()
    with live_service(tmp_path, env, port=port) as service:
        tenant = provision(service)
        before = state(service, database)
        ledger = kill_under_load(service, tenant)
    with live_service(tmp_path, env, port=port) as service:
        after = state(service, database)
        menus = requests.get(
            f"{service.url}/v1/menus/regions", headers={"Authorization": f"Bearer {tenant.api_key}"}, timeout=TIMEOUT
        )
        lost = {n: found for n, family in enumerate(ledger.families) if (found := lost_tokens(tenant, family))}
        still_refresh = [
            family.refresh[-1]
            for family in ledger.families
            if family.refresh and not family.family_revoked and family.in_flight is None
        ]
        refused = [token for token in still_refresh if not refresh_works(tenant, token)]
    assert after == before
    assert menus.status_code == 200, menus.text
    assert lost == {}, lost
    assert refused == [], f"{len(refused)} of the newest refresh tokens no longer refresh"
    assert set(ledger.acknowledged) == set(KINDS), ledger.acknowledged
    if database.startswith("sqlite"):
        assert sqlite_checks(tmp_path / "var" / "regional-menus.sqlite3") == (["ok"], [])

    in_flight = Counter(family.in_flight for family in ledger.families if family.in_flight)
    tokens = sum(len(family.access) + len(family.refresh) for family in ledger.families)
    print(
        f"\ndurability ({sa.make_url(database).get_backend_name()}): before SIGKILL {dict(ledger.acknowledged)} "
        f"({ledger.total()} acknowledged operations, {tokens} tokens); in flight at the kill {dict(in_flight)}; "
        f"after the restart: {len(lost)} families with a lost token, {len(still_refresh)} newest refresh tokens "
        f"refreshed, {len(refused)} refused; keys and API keys unchanged"
    )


def refresh_works(tenant: Tenant, token: str) -> bool:
    try:
        refresh(tenant, token)
    except AssertionError:
        return False
    return True


def sqlite_checks(path: Path) -> tuple[list[str], list[tuple[Any, ...]]]:
    """``PRAGMA integrity_check`` and ``PRAGMA foreign_key_check`` of the database file."""
    connection = sqlite3.connect(path)
    try:
        integrity = [row[0] for row in connection.execute("PRAGMA integrity_check")]
        foreign_keys = list(connection.execute("PRAGMA foreign_key_check"))
    finally:
        connection.close()
    return integrity, foreign_keys


def test_sqlite_commits_reach_the_disk_before_they_are_acknowledged(tmp_path: Path) -> None:
    """WAL with synchronous=FULL: a commit is durable against power loss too, not only against a process crash."""
    engine = make_engine(f"sqlite:///{tmp_path / 'state.sqlite3'}", POOL)
    try:
        with engine.connect() as connection:
            pragmas = [connection.scalar(sa.text(f"PRAGMA {name}")) for name in ("journal_mode", "synchronous")]
            foreign_keys = connection.scalar(sa.text("PRAGMA foreign_keys"))
    finally:
        engine.dispose()
    assert pragmas == ["wal", 2]  # 2: FULL
    assert foreign_keys == 1


def _durability_setting(connection: sa.Connection) -> str:
    if connection.dialect.name == "sqlite":
        return {1: "normal", 2: "full"}[connection.scalar(sa.text("PRAGMA synchronous"))]
    return "full" if connection.scalar(sa.text("SHOW synchronous_commit")) == "on" else "normal"


def test_only_a_commit_that_may_fail_closed_skips_waiting_for_the_disk_and_never_on_postgresql(
    either_database: str,
) -> None:
    """Access-token records commit without waiting for the disk on SQLite (lost in a power cut, a token is only
    inactive); on PostgreSQL they wait, since its asynchronous commit loses the last commits when the server
    itself crashes. The connection goes back to the pool waiting again, even when the transaction failed."""
    engine = make_engine(either_database, POOL)
    table = sa.Table("durability_probe", sa.MetaData(), sa.Column("n", sa.Integer, primary_key=True))
    try:
        table.create(engine)
        with commit_without_waiting(engine) as connection:
            inside = _durability_setting(connection)
            connection.execute(table.insert().values(n=1))
        with pytest.raises(sa.exc.IntegrityError), commit_without_waiting(engine) as connection:
            connection.execute(table.insert().values(n=1))
        with engine.connect() as connection:
            after = _durability_setting(connection)
            rows = connection.scalars(sa.select(table.c.n)).all()
        table.drop(engine)
    finally:
        engine.dispose()
    waits = "normal" if either_database.startswith("sqlite") else "full"
    assert (inside, after, rows) == (waits, "full", [1])
