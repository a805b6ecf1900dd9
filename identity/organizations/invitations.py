"""Invitations to join an organization, mailed as single-use links.

Owners and admins (and clients of the organization with ``manage:members``) invite an address with a role. The
mail goes through the outbox, in the transaction that writes the invitation, and carries a link with a 256-bit
random token that opens for ``lifetime`` (7 days); only the token's SHA-256 is kept, as for every mailed link
(identity/mail/email_links.py). Sending an invitation again mails a new link and the earlier one stops opening.

Whoever holds the link may join, once: someone with an account accepts it signed in (``accept``); someone new
signs up through it (``sign_up``), into this organization and no new one. Following it is one conditional UPDATE
(pending, unexpired, this token), so two clicks make one membership. An account whose address is the one invited
has just shown it reads that mailbox: its address is marked verified.

Bounds per organization, both settings: invitations mailed per hour (the trail's ``member_invited`` and
``invitation_resent`` entries of the last hour; ``TooMany`` past it), and pending invitations (``Conflict``).
The organization's row is locked first, so concurrent invitations are counted one after another.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from cursors import CursorCodec, InvalidCursor
from identity.accounts.users import User, UserStore, check_email, check_name, email_key
from identity.common.clock import SYSTEM_CLOCK, Clock, new_id, utc
from identity.common.database import writing
from identity.common.errors import InvalidInput
from identity.common.tables import memberships, organizations, users
from identity.mail.outbox import Mail, Outbox
from identity.organizations import rules, trail
from identity.organizations.actors import Actor
from identity.organizations.tables import invitations
from identity.organizations.trail import Trail

PENDING, ACCEPTED, REVOKED, EXPIRED = "pending", "accepted", "revoked", "expired"
KIND = "invitation"  # the mail's template (service/mail/templates/invitation.*)


@dataclass(frozen=True, slots=True)
class Invitation:
    id: str
    org_id: str
    email: str
    role: str
    created_at: datetime
    expires_at: datetime
    last_sent_at: datetime
    sends: int
    accepted_at: datetime | None = None
    revoked_at: datetime | None = None

    def state(self, now: datetime) -> str:
        if self.accepted_at is not None:
            return ACCEPTED
        if self.revoked_at is not None:
            return REVOKED
        return PENDING if self.expires_at > now else EXPIRED

    def as_dict(self, now: datetime) -> dict[str, Any]:
        def iso(moment: datetime) -> str:
            return moment.isoformat().replace("+00:00", "Z")

        return {
            "id": self.id,
            "email": self.email,
            "role": self.role,
            "state": self.state(now),
            "created_at": iso(self.created_at),
            "expires_at": iso(self.expires_at),
            "last_sent_at": iso(self.last_sent_at),
            "sends": self.sends,
        }


@dataclass(frozen=True, slots=True)
class Preview:
    """What an invitation link shows before it is followed."""

    invitation: Invitation
    org_name: str


@dataclass(frozen=True, slots=True)
class Bounds:
    per_hour: int  # invitation mails an organization may send an hour (MENUS_INVITATIONS_PER_HOUR)
    pending: int  # pending invitations an organization may have (MENUS_MAX_PENDING_INVITATIONS)


@dataclass(frozen=True, slots=True)
class InvitationPage:
    invitations: list[Invitation]
    total: int
    next_cursor: str | None


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class Invitations:
    def __init__(
        self,
        engine: Engine,
        users: UserStore,
        outbox: Outbox,
        journal: Trail,
        bounds: Bounds,
        link: str,
        cursor_key: bytes,
        *,
        lifetime: timedelta = timedelta(days=7),
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        """``link``: the URL of the page an invitation's link opens (the console's), without its query."""
        self._engine = engine
        self._users = users
        self._outbox = outbox
        self._trail = journal
        self.bounds = bounds
        self._link = link
        self._cursors = CursorCodec(cursor_key)
        self.lifetime = lifetime
        self._clock = clock

    def now(self) -> datetime:
        return self._clock.now()

    # Owners and admins

    def invite(self, actor: Actor, email: str, role: str = "member") -> Invitation:
        """Invite ``email`` with ``role``: the invitation, its mail and its trail entry in one transaction."""
        with self._engine.connect() as connection, connection.begin():
            writing(connection)
            invitation, written = self.invite_in(connection, actor, email, role)
        trail.logged(written)
        return invitation

    def invite_in(
        self, connection: Connection, actor: Actor, email: str, role: str = "member"
    ) -> tuple[Invitation, trail.Written]:
        """``invite`` in the caller's transaction, begun as a writer (``writing``: a create of the management API
        with its idempotency key); the trail entry to log once it commits."""
        rules.check_invitation_role(actor, role)
        email = check_email(email)
        return self._invite(connection, actor, email, role)

    def _invite(self, connection: Connection, actor: Actor, email: str, role: str) -> tuple[Invitation, trail.Written]:
        at = self._clock.now()
        org_name = self._lock(connection, actor, at)
        key = email_key(email)
        member = connection.scalar(
            sa.select(users.c.id)
            .join(memberships, memberships.c.user_id == users.c.id)
            .where(users.c.email_key == key, memberships.c.org_id == actor.org_id)
        )
        if member is not None:
            raise rules.Conflict(f"{email} is already a member of {org_name}.")
        if connection.scalar(sa.select(invitations.c.id).where(_org(actor.org_id), _pending(at), _email(key))):
            raise rules.Conflict(f"{email} already has a pending invitation to {org_name}: send it again instead.")
        pending = connection.scalar(sa.select(sa.func.count()).where(_org(actor.org_id), _pending(at)))
        if int(pending or 0) >= self.bounds.pending:
            raise rules.Conflict(
                f"{org_name} has {self.bounds.pending} pending invitations, the most it may have: revoke one first."
            )
        token = secrets.token_urlsafe(32)
        invitation = Invitation(new_id("inv"), actor.org_id, email, role, at, at + self.lifetime, at, 1)
        connection.execute(
            invitations.insert().values(
                id=invitation.id,
                org_id=actor.org_id,
                email=email,
                email_key=key,
                role=role,
                token_hash=hash_token(token),
                invited_by=actor.user_id,
                invited_by_client=actor.client_id,
                created_at=at,
                expires_at=invitation.expires_at,
                last_sent_at=at,
                sends=1,
            )
        )
        self._mail(connection, invitation, token, org_name)
        return invitation, self._trail.record(connection, actor, trail.MEMBER_INVITED, invitation.id, role=role)

    def resend(self, actor: Actor, invitation_id: str) -> Invitation:
        """A new link, valid ``lifetime`` from now; the earlier one stops opening. Counted in the bound per hour."""
        rules.require_manager(actor, "send invitations")
        token = secrets.token_urlsafe(32)
        with self._engine.connect() as connection, connection.begin():
            writing(connection)
            at = self._clock.now()
            org_name = self._lock(connection, actor, at)
            invitation = self._pending_one(connection, actor, invitation_id, at)
            if invitation.role not in rules.assignable_roles(actor):
                raise rules.NotAllowed(f"Only an owner of {actor.whose} may send an owner's invitation.")
            connection.execute(
                invitations.update()
                .where(invitations.c.id == invitation.id)
                .values(
                    token_hash=hash_token(token),
                    expires_at=at + self.lifetime,
                    last_sent_at=at,
                    sends=invitations.c.sends + 1,
                )
            )
            invitation = self._get(connection, actor.org_id, invitation.id)
            self._mail(connection, invitation, token, org_name)
            written = self._trail.record(connection, actor, trail.INVITATION_RESENT, invitation.id)
        trail.logged(written)
        return invitation

    def revoke(self, actor: Actor, invitation_id: str) -> Invitation:
        """The link stops opening at once. An invitation no longer pending is ``Conflict``."""
        rules.require_manager(actor, "revoke invitations")
        with self._engine.begin() as connection:
            at = self._clock.now()
            invitation = self._pending_one(connection, actor, invitation_id, at)
            changed = connection.execute(
                invitations.update().where(invitations.c.id == invitation.id, _pending(at)).values(revoked_at=at)
            ).rowcount
            if changed != 1:
                raise rules.Conflict("This invitation is no longer pending.")
            written = self._trail.record(connection, actor, trail.INVITATION_REVOKED, invitation.id)
            invitation = self._get(connection, actor.org_id, invitation.id)
        trail.logged(written)
        return invitation

    def pending(self, org_id: str, limit: int = 100) -> list[Invitation]:
        """The organization's pending invitations, newest first (the console)."""
        return self.page(org_id, limit=limit).invitations

    def page(self, org_id: str, *, limit: int = 20, cursor: str | None = None) -> InvitationPage:
        """Pending invitations, newest first; ``InvalidCursor`` for a cursor not made for them."""
        at = self._clock.now()
        filters = f"invitations|{org_id}"
        base = sa.select(invitations).where(_org(org_id), _pending(at))
        query = base
        if cursor is not None:
            created, invitation_id = self._cursors.decode(cursor, filters)
            try:
                moment = datetime.fromisoformat(created)
            except ValueError:
                raise InvalidCursor("The cursor is not a cursor of this API.") from None
            query = query.where(
                sa.or_(
                    invitations.c.created_at < moment,
                    sa.and_(invitations.c.created_at == moment, invitations.c.id < invitation_id),
                )
            )
        query = query.order_by(invitations.c.created_at.desc(), invitations.c.id.desc()).limit(limit + 1)
        with self._engine.connect() as connection:
            rows = connection.execute(query).all()
            total = connection.scalar(sa.select(sa.func.count()).select_from(base.subquery()))
        found = [_invitation(row) for row in rows[:limit]]
        next_cursor = None
        if len(rows) > limit:
            next_cursor = self._cursors.encode((found[-1].created_at.isoformat(), found[-1].id), filters)
        return InvitationPage(found, int(total or 0), next_cursor)

    def get(self, org_id: str, invitation_id: str) -> Invitation:
        with self._engine.connect() as connection:
            return self._get(connection, org_id, invitation_id)

    # Whoever holds the link

    def preview(self, token: str) -> Preview | None:
        """The pending invitation a link's token opens, and its organization's name; None for any other token."""
        if not token or len(token) > 100:
            return None
        at = self._clock.now()
        with self._engine.connect() as connection:
            row = connection.execute(
                sa.select(invitations, organizations.c.name.label("org_name"))
                .join(organizations, organizations.c.id == invitations.c.org_id)
                .where(invitations.c.token_hash == hash_token(token), _pending(at))
            ).first()
        return Preview(_invitation(row), row.org_name) if row is not None else None

    def accept(self, token: str, user_id: str, network: str | None = None) -> Invitation:
        """The signed-in user ``user_id`` follows the link: they join its organization with its role (a member
        already keeps their role), in one transaction; ``rules.Unknown`` when the link no longer opens."""
        with self._engine.begin() as connection:
            invitation = self._spend(connection, token, user_id)
            if invitation is None:
                raise rules.Unknown("This invitation has expired, was revoked, or was already used.")
            actor = Actor.member(user_id, invitation.org_id, invitation.role, network)
            exists = connection.scalar(
                sa.select(memberships.c.role).where(
                    memberships.c.user_id == user_id, memberships.c.org_id == invitation.org_id
                )
            )
            if exists is None:
                connection.execute(
                    memberships.insert().values(
                        user_id=user_id, org_id=invitation.org_id, role=invitation.role, joined_at=self._clock.now()
                    )
                )
            connection.execute(
                users.update()
                .where(users.c.id == user_id, users.c.email_key == email_key(invitation.email))
                .values(email_verified=True)
            )
            written = self._trail.record(
                connection, actor, trail.INVITATION_ACCEPTED, invitation.id, role=invitation.role
            )
        trail.logged(written)
        return invitation

    def sign_up(self, token_hash: str, email: str, name: str, password: str, network: str | None = None) -> User:
        """Someone new signs up through the link (its token's hash, as the sign-in keeps it): their account joins its
        organization, and no organization is
        made for them (``UserStore.sign_up`` makes one). ``rules.Unknown`` when the link no longer opens;
        ``InvalidInput`` for an address taken or a field refused, and then nothing is spent."""
        email, name = check_email(email), check_name(name)
        password_hash = self._users.hash_password(password)  # before the transaction, which stays short
        try:
            with self._engine.begin() as connection:
                user_id = self._users.insert(connection, email, name, password_hash)
                invitation = self._spend_hash(connection, token_hash, user_id)
                if invitation is None:
                    raise rules.Unknown("This invitation has expired, was revoked, or was already used.")
                connection.execute(
                    memberships.insert().values(
                        user_id=user_id, org_id=invitation.org_id, role=invitation.role, joined_at=self._clock.now()
                    )
                )
                if email_key(email) == email_key(invitation.email):
                    connection.execute(users.update().where(users.c.id == user_id).values(email_verified=True))
                actor = Actor.member(user_id, invitation.org_id, invitation.role, network)
                written = self._trail.record(
                    connection, actor, trail.INVITATION_ACCEPTED, invitation.id, role=invitation.role
                )
        except IntegrityError:
            raise InvalidInput("a user with this email address already exists") from None
        trail.logged(written)
        return self._users.get(user_id)

    def opens(self, token_hash: str) -> Preview | None:
        """``preview`` by the token's hash (a sign-up carries the hash, never the token)."""
        at = self._clock.now()
        with self._engine.connect() as connection:
            row = connection.execute(
                sa.select(invitations, organizations.c.name.label("org_name"))
                .join(organizations, organizations.c.id == invitations.c.org_id)
                .where(invitations.c.token_hash == token_hash, _pending(at))
            ).first()
        return Preview(_invitation(row), row.org_name) if row is not None else None

    # Helpers

    def _spend(self, connection: Connection, token: str, user_id: str) -> Invitation | None:
        if not token or len(token) > 100:
            return None
        return self._spend_hash(connection, hash_token(token), user_id)

    def _spend_hash(self, connection: Connection, token_hash: str, user_id: str) -> Invitation | None:
        """Mark the pending invitation of this token hash accepted by ``user_id``; None when none is pending."""
        at = self._clock.now()
        where = (invitations.c.token_hash == token_hash, _pending(at))
        changed = connection.execute(invitations.update().where(*where).values(accepted_at=at, accepted_by=user_id))
        if changed.rowcount != 1:
            return None
        return _invitation(
            connection.execute(sa.select(invitations).where(invitations.c.token_hash == token_hash)).one()
        )

    def _lock(self, connection: Connection, actor: Actor, at: datetime) -> str:
        """Lock the organization's row (concurrent invitations are counted one after another) and check the bound
        per hour; the organization's name."""
        name = connection.scalar(
            sa.select(organizations.c.name).where(organizations.c.id == actor.org_id).with_for_update()
        )
        if name is None:
            raise rules.Unknown("There is no such organization.")
        sent = Trail.sends_since(connection, actor.org_id, at - timedelta(hours=1))
        if len(sent) >= self.bounds.per_hour:
            wait = sent[-self.bounds.per_hour] + timedelta(hours=1) - at
            raise rules.TooMany(
                f"{name} may send {self.bounds.per_hour} invitations an hour; try again later.",
                int(wait.total_seconds()) + 1,
            )
        return str(name)

    def _pending_one(self, connection: Connection, actor: Actor, invitation_id: str, at: datetime) -> Invitation:
        invitation = self._get(connection, actor.org_id, invitation_id)
        if invitation.state(at) != PENDING:
            raise rules.Conflict("This invitation is no longer pending.")
        return invitation

    def _get(self, connection: Connection, org_id: str, invitation_id: str) -> Invitation:
        row = connection.execute(sa.select(invitations).where(invitations.c.id == invitation_id, _org(org_id))).first()
        if row is None:
            raise rules.Unknown("The organization has no invitation with this id.")
        return _invitation(row)

    def _mail(self, connection: Connection, invitation: Invitation, token: str, org_name: str) -> None:
        days = int(self.lifetime.total_seconds() // 86400)
        valid_for = f"{days} days" if days > 1 else f"{int(self.lifetime.total_seconds() // 3600)} hours"
        params = {
            "org_name": org_name,
            "role": invitation.role,
            "link": f"{self._link}?token={token}",
            "valid_for": valid_for,
        }
        self._outbox.enqueue(Mail(KIND, invitation.email, params), connection)

    @staticmethod
    def purge(connection: Connection, before: datetime) -> int:
        """Forget invitations that expired before ``before``; how many."""
        return int(connection.execute(invitations.delete().where(invitations.c.expires_at < before)).rowcount)


def _org(org_id: str) -> sa.ColumnElement[bool]:
    return invitations.c.org_id == org_id


def _email(key: str) -> sa.ColumnElement[bool]:
    return invitations.c.email_key == key


def _pending(at: datetime) -> sa.ColumnElement[bool]:
    return sa.and_(
        invitations.c.accepted_at.is_(None), invitations.c.revoked_at.is_(None), invitations.c.expires_at > at
    )


def _invitation(row: Any) -> Invitation:
    return Invitation(
        id=row.id,
        org_id=row.org_id,
        email=row.email,
        role=row.role,
        created_at=utc(row.created_at),
        expires_at=utc(row.expires_at),
        last_sent_at=utc(row.last_sent_at),
        sends=int(row.sends),
        accepted_at=utc(row.accepted_at) if row.accepted_at else None,
        revoked_at=utc(row.revoked_at) if row.revoked_at else None,
    )
