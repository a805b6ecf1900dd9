"""The organization's audit trail: what was done in and to an organization, by whom, when, and from which network.

Its members read it in the console, its clients with ``manage:audit`` (openapi/management.yaml). Each entry is
written in the transaction of what it records (``record``), so an entry exists exactly when its change does.
Entries hold ids and short words only (a role, a name, a kind), never a secret, an email address or free text
typed by someone else (as ``identity.common.audit``'s lines); each is also one line of the audit log,
``organization_changed``, written once its transaction has committed (``logged``).

Newest first, a page at a time, by signed keyset cursors bound to the organization and the kind asked for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from cursors import CursorCodec, InvalidCursor
from identity.common import audit
from identity.common.clock import SYSTEM_CLOCK, Clock, new_id, utc
from identity.organizations.actors import USER, Actor
from identity.organizations.tables import organization_events

API_KEY_CREATED = "api_key_created"
API_KEY_REVOKED = "api_key_revoked"
MEMBER_INVITED = "member_invited"
INVITATION_RESENT = "invitation_resent"
INVITATION_REVOKED = "invitation_revoked"
INVITATION_ACCEPTED = "invitation_accepted"
MEMBER_ROLE_CHANGED = "member_role_changed"
MEMBER_REMOVED = "member_removed"
MEMBER_LEFT = "member_left"
CLIENT_CREATED = "client_created"
CLIENT_UPDATED = "client_updated"
CLIENT_DELETED = "client_deleted"
CLIENT_SECRET_ROTATED = "client_secret_rotated"
CLIENT_MANAGEMENT_SCOPES_CHANGED = "client_management_scopes_changed"
CONSOLE_SIGN_IN = "console_sign_in"
CONNECTION_CREATED = "connection_created"  # the organization's identity provider connection (identity/federation/)
CONNECTION_CHANGED = "connection_changed"
CONNECTION_DELETED = "connection_deleted"
KINDS = (
    API_KEY_CREATED,
    API_KEY_REVOKED,
    MEMBER_INVITED,
    INVITATION_RESENT,
    INVITATION_REVOKED,
    INVITATION_ACCEPTED,
    MEMBER_ROLE_CHANGED,
    MEMBER_REMOVED,
    MEMBER_LEFT,
    CLIENT_CREATED,
    CLIENT_UPDATED,
    CLIENT_DELETED,
    CLIENT_SECRET_ROTATED,
    CLIENT_MANAGEMENT_SCOPES_CHANGED,
    CONSOLE_SIGN_IN,
    CONNECTION_CREATED,
    CONNECTION_CHANGED,
    CONNECTION_DELETED,
)
SENDS = (MEMBER_INVITED, INVITATION_RESENT)  # the entries that mailed an invitation (the bound per hour counts them)
DETAIL_MAX = 200  # characters of one detail's value


@dataclass(frozen=True, slots=True)
class Entry:
    id: str
    kind: str
    at: datetime
    actor_kind: str
    actor_id: str | None
    network: str | None
    subject: str | None
    details: Mapping[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "at": self.at.isoformat().replace("+00:00", "Z"),
            "actor": {"kind": self.actor_kind, "id": self.actor_id},
            "network": self.network,
            "subject": self.subject,
            "details": dict(self.details),
        }


@dataclass(frozen=True, slots=True)
class Written:
    """An entry written in a transaction not yet committed: its audit log line waits for the commit."""

    kind: str
    actor: Actor
    subject: str | None


@dataclass(frozen=True, slots=True)
class EntryPage:
    entries: list[Entry]
    next_cursor: str | None


class Trail:
    def __init__(self, engine: Engine, cursor_key: bytes, clock: Clock = SYSTEM_CLOCK) -> None:
        self._engine = engine
        self._cursors = CursorCodec(cursor_key)
        self._clock = clock

    def record(
        self, connection: Connection, actor: Actor, kind: str, subject: str | None = None, **details: str | None
    ) -> Written:
        """In the caller's transaction: one entry of ``actor``'s organization. ``logged`` after the commit."""
        return entry_in(connection, actor, kind, self._clock.now(), subject, **details)

    def write(self, actor: Actor, kind: str, subject: str | None = None, **details: str | None) -> None:
        """An entry in a transaction of its own (an event that changes nothing else: a sign-in to the console)."""
        with self._engine.begin() as connection:
            written = self.record(connection, actor, kind, subject, **details)
        logged(written)

    def console_sign_in(self, user_id: str, org_id: str, network: str | None) -> None:
        """A member signed in to the console (the entry names no role: the console reads it at every request)."""
        self.write(Actor(USER, user_id, org_id, "member", network), CONSOLE_SIGN_IN, user_id)

    def page(self, org_id: str, *, kind: str | None = None, limit: int = 20, cursor: str | None = None) -> EntryPage:
        """The organization's entries, newest first; ``InvalidCursor`` for a cursor not made for these filters."""
        filters = f"audit|{org_id}|{kind or ''}"
        query = sa.select(organization_events).where(organization_events.c.org_id == org_id)
        if kind is not None:
            query = query.where(organization_events.c.kind == kind)
        if cursor is not None:
            at, entry_id = self._cursors.decode(cursor, filters)
            try:
                moment = datetime.fromisoformat(at)
            except ValueError:
                raise InvalidCursor("The cursor is not a cursor of this API.") from None
            query = query.where(
                sa.or_(
                    organization_events.c.at < moment,
                    sa.and_(organization_events.c.at == moment, organization_events.c.id < entry_id),
                )
            )
        query = query.order_by(organization_events.c.at.desc(), organization_events.c.id.desc()).limit(limit + 1)
        with self._engine.connect() as connection:
            rows = connection.execute(query).all()
        entries = [_entry(row) for row in rows[:limit]]
        next_cursor = None
        if len(rows) > limit:
            last = entries[-1]
            next_cursor = self._cursors.encode((last.at.isoformat(), last.id), filters)
        return EntryPage(entries, next_cursor)

    @staticmethod
    def sends_since(connection: Connection, org_id: str, since: datetime) -> list[datetime]:
        """When the organization mailed invitations since ``since`` (the bound per hour), oldest first."""
        rows = connection.execute(
            sa.select(organization_events.c.at)
            .where(
                organization_events.c.org_id == org_id,
                organization_events.c.kind.in_(SENDS),
                organization_events.c.at > since,
            )
            .order_by(organization_events.c.at)
        )
        return [utc(row.at) for row in rows]


