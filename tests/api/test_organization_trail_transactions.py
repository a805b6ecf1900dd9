"""The organization's trail is written in the transaction of the change it records (issue 38): a change of an
application or an API key that fails at its commit leaves no entry, and one refused writes none; an entry never
exists without its change. On both engines: what a failed commit leaves behind is the store's.

The failures are real ones of the database (``tests/support/database_faults.py``: the commit of a transaction that
wrote an entry fails, as a full disk fails it)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError

from identity.accounts.organizations import Organization
from identity.accounts.users import User
from identity.api_keys.keys import ApiKeyStore
from identity.clients.registry import Client, ClientStore
from identity.organizations import operator_keys, rules
from identity.organizations.actors import Actor
from identity.organizations.applications import Applications, Changes, Registration, tag
from identity.organizations.keys import OrganizationKeys
from identity.organizations.tables import organization_events
from identity.organizations.trail import Trail
from tests.support.database_faults import commits_fail_after_writing

ON_BOTH_ENGINES = True
CURSOR_KEY = b"c" * 32
CALLBACK = "https://planner.example/callback"


@pytest.fixture
def owner(org: Organization, user: User) -> Actor:
    return Actor.member(user.id, org.id, "owner", "192.0.2.7")


@pytest.fixture
def applications(engine: Engine) -> Applications:
    journal = Trail(engine, CURSOR_KEY)
    return Applications(ClientStore(engine), journal, CURSOR_KEY, public_clients=False, secret_grace=timedelta(hours=1))


@pytest.fixture
def org_keys(engine: Engine) -> OrganizationKeys:
    return OrganizationKeys(ApiKeyStore(engine), Trail(engine, CURSOR_KEY), CURSOR_KEY)


@pytest.fixture
def planner(applications: Applications, owner: Actor) -> Client:
    registration = Registration("Planner", "client_secret_basic", [CALLBACK], grants=["authorization_code"])
    client, _ = applications.register(owner, registration)
    return client


def entries(engine: Engine, org_id: str) -> list[str]:
    with engine.connect() as connection:
        kinds = connection.scalars(
            sa.select(organization_events.c.kind)
            .where(organization_events.c.org_id == org_id)
            .order_by(organization_events.c.at, organization_events.c.id)
        )
        return list(kinds)


def failing_at_commit(engine: Engine, change: Callable[[], Any]) -> None:
    with commits_fail_after_writing(engine, organization_events), pytest.raises(OperationalError):
        change()


def test_an_application_registered_in_a_transaction_that_fails_at_commit_leaves_neither_it_nor_its_entry(
    engine: Engine, applications: Applications, owner: Actor
) -> None:
    registration = Registration("Planner", "client_secret_basic", [CALLBACK], grants=["authorization_code"])
    failing_at_commit(engine, lambda: applications.register(owner, registration))
    assert applications.list(owner.org_id) == [] and entries(engine, owner.org_id) == []


def test_a_change_of_an_application_that_fails_at_commit_leaves_it_as_it_was_and_no_entry(
    engine: Engine, applications: Applications, owner: Actor, planner: Client
) -> None:
    changes = Changes(name="Renamed", changed=("name",))
    failing_at_commit(engine, lambda: applications.change(owner, planner.id, changes, tag(planner)))
    assert applications.get(owner.org_id, planner.id).name == "Planner"
    assert entries(engine, owner.org_id) == ["client_created"]


def test_a_rotation_that_fails_at_commit_keeps_the_secret_and_writes_no_entry(
    engine: Engine, applications: Applications, owner: Actor, planner: Client
) -> None:
    failing_at_commit(engine, lambda: applications.rotate_secret(owner, planner.id))
    after = applications.get(owner.org_id, planner.id)
    assert (after.secret_hash, after.previous_secret_hash) == (planner.secret_hash, None)
    assert entries(engine, owner.org_id) == ["client_created"]


def test_management_scopes_granted_in_a_transaction_that_fails_at_commit_are_not_granted_nor_entered(
    engine: Engine, applications: Applications, owner: Actor, planner: Client
) -> None:
    failing_at_commit(engine, lambda: applications.set_management_scopes(owner, planner.id, ["manage:clients"]))
    assert applications.get(owner.org_id, planner.id).scopes == planner.scopes
    assert entries(engine, owner.org_id) == ["client_created"]


def test_a_deletion_that_fails_at_commit_keeps_the_application_and_writes_no_entry(
    engine: Engine, applications: Applications, owner: Actor, planner: Client
) -> None:
    failing_at_commit(engine, lambda: applications.delete(owner, planner.id))
    assert applications.get(owner.org_id, planner.id).id == planner.id
    assert entries(engine, owner.org_id) == ["client_created"]


def test_a_change_refused_as_stale_writes_no_entry(
    engine: Engine, applications: Applications, owner: Actor, planner: Client
) -> None:
    with pytest.raises(rules.Stale):
        applications.change(owner, planner.id, Changes(name="Renamed", changed=("name",)), expected='"stale"')
    assert entries(engine, owner.org_id) == ["client_created"]


def test_each_committed_change_of_an_application_has_exactly_its_entry(
    engine: Engine, applications: Applications, owner: Actor, planner: Client
) -> None:
    applications.change(owner, planner.id, Changes(name="Renamed", changed=("name",)), tag(planner))
    applications.rotate_secret(owner, planner.id)
    applications.set_management_scopes(owner, planner.id, ["manage:clients"])
    applications.delete(owner, planner.id)
    assert entries(engine, owner.org_id) == [
        "client_created",
        "client_updated",
        "client_secret_rotated",
        "client_management_scopes_changed",
        "client_deleted",
    ]


def test_an_api_key_revoked_in_a_transaction_that_fails_at_commit_stays_active_without_an_entry(
    engine: Engine, org_keys: OrganizationKeys, owner: Actor
) -> None:
    record, _ = org_keys.create(owner, "nightly")
    failing_at_commit(engine, lambda: org_keys.revoke(owner, record.id))
    assert org_keys.get(owner.org_id, record.id).state == "active"
    assert entries(engine, owner.org_id) == ["api_key_created"]


def test_an_api_key_created_in_a_transaction_that_fails_at_commit_leaves_neither_it_nor_its_entry(
    engine: Engine, org_keys: OrganizationKeys, owner: Actor
) -> None:
    failing_at_commit(engine, lambda: org_keys.create(owner, "nightly"))
    assert org_keys.page(owner.org_id).keys == [] and entries(engine, owner.org_id) == []


def test_revoking_a_revoked_key_again_writes_no_second_entry(
    engine: Engine, org_keys: OrganizationKeys, owner: Actor
) -> None:
    record, _ = org_keys.create(owner, "nightly")
    org_keys.revoke(owner, record.id)
    org_keys.revoke(owner, record.id)
    assert entries(engine, owner.org_id) == ["api_key_created", "api_key_revoked"]


def test_a_key_the_operator_makes_for_an_organization_fails_at_commit_with_its_entry_and_leaves_neither(
    engine: Engine, keys: ApiKeyStore, org: Organization
) -> None:
    failing_at_commit(engine, lambda: operator_keys.create(keys, "nightly", org.id))
    assert keys.list(org_id=org.id) == [] and entries(engine, org.id) == []


def test_a_key_the_operator_revokes_in_a_transaction_that_fails_at_commit_stays_active_without_an_entry(
    engine: Engine, keys: ApiKeyStore, org: Organization
) -> None:
    record, _ = operator_keys.create(keys, "nightly", org.id)
    failing_at_commit(engine, lambda: operator_keys.revoke(keys, record.id))
    assert keys.get(record.id).revoked_at is None
    assert entries(engine, org.id) == ["api_key_created"]


def test_a_key_of_no_organization_enters_no_trail(engine: Engine, keys: ApiKeyStore) -> None:
    record, _ = operator_keys.create(keys, "legacy", None)
    assert operator_keys.revoke(keys, record.id) == (keys.get(record.id), False)
    with engine.connect() as connection:
        assert connection.scalar(sa.select(sa.func.count()).select_from(organization_events)) == 0
