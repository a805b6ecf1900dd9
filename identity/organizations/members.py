"""An organization's members: who they are, their roles, changing a role, removing a member, leaving.

Every change is made in one transaction that locks the organization's row first (the count of owners it decides on
stays true until the commit), checks the rules (``rules.py``), and writes the trail. A change may carry the
version its author read (the management API's ``If-Match``, the console's hidden field): when the membership
changed meanwhile, ``Stale`` and nothing changes.

Removing a member (or leaving) ends, in that same transaction, everything the user holds for the organization
(``Revoker.revoke_member_in``): their access and refresh tokens for it, the browser sessions signed in to it, and
a logout token to each client holding one of those sessions (OpenID Connect Back-Channel Logout 1.0). The member
directory reads memberships, so it stops listing them at the commit; the console reads roles on every request.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from cursors import CursorCodec, InvalidCursor
from identity.common.clock import SYSTEM_CLOCK, Clock, utc
from identity.common.database import writing
from identity.common.tables import memberships, organizations, users
from identity.organizations import rules, trail
from identity.organizations.actors import Actor
from identity.organizations.trail import Trail
from identity.tokens.revoked_grants import Revoker

MEMBER = "member"  # the kind of record in a version tag


@dataclass(frozen=True, slots=True)
class MemberRecord:
    user_id: str
    email: str
    name: str
    role: str
    joined_at: datetime
    last_sign_in_at: datetime | None
    email_verified: bool
    version: int

    @property
    def tag(self) -> str:
        return rules.version_tag(MEMBER, self.user_id, self.version)

    def as_dict(self) -> dict[str, Any]:
        def iso(moment: datetime | None) -> str | None:
            return moment.isoformat().replace("+00:00", "Z") if moment else None

        return {
            "user_id": self.user_id,
            "email": self.email,
            "name": self.name,
            "role": self.role,
            "joined_at": iso(self.joined_at),
            "last_sign_in_at": iso(self.last_sign_in_at),
            "email_verified": self.email_verified,
        }


@dataclass(frozen=True, slots=True)
class MemberPage:
    members: list[MemberRecord]
    total: int
    next_cursor: str | None


_COLUMNS = (
    users.c.id,
    users.c.email,
    users.c.name,
    users.c.email_verified,
    users.c.last_sign_in_at,
    memberships.c.role,
    memberships.c.joined_at,
    memberships.c.version,
)


class Members:
    def __init__(
        self, engine: Engine, revoker: Revoker, journal: Trail, cursor_key: bytes, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self._engine = engine
        self._revoker = revoker
        self._trail = journal
        self._cursors = CursorCodec(cursor_key)
        self._clock = clock

    def page(self, org_id: str, *, limit: int = 20, cursor: str | None = None) -> MemberPage:
        """The organization's members, oldest membership first (ties by user id)."""
        filters = f"members|{org_id}"
        base = (
            sa.select(*_COLUMNS)
            .join(memberships, memberships.c.user_id == users.c.id)
            .where(memberships.c.org_id == org_id)
        )
        query = base
        if cursor is not None:
            joined, user_id = self._cursors.decode(cursor, filters)
            try:
                moment = datetime.fromisoformat(joined)
            except ValueError:
                raise InvalidCursor("The cursor is not a cursor of this API.") from None
            query = query.where(
                sa.or_(
                    memberships.c.joined_at > moment,
                    sa.and_(memberships.c.joined_at == moment, users.c.id > user_id),
                )
            )
        query = query.order_by(memberships.c.joined_at, users.c.id).limit(limit + 1)
        with self._engine.connect() as connection:
            rows = connection.execute(query).all()
            total = connection.scalar(sa.select(sa.func.count()).select_from(base.subquery()))
        found = [_record(row) for row in rows[:limit]]
        next_cursor = None
        if len(rows) > limit:
            next_cursor = self._cursors.encode((found[-1].joined_at.isoformat(), found[-1].user_id), filters)
        return MemberPage(found, int(total or 0), next_cursor)

    def owners(self, org_id: str) -> int:
        """How many owners the organization has (what the console offers depends on it)."""
        with self._engine.connect() as connection:
            found = connection.scalar(
                sa.select(sa.func.count()).where(memberships.c.org_id == org_id, memberships.c.role == "owner")
            )
        return int(found or 0)

    def get(self, org_id: str, user_id: str) -> MemberRecord:
        with self._engine.connect() as connection:
            return _one(connection, org_id, user_id)

    def change_role(self, actor: Actor, user_id: str, role: str, expected: str | None = None) -> MemberRecord:
        """Set the member's role; ``expected``: the version tag read (``Stale`` when it is no longer theirs)."""
        rules.require_manager(actor, "change roles")
        with self._engine.connect() as connection, connection.begin():
            writing(connection)
            owners = _lock(connection, actor.org_id)
            current = _one(connection, actor.org_id, user_id)
            _check_version(current, expected)
            rules.check_change(actor, user_id, current.role, role, owners)
            if role == current.role:
                return current
            connection.execute(
                memberships.update()
                .where(memberships.c.user_id == user_id, memberships.c.org_id == actor.org_id)
                .values(role=role, version=memberships.c.version + 1)
            )
            written = self._trail.record(
                connection, actor, trail.MEMBER_ROLE_CHANGED, user_id, role=role, previous_role=current.role
            )
            changed = _one(connection, actor.org_id, user_id)
        trail.logged(written)
        return changed

    def remove(self, actor: Actor, user_id: str, expected: str | None = None) -> None:
        """Remove the member; everything they hold for the organization ends in the same transaction."""
        if user_id == actor.user_id:
            self.leave(actor)
            return
        rules.require_manager(actor, "remove members")
        with self._engine.connect() as connection, connection.begin():
            writing(connection)
            owners = _lock(connection, actor.org_id)
            current = _one(connection, actor.org_id, user_id)
            _check_version(current, expected)
            rules.check_removal(actor, current.role, owners)
            told = self._end(connection, user_id, actor.org_id)
            written = self._trail.record(connection, actor, trail.MEMBER_REMOVED, user_id, role=current.role)
        self._revoker.written(told)
        trail.logged(written)

    def leave(self, actor: Actor) -> None:
        """The signed-in member leaves the organization (never its last owner, never their only organization)."""
        assert actor.user_id is not None
        with self._engine.connect() as connection, connection.begin():
            writing(connection)
            owners = _lock(connection, actor.org_id)
            current = _one(connection, actor.org_id, actor.user_id)
            organizations_of_user = connection.scalar(
                sa.select(sa.func.count()).where(memberships.c.user_id == actor.user_id)
            )
            rules.check_leave(actor, current.role, owners, int(organizations_of_user or 0))
            told = self._end(connection, actor.user_id, actor.org_id)
            written = self._trail.record(connection, actor, trail.MEMBER_LEFT, actor.user_id, role=current.role)
        self._revoker.written(told)
        trail.logged(written)

    def _end(self, connection: Connection, user_id: str, org_id: str) -> int:
        connection.execute(memberships.delete().where(memberships.c.user_id == user_id, memberships.c.org_id == org_id))
        return self._revoker.revoke_member_in(connection, user_id, org_id)


