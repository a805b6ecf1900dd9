"""The service secrets (``service.database.db.service_secrets_named``), on SQLite and PostgreSQL: made once by the first
start, read the same by every start and every node after it, in one transaction once they exist."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from identity.keys.sealing import Sealer, new_key
from service.database.db import service_secret, service_secrets, service_secrets_named
from tests.support.simultaneous import at_once

ON_BOTH_ENGINES = True
NAMES = ("menus-cursor-key", "directory-cursor-key", "device-cookie-key")


@pytest.fixture
def sealer() -> Sealer:
    return Sealer((new_key(),))


@pytest.fixture
def transactions(engine: Engine) -> Iterator[list[str]]:
    """Each transaction begun on ``engine`` while the test runs."""
    begun: list[str] = []

    def count(_connection: sa.Connection) -> None:
        begun.append("begin")

    sa.event.listen(engine, "begin", count)
    yield begun
    sa.event.remove(engine, "begin", count)


def stored(engine: Engine) -> dict[str, bytes]:
    with engine.connect() as connection:
        return {row.name: bytes(row.value) for row in connection.execute(sa.select(service_secrets))}


def test_the_first_start_makes_each_secret_and_every_later_start_reads_the_same(engine: Engine, sealer: Sealer) -> None:
    first = service_secrets_named(engine, sealer, NAMES)
    assert sorted(first) == sorted(NAMES)
    assert all(len(value) == 32 for value in first.values()) and len(set(first.values())) == len(NAMES)
    assert service_secrets_named(engine, sealer, NAMES) == first
    assert {name: service_secret(engine, sealer, name) for name in NAMES} == first
    assert all(value.startswith(b"gAAAAA") for value in stored(engine).values())  # sealed at rest


def test_a_start_that_finds_some_secrets_makes_only_the_missing_ones(engine: Engine, sealer: Sealer) -> None:
    kept = service_secret(engine, sealer, "directory-cursor-key")
    secrets = service_secrets_named(engine, sealer, NAMES)
    assert secrets["directory-cursor-key"] == kept
    assert sorted(stored(engine)) == sorted(NAMES)


def test_a_start_after_the_first_reads_every_secret_in_one_transaction(
    engine: Engine, sealer: Sealer, transactions: list[str]
) -> None:
    service_secrets_named(engine, sealer, NAMES)
    transactions.clear()
    service_secrets_named(engine, sealer, NAMES)
    assert len(transactions) == 1


def test_nodes_starting_at_once_all_read_the_secrets_one_of_them_made(engine: Engine, sealer: Sealer) -> None:
    results = at_once(*(partial(service_secrets_named, engine, sealer, NAMES) for _ in range(6)))
    assert all(result == results[0] for result in results), results
    assert sorted(stored(engine)) == sorted(NAMES)


def test_a_secret_stored_before_sealing_is_read_as_it_is(engine: Engine, sealer: Sealer) -> None:
    with engine.begin() as connection:
        connection.execute(service_secrets.insert().values(name="device-cookie-key", value=b"d" * 32))
    assert service_secrets_named(engine, sealer, NAMES)["device-cookie-key"] == b"d" * 32