def entry_in(
    connection: Connection, actor: Actor, kind: str, at: datetime, subject: str | None = None, **details: str | None
) -> Written:
    """In the caller's transaction: one entry of ``actor``'s organization at ``at`` (``Trail.record``; the command
    line, which reads no pages of the trail, writes with this). ``logged`` after the commit."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind of organization event {kind!r}")
    kept = {name: str(value)[:DETAIL_MAX] for name, value in details.items() if value is not None}
    connection.execute(
        organization_events.insert().values(
            id=new_id("aud"),
            org_id=actor.org_id,
            at=at,
            kind=kind,
            actor_kind=actor.kind,
            actor_id=actor.id,
            network=(actor.network or None) and actor.network[:64],
            subject=subject,
            details=kept,
        )
    )
    return Written(kind, actor, subject)


def logged(*written: Written) -> None:
    """After the commit: one line of the audit log per entry."""
    for each in written:
        audit.record(
            audit.ORGANIZATION_CHANGED,
            org_id=each.actor.org_id,
            user_id=each.actor.user_id,
            client_id=each.actor.client_id,
            reason=each.kind,
            subject_id=each.subject,
        )


def _entry(row: Any) -> Entry:
    return Entry(
        id=row.id,
        kind=row.kind,
        at=utc(row.at),
        actor_kind=row.actor_kind,
        actor_id=row.actor_id,
        network=row.network,
        subject=row.subject,
        details=dict(row.details or {}),
    )


def names(entries: Sequence[Entry]) -> set[str]:
    """The user and client ids an page of entries names (the console shows their names)."""
    found = {entry.actor_id for entry in entries if entry.actor_id}
    found |= {entry.subject for entry in entries if entry.subject}
    return found
