"""Purging what nothing can use any more (identity/purge.py), on SQLite and PostgreSQL."""

from __future__ import annotations

import itertools
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.organizations import OrganizationStore
from identity.accounts.users import UserStore
from identity.common.clock import SYSTEM_CLOCK
from identity.common.tables import (
    access_tokens,
    authorization_codes,
    browser_sessions,
    client_assertions,
    interactions,
    mail_outbox,
    refresh_tokens,
    revoked_grants,
    sign_in_failures,
    signing_keys,
)
from identity.purge import Purger
from service.settings import Settings
from tests.support.apps import make_app
from tests.support.defaults import PURGE_GRACE, SIGN_IN_WINDOW
from tests.support.passwords import FAST_HASHING
from tests.support.waiting import eventually

REFRESH_LIFETIME = timedelta(days=30)
_serial = itertools.count()


ON_BOTH_ENGINES = True  # every test here that uses the state database runs on SQLite and on PostgreSQL


def insert(engine: Engine, table: sa.Table, **values: Any) -> None:
    """A row of ``table`` with every column it requires filled in; ``values`` decide the rest."""
    row: dict[str, Any] = {}
    for column in table.columns:
        if column.name in values or column.nullable:
            continue
        python_type = column.type.python_type
        if python_type is str:
            row[column.name] = f"{column.name[:8]}{next(_serial)}"
        elif python_type is datetime:
            row[column.name] = SYSTEM_CLOCK.now()
        elif python_type is int:
            row[column.name] = 1
        elif python_type is bool:
            row[column.name] = False
        elif python_type is bytes:
            row[column.name] = b"x"
        else:
            row[column.name] = {}
    with engine.begin() as connection:
        connection.execute(table.insert().values(**row, **values))


def count(engine: Engine, table: sa.Table) -> int:
    with engine.connect() as connection:
        return int(connection.scalar(sa.select(sa.func.count()).select_from(table)) or 0)


def test_purge_deletes_each_kind_of_record_only_once_nothing_can_use_it(engine: Engine) -> None:
    at = SYSTEM_CLOCK.now()
    minute = timedelta(minutes=1)
    org = OrganizationStore(engine).create("Acme Foods")
    user = UserStore(engine, hashing=FAST_HASHING).create(
        "ana@example.com", "Ana", "correct horse battery", [(org.id, "owner")]
    )
    # (table, columns that decide, for a row past its use and a row still of use)
    cases: list[tuple[sa.Table, dict[str, Any], dict[str, Any]]] = [
        (interactions, {"expires_at": at - minute}, {"expires_at": at + minute}),
        (authorization_codes, {"expires_at": at - PURGE_GRACE - minute}, {"expires_at": at - PURGE_GRACE + minute}),
        (access_tokens, {"expires_at": at - minute}, {"expires_at": at + minute, "revoked_at": at}),
        (refresh_tokens, {"expires_at": at - minute}, {"expires_at": at + minute, "rotated_at": at}),
        (
            browser_sessions,
            {"user_id": user.id, "expires_at": at + minute, "ended_at": at - PURGE_GRACE - minute},
            {"user_id": user.id, "expires_at": at - PURGE_GRACE + minute, "ended_at": at - PURGE_GRACE + minute},
        ),
        (browser_sessions, {"user_id": user.id, "expires_at": at - PURGE_GRACE - minute}, {"user_id": user.id}),
        (client_assertions, {"expires_at": at - minute}, {"expires_at": at + minute}),
        (
            revoked_grants,
            {"revoked_at": at - REFRESH_LIFETIME - minute},
            {"revoked_at": at - REFRESH_LIFETIME + minute},
        ),
        (
            sign_in_failures,
            {"window_start": at - SIGN_IN_WINDOW - minute},
            {"window_start": at - SIGN_IN_WINDOW + minute},
        ),
        (signing_keys, {"expires_at": at - PURGE_GRACE - minute}, {"expires_at": at - PURGE_GRACE + minute}),
        (signing_keys, {"expires_at": at - PURGE_GRACE - minute}, {"expires_at": None}),  # a key still published
        (
            mail_outbox,
            {"status": "sent", "created_at": at - PURGE_GRACE - minute},
            {"status": "sent", "created_at": at - PURGE_GRACE + minute},
        ),
        (mail_outbox, {"status": "failed", "created_at": at - PURGE_GRACE - minute}, {"status": "pending"}),
    ]
    for table, past_use, of_use in cases:
        insert(engine, table, **past_use)
        insert(engine, table, **of_use)
    tables = {table.name: table for table, _, _ in cases}
    past_use = Counter(table.name for table, _, _ in cases)  # one row past its use a case, one of use

    deleted = Purger(engine, REFRESH_LIFETIME, PURGE_GRACE, SIGN_IN_WINDOW).purge()

    assert {name: deleted[name] for name in tables} == past_use
    assert {name: count(engine, table) for name, table in tables.items()} == past_use  # the rows of use are kept
    assert Purger(engine, REFRESH_LIFETIME, PURGE_GRACE, SIGN_IN_WINDOW).purge() == dict.fromkeys(
        deleted, 0
    )  # nothing left to purge


def test_the_running_service_purges_at_start_and_then_on_its_interval(settings: Settings, engine: Engine) -> None:
    expired = {"expires_at": SYSTEM_CLOCK.now() - timedelta(minutes=1)}
    insert(engine, interactions, **expired)
    with TestClient(make_app(settings.with_changes(purge_interval=1))):
        assert eventually(lambda: count(engine, interactions) == 0, timeout=5), "not purged at start"
        insert(engine, interactions, **expired)
        assert eventually(lambda: count(engine, interactions) == 0, timeout=5), "not purged on the interval"
