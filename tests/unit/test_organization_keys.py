"""An organization's API keys on the state database (identity/organizations/keys.py): managers only, each
organization's keys its own, a key shown once and revoked once."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import Engine

from identity.accounts.organizations import OrganizationStore
from identity.api_keys.keys import ApiKeyStore
from identity.organizations import rules, trail
from identity.organizations.actors import Actor
from identity.organizations.keys import OrganizationKeys, as_dict
from identity.organizations.trail import Trail
from tests.support.clocks import MovableClock


@pytest.fixture
def keys(engine: Engine, held_journal: Trail) -> OrganizationKeys:
    return OrganizationKeys(ApiKeyStore(engine), held_journal, b"c" * 32)


@pytest.fixture
def admin(engine: Engine) -> Actor:
    return Actor.member("usr_admin", OrganizationStore(engine).create("Corp").id, "admin", None, "Corp")


def test_a_key_is_shown_once_authenticates_and_is_its_organizations_alone(
    keys: OrganizationKeys, admin: Actor, engine: Engine, held_journal: Trail
) -> None:
    record, key = keys.create(admin, "partner")
    assert ApiKeyStore(engine).authenticate(key) == record.id and key not in str(as_dict(record))
    assert keys.get(admin.org_id, record.id).name == "partner"
    with pytest.raises(rules.Unknown):
        keys.get(OrganizationStore(engine).create("Rival").id, record.id)
    assert [e.kind for e in held_journal.page(admin.org_id).entries] == [trail.API_KEY_CREATED]


def test_members_neither_create_nor_revoke_keys(keys: OrganizationKeys, admin: Actor) -> None:
    record, _ = keys.create(admin, "partner")
    member = Actor.member("usr_m", admin.org_id, "member", None, "Corp")
    with pytest.raises(rules.NotAllowed):
        keys.create(member, "mine")
    with pytest.raises(rules.NotAllowed):
        keys.revoke(member, record.id)


def test_a_revoked_key_stops_working_and_revoking_again_writes_no_second_entry(
    keys: OrganizationKeys, admin: Actor, engine: Engine, held_journal: Trail
) -> None:
    record, key = keys.create(admin, "partner")
    assert keys.revoke(admin, record.id).revoked_at is not None
    keys.revoke(admin, record.id)
    assert ApiKeyStore(engine).authenticate(key) is None
    kinds = [e.kind for e in held_journal.page(admin.org_id).entries]
    assert kinds.count(trail.API_KEY_REVOKED) == 1


def test_keys_are_paged_oldest_first_revoked_ones_included(
    keys: OrganizationKeys, admin: Actor, held_clock: MovableClock
) -> None:
    made = []
    for name in ("one", "two", "three"):
        made.append(keys.create(admin, name)[0].id)
        held_clock.advance(1)
    keys.revoke(admin, made[0])
    first = keys.page(admin.org_id, limit=2)
    assert [k.id for k in first.keys] == made[:2] and first.total == 3 and first.next_cursor
    rest = keys.page(admin.org_id, limit=2, cursor=first.next_cursor)
    assert [k.id for k in rest.keys] == made[2:] and rest.next_cursor is None
