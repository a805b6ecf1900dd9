"""What each role may do to an organization's members (identity/organizations/rules.py), without a database."""

from __future__ import annotations

import pytest

from identity.api_keys.console_rules import NotAllowed
from identity.organizations import rules
from identity.organizations.actors import Actor

OWNER = Actor.member("usr_owner", "org_1", "owner", None, "Olive Grove")
ADMIN = Actor.member("usr_admin", "org_1", "admin", None, "Olive Grove")
MEMBER = Actor.member("usr_member", "org_1", "member", None, "Olive Grove")
BOT = Actor.client("cli_bot", "org_1", None)


def test_owners_give_every_role_admins_and_clients_all_but_owner_members_none() -> None:
    assert rules.assignable_roles(OWNER) == ("owner", "admin", "member")
    assert rules.assignable_roles(ADMIN) == rules.assignable_roles(BOT) == ("admin", "member")
    assert rules.assignable_roles(MEMBER) == ()


def test_nobody_raises_their_own_role() -> None:
    with pytest.raises(NotAllowed, match="raise their own role"):
        rules.check_change(ADMIN, "usr_admin", "admin", "owner", owners=1)
    rules.check_change(ADMIN, "usr_admin", "admin", "member", owners=1)  # stepping down is allowed


def test_only_an_owner_makes_changes_or_removes_an_owner() -> None:
    for actor in (ADMIN, BOT):
        with pytest.raises(NotAllowed):
            rules.check_change(actor, "usr_x", "member", "owner", owners=1)
        with pytest.raises(NotAllowed):
            rules.check_change(actor, "usr_owner", "owner", "admin", owners=2)
        with pytest.raises(NotAllowed):
            rules.check_removal(actor, "owner", owners=2)
    rules.check_change(OWNER, "usr_x", "member", "owner", owners=1)
    rules.check_removal(OWNER, "owner", owners=2)


def test_the_last_owner_is_never_demoted_removed_nor_leaves() -> None:
    with pytest.raises(rules.Conflict, match="last owner"):
        rules.check_change(OWNER, "usr_owner", "owner", "admin", owners=1)
    with pytest.raises(rules.Conflict, match="last owner"):
        rules.check_removal(OWNER, "owner", owners=1)
    with pytest.raises(rules.Conflict, match="last owner"):
        rules.check_leave(OWNER, "owner", owners=1, organizations=2)


def test_nobody_leaves_their_only_organization() -> None:
    with pytest.raises(rules.Conflict, match="only organization"):
        rules.check_leave(MEMBER, "member", owners=1, organizations=1)
    rules.check_leave(MEMBER, "member", owners=1, organizations=2)


def test_members_manage_nothing() -> None:
    with pytest.raises(NotAllowed, match="Only an owner or an admin of Olive Grove"):
        rules.check_invitation_role(MEMBER, "member")
    with pytest.raises(NotAllowed):
        rules.check_removal(MEMBER, "member", owners=1)


def test_version_tags_are_opaque_and_move_with_the_version() -> None:
    first, second = rules.version_tag("member", "usr_1", 0), rules.version_tag("member", "usr_1", 1)
    assert first != second and first.startswith('"') and "usr_1" not in first