def _lock(connection: Connection, org_id: str) -> int:
    """Lock the organization's row (on PostgreSQL; SQLite's transaction is a writer already); its owners."""
    if connection.scalar(sa.select(organizations.c.id).where(organizations.c.id == org_id).with_for_update()) is None:
        raise rules.Unknown("There is no such organization.")
    owners = connection.scalar(
        sa.select(sa.func.count()).where(memberships.c.org_id == org_id, memberships.c.role == "owner")
    )
    return int(owners or 0)


def _one(connection: Connection, org_id: str, user_id: str) -> MemberRecord:
    row = connection.execute(
        sa.select(*_COLUMNS)
        .join(memberships, memberships.c.user_id == users.c.id)
        .where(memberships.c.org_id == org_id, users.c.id == user_id)
    ).first()
    if row is None:
        raise rules.Unknown("The organization has no member with this id.")
    return _record(row)


def _check_version(current: MemberRecord, expected: str | None) -> None:
    if expected is not None and expected != current.tag:
        raise rules.Stale("The member changed since it was read; read it again and retry.")


def _record(row: Any) -> MemberRecord:
    return MemberRecord(
        user_id=row.id,
        email=row.email,
        name=row.name,
        role=row.role,
        joined_at=utc(row.joined_at),
        last_sign_in_at=utc(row.last_sign_in_at) if row.last_sign_in_at else None,
        email_verified=bool(row.email_verified),
        version=int(row.version),
    )
