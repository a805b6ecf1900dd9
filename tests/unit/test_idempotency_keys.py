"""Retried creates of the management API on the state database (identity/organizations/idempotency.py): one key
makes one create for a day, a key used with another request is refused, and keys are each organization's own."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from identity.accounts.organizations import OrganizationStore
from identity.keys.sealing import Sealer, new_key
from identity.organizations import trail
from identity.organizations.idempotency import IdempotencyKeys, KeyReused, fingerprint
from identity.organizations.tables import idempotency_keys
from tests.support.clocks import MovableClock


class Creates:
    """A create that counts its runs and answers a secret the kept answer must not show in the clear."""

    def __init__(self) -> None:
        self.runs = 0

    def __call__(self, connection: Connection) -> tuple[int, dict[str, Any], list[trail.Written]]:
        self.runs += 1
        return 201, {"id": f"cli_{self.runs}", "client_secret": "s3cret-of-the-answer"}, []


@pytest.fixture
def clock() -> MovableClock:
    return MovableClock()


@pytest.fixture
def keys(engine: Engine, clock: MovableClock) -> IdempotencyKeys:
    return IdempotencyKeys(engine, Sealer([new_key()]), clock)


@pytest.fixture
def orgs(engine: Engine) -> tuple[str, str]:
    store = OrganizationStore(engine)
    return store.create("Corp").id, store.create("Rival").id


def test_the_same_key_and_request_answer_the_kept_answer_and_create_nothing_more(
    keys: IdempotencyKeys, orgs: tuple[str, str], engine: Engine
) -> None:
    create, org = Creates(), orgs[0]
    first = keys.run(org, "k-1", "create_client", {"name": "App"}, create)
    again = keys.run(org, "k-1", "create_client", {"name": "App"}, create)
    assert (first.replayed, again.replayed, create.runs) == (False, True, 1)
    assert (again.status, again.body) == (first.status, first.body)
    with engine.connect() as connection:
        stored = [tuple(map(str, row)) for row in connection.execute(sa.select(idempotency_keys))]
    assert len(stored) == 1 and not any("s3cret" in value or "k-1" == value for value in stored[0])


def test_a_key_used_with_another_request_or_operation_is_refused(keys: IdempotencyKeys, orgs: tuple[str, str]) -> None:
    create, org = Creates(), orgs[0]
    keys.run(org, "k-1", "create_client", {"name": "App"}, create)
    with pytest.raises(KeyReused, match="another request"):
        keys.run(org, "k-1", "create_client", {"name": "Other"}, create)
    with pytest.raises(KeyReused):
        keys.run(org, "k-1", "create_key", {"name": "App"}, create)
    assert create.runs == 1


def test_keys_are_each_organizations_own_and_no_key_creates_every_time(
    keys: IdempotencyKeys, orgs: tuple[str, str]
) -> None:
    create = Creates()
    keys.run(orgs[0], "k-1", "create_client", {"name": "App"}, create)
    assert not keys.run(orgs[1], "k-1", "create_client", {"name": "App"}, create).replayed
    assert not keys.run(orgs[0], None, "create_client", {"name": "App"}, create).replayed
    assert not keys.run(orgs[0], None, "create_client", {"name": "App"}, create).replayed
    assert create.runs == 4


def test_a_kept_answer_lasts_its_ttl_then_the_key_creates_again(
    keys: IdempotencyKeys, orgs: tuple[str, str], clock: MovableClock
) -> None:
    create = Creates()
    keys.run(orgs[0], "k-1", "create_client", {"name": "App"}, create)
    clock.advance(keys.ttl.total_seconds() - 1)
    assert keys.run(orgs[0], "k-1", "create_client", {"name": "App"}, create).replayed
    clock.advance(1)
    assert not keys.run(orgs[0], "k-1", "create_client", {"name": "Other"}, create).replayed
    assert create.runs == 2


def test_the_fingerprint_is_of_the_operation_and_the_body_whatever_the_order_of_its_fields() -> None:
    assert fingerprint("op", {"a": 1, "b": 2}) == fingerprint("op", {"b": 2, "a": 1})
    assert fingerprint("op", {"a": 1}) != fingerprint("op2", {"a": 1}) != fingerprint("op", {"a": 2})
