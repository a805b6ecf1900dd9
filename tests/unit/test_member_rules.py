"""An organization's members on the state database, without the web layer (identity/organizations/members.py): the
roles' rules as the store applies them, the last owner, the version a change was read at, and the pages."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import Engine

from cursors import InvalidCursor
from identity.accounts.organizations import OrganizationStore
from identity.accounts.users import UserStore
from identity.organizations import rules
from identity.organizations.actors import Actor
from identity.organizations.members import Members
from identity.organizations.trail import Trail
from identity.tokens.revoked_grants import Revoker
from tests.support.clocks import MovableClock
from tests.support.passwords import FAST_HASHING


class Team:
    """An organization with an owner, an admin and a member; the owner and the member belong to a second one."""

    def __init__(self, engine: Engine) -> None:
        clock = MovableClock()
        orgs, users = OrganizationStore(engine), UserStore(engine, clock, hashing=FAST_HASHING)
        self.org, other = orgs.create("Olive Grove"), orgs.create("Elsewhere")
        ids = {}
        for role in ("owner", "admin", "member"):
            joined = [(self.org.id, role)] + ([(other.id, "member")] if role != "admin" else [])
            ids[role] = users.create(f"{role}@grove.example", role.title(), "a long passphrase", joined).id
            clock.advance(1)
        self.ids = ids
        self.members = Members(engine, Revoker(engine, clock), Trail(engine, b"k" * 32, clock), b"c" * 32, clock)

    def actor(self, role: str) -> Actor:
        return Actor.member(self.ids[role], self.org.id, role, None, self.org.name)


@pytest.fixture
def team(engine: Engine) -> Team:
    return Team(engine)


def test_the_last_owner_is_neither_demoted_nor_removed_nor_leaves(team: Team) -> None:
    owner = team.actor("owner")
    with pytest.raises(rules.Conflict, match="last owner"):
        team.members.change_role(owner, owner.user_id or "", "admin")
    with pytest.raises(rules.Conflict, match="last owner"):
        team.members.remove(owner, owner.user_id or "")  # removing oneself is leaving
    assert team.members.owners(team.org.id) == 1
    team.members.change_role(owner, team.ids["admin"], "owner")
    team.members.change_role(owner, owner.user_id or "", "admin")  # two owners: one may step down
    assert team.members.get(team.org.id, team.ids["owner"]).role == "admin"


def test_an_admin_neither_makes_nor_removes_an_owner_and_a_member_changes_nothing(team: Team) -> None:
    admin, member = team.actor("admin"), team.actor("member")
    with pytest.raises(rules.NotAllowed, match="make an owner"):
        team.members.change_role(admin, team.ids["member"], "owner")
    with pytest.raises(rules.NotAllowed, match="remove an owner"):
        team.members.remove(admin, team.ids["owner"])
    with pytest.raises(rules.NotAllowed, match="Only an owner or an admin"):
        team.members.change_role(member, team.ids["member"], "admin")
    assert team.members.change_role(admin, team.ids["member"], "admin").role == "admin"


def test_a_change_read_at_an_earlier_version_is_stale_and_changes_nothing(team: Team) -> None:
    owner, read = team.actor("owner"), team.members.get(team.org.id, team.ids["member"])
    changed = team.members.change_role(owner, team.ids["member"], "admin", expected=read.tag)
    assert changed.version == read.version + 1 and changed.tag != read.tag
    with pytest.raises(rules.Stale):
        team.members.change_role(owner, team.ids["member"], "member", expected=read.tag)
    with pytest.raises(rules.Stale):
        team.members.remove(owner, team.ids["member"], expected=read.tag)
    assert team.members.change_role(owner, team.ids["member"], "admin") == changed  # the same role: no new version


def test_a_removed_member_and_one_who_left_are_no_longer_members(team: Team) -> None:
    team.members.remove(team.actor("owner"), team.ids["admin"])
    team.members.leave(team.actor("member"))
    for gone in ("admin", "member"):
        with pytest.raises(rules.Unknown):
            team.members.get(team.org.id, team.ids[gone])
    with pytest.raises(rules.Unknown, match="no such organization"):
        team.members.remove(Actor.member(team.ids["owner"], "org_none", "owner", None), team.ids["member"])


def test_nobody_leaves_their_only_organization(team: Team) -> None:
    with pytest.raises(rules.Conflict, match="only organization"):
        team.members.leave(team.actor("admin"))


def test_members_are_paged_oldest_first_and_a_foreign_cursor_is_refused(team: Team) -> None:
    first = team.members.page(team.org.id, limit=2)
    assert [m.role for m in first.members] == ["owner", "admin"] and first.total == 3 and first.next_cursor
    rest = team.members.page(team.org.id, limit=2, cursor=first.next_cursor)
    assert [m.role for m in rest.members] == ["member"] and rest.next_cursor is None
    with pytest.raises(InvalidCursor):
        team.members.page("org_other", limit=2, cursor=first.next_cursor)
