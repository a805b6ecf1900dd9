"""The organization's audit trail on the state database (identity/organizations/trail.py): known kinds only, bounded
details, newest first by cursors bound to the organization and the kind asked for."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy.engine import Engine

from cursors import InvalidCursor
from identity.accounts.organizations import OrganizationStore
from identity.organizations import trail
from identity.organizations.actors import Actor
from identity.organizations.trail import DETAIL_MAX, Trail, names
from tests.support.clocks import MovableClock


@pytest.fixture
def owner(engine: Engine) -> Actor:
    return Actor.member("usr_owner", OrganizationStore(engine).create("Corp").id, "owner", "192.0.2.7" * 10)


def test_an_entry_of_an_unknown_kind_is_refused(held_journal: Trail, owner: Actor) -> None:
    with pytest.raises(ValueError, match="unknown kind"):
        held_journal.write(owner, "member_promoted_to_god")


def test_details_and_the_network_are_cut_to_their_bounds_and_empty_ones_dropped(
    held_journal: Trail, owner: Actor
) -> None:
    held_journal.write(owner, trail.CLIENT_CREATED, "cli_1", name="x" * (DETAIL_MAX + 50), fields=None)
    (entry,) = held_journal.page(owner.org_id).entries
    assert entry.details == {"name": "x" * DETAIL_MAX} and entry.network == ("192.0.2.7" * 10)[:64]
    assert entry.as_dict()["actor"] == {"kind": "user", "id": "usr_owner"} and entry.as_dict()["at"].endswith("Z")
    assert names([entry]) == {"usr_owner", "cli_1"}


def test_entries_are_paged_newest_first_by_a_cursor_bound_to_the_organization_and_kind(
    held_journal: Trail, owner: Actor, held_clock: MovableClock, engine: Engine
) -> None:
    for subject in ("a", "b", "c"):
        held_journal.write(owner, trail.MEMBER_REMOVED, f"usr_{subject}")
        held_clock.advance(1)
    held_journal.console_sign_in("usr_owner", owner.org_id, None)
    removed = held_journal.page(owner.org_id, kind=trail.MEMBER_REMOVED, limit=2)
    assert [e.subject for e in removed.entries] == ["usr_c", "usr_b"] and removed.next_cursor
    rest = held_journal.page(owner.org_id, kind=trail.MEMBER_REMOVED, limit=2, cursor=removed.next_cursor)
    assert [e.subject for e in rest.entries] == ["usr_a"] and rest.next_cursor is None
    assert held_journal.page(owner.org_id, limit=1).entries[0].kind == trail.CONSOLE_SIGN_IN
    with pytest.raises(InvalidCursor):
        held_journal.page(owner.org_id, limit=2, cursor=removed.next_cursor)  # made for another kind
    with pytest.raises(InvalidCursor):
        held_journal.page(
            OrganizationStore(engine).create("Rival").id, kind=trail.MEMBER_REMOVED, cursor=removed.next_cursor
        )


def test_the_invitations_mailed_are_counted_since_a_moment_oldest_first(
    held_journal: Trail, owner: Actor, held_clock: MovableClock, engine: Engine
) -> None:
    start = held_clock.now()
    held_journal.write(owner, trail.MEMBER_INVITED, "inv_1")
    held_clock.advance(60)
    held_journal.write(owner, trail.INVITATION_REVOKED, "inv_1")  # not a mail
    held_journal.write(owner, trail.INVITATION_RESENT, "inv_1")
    with engine.connect() as connection:
        assert Trail.sends_since(connection, owner.org_id, start - timedelta(seconds=1)) == [
            start,
            start + timedelta(seconds=60),
        ]
        assert Trail.sends_since(connection, owner.org_id, start) == [start + timedelta(seconds=60)]
