"""What each role may do to an organization's members, invitations and clients, and the errors that say no.

Owners may do everything; admins manage members and admins, invitations, clients and keys, but never make,
change or remove an owner; members see. Nobody raises their own role. The last owner is never demoted, never
removed and never leaves; nobody leaves their only organization (a user belongs to at least one). Every
refusal carries a message safe to show.
"""

from __future__ import annotations

import hashlib

from identity.api_keys.console_rules import MANAGING_ROLES
from identity.api_keys.console_rules import NotAllowed as NotAllowed
from identity.common.vocabulary import ROLES
from identity.organizations.actors import Actor

RANK = {"member": 0, "admin": 1, "owner": 2}


class Conflict(Exception):
    """The change conflicts with the organization's state (the last owner, an address already invited...);
    the message is safe to show."""


class Unknown(LookupError):
    """The organization has no such record (whatever another organization has); the message is safe to show."""


class Stale(Exception):
    """The record changed since it was read (``If-Match``, the console's hidden version): nothing was changed."""


class TooMany(Exception):
    """A bound per time was reached; ``retry_after`` seconds until one more is allowed."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = max(1, retry_after)


def require_manager(actor: Actor, what: str) -> None:
    if actor.role not in MANAGING_ROLES:
        raise NotAllowed(f"Only an owner or an admin of {actor.whose} may {what}.")


def assignable_roles(actor: Actor) -> tuple[str, ...]:
    """The roles ``actor`` may give (in an invitation, or a change): an owner any, an admin admin or member."""
    if actor.role == "owner":
        return ROLES
    if actor.role in MANAGING_ROLES:
        return tuple(role for role in ROLES if role != "owner")
    return ()


def check_role(role: str) -> str:
    if role not in ROLES:
        raise NotAllowed(f"The role must be one of {', '.join(ROLES)}.")
    return role


def check_invitation_role(actor: Actor, role: str) -> None:
    require_manager(actor, "invite")
    check_role(role)
    if role not in assignable_roles(actor):
        raise NotAllowed(f"Only an owner of {actor.whose} may invite an owner.")


def check_change(actor: Actor, target_id: str, current: str, new: str, owners: int) -> None:
    """``actor`` changes the role of ``target_id`` from ``current`` to ``new`` (``owners``: how many there are)."""
    require_manager(actor, "change roles")
    check_role(new)
    if target_id == actor.user_id and RANK[new] > RANK[current]:
        raise NotAllowed("Nobody may raise their own role.")
    if "owner" in (current, new) and actor.role != "owner":
        raise NotAllowed(f"Only an owner of {actor.whose} may make an owner or change an owner's role.")
    if current == "owner" and new != "owner" and owners <= 1:
        raise Conflict(f"The last owner of {actor.whose} cannot be demoted: make another member an owner first.")


def check_removal(actor: Actor, current: str, owners: int) -> None:
    require_manager(actor, "remove members")
    if current == "owner" and actor.role != "owner":
        raise NotAllowed(f"Only an owner of {actor.whose} may remove an owner.")
    if current == "owner" and owners <= 1:
        raise Conflict(f"The last owner of {actor.whose} cannot be removed.")


def check_leave(actor: Actor, current: str, owners: int, organizations: int) -> None:
    if current == "owner" and owners <= 1:
        raise Conflict(f"You are the last owner of {actor.whose}: make another member an owner before you leave.")
    if organizations <= 1:
        raise Conflict(
            f"{actor.whose} is your only organization, and every account belongs to at least one: "
            "an owner or an admin may remove you instead."
        )


def version_tag(kind: str, record_id: str, version: int) -> str:
    """The strong ``ETag`` of a record at ``version`` (an opaque digest; the console posts it back as ``version``)."""
    digest = hashlib.blake2b(f"{kind}:{record_id}:{version}".encode(), digest_size=8).hexdigest()
    return f'"{digest}"'
