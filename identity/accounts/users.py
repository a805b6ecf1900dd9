"""Users, their passwords (Argon2id) and their memberships of organizations.

Email addresses are unique and compared case-insensitively. Every user belongs
to at least one organization, with the role owner, admin or member.

Each user has a credential version (docs/identity.md, "Credential versions"): every password change, reset and
disable moves it on, in the transaction that ends the user's sessions and tokens. A sign-in reads it with the
password hash it verifies; its session, and every code and token issued in it, carry that version and work only
while it is still the user's. RFC 9700 §4.14: what the old credential obtained must not outlive it, even when a
sign-in with it races the change.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from identity.accounts.organizations import Organization, OrganizationStore
from identity.accounts.passwords import OWASP_ARGON2ID, PasswordHashing, WeakPassword
from identity.common.clock import SYSTEM_CLOCK, Clock, new_id, utc
from identity.common.errors import InvalidInput, UnknownRecord
from identity.common.tables import memberships, organizations, users
from identity.common.text import display_name, has_control
from identity.common.vocabulary import ROLES as ROLES

EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")


@dataclass(frozen=True, slots=True)
class Membership:
    org: Organization
    role: str
    joined_at: datetime


@dataclass(frozen=True, slots=True)
class User:
    id: str
    email: str
    name: str
    memberships: tuple[Membership, ...] = field(default=())
    email_verified: bool = False  # its owner followed a verification link sent to this address
    disabled: bool = False  # `users disable`: no sign-in, and no token is issued or served for this user
    credential_version: int = 0  # moved on by every password change, reset and disable (module docstring)

    def membership(self, org_id: str) -> Membership | None:
        return next((m for m in self.memberships if m.org.id == org_id), None)

    def as_dict(self) -> dict[str, object]:
        orgs = [{"id": m.org.id, "name": m.org.name, "role": m.role} for m in self.memberships]
        return {"id": self.id, "email": self.email, "name": self.name, "orgs": orgs, "disabled": self.disabled}


def email_key(email: str) -> str:
    return email.strip().casefold()


def check_email(email: str) -> str:
    email = email.strip()
    if len(email) > 320 or not EMAIL.fullmatch(email) or has_control(email):
        raise InvalidInput("the email address is not valid")
    return email


def check_name(name: str) -> str:
    return display_name(name, "the name")


class CredentialMoved(Exception):
    """The user's credential version is no longer the one a sign-in, a link or a change was based on (a password
    was changed or reset, or the user disabled, meanwhile), or the user is gone: nothing was written."""


class UserStore:
    def __init__(
        self, engine: Engine, clock: Clock = SYSTEM_CLOCK, *, hashing: PasswordHashing = OWASP_ARGON2ID
    ) -> None:
        self._engine = engine
        self._clock = clock
        self._hashing = (
            hashing  # Argon2id at OWASP's parameters (identity/accounts/passwords.py); tests hand in a cheaper one
        )

    def create(self, email: str, name: str, password: str, orgs: Sequence[tuple[str, str]]) -> User:
        """Create a user who belongs to ``orgs`` ((org id, role) pairs, at least one)."""
        email, name = check_email(email), check_name(name)
        if not orgs:
            raise InvalidInput("a user belongs to at least one organization")
        for _, role in orgs:
            if role not in ROLES:
                raise InvalidInput(f"the role must be one of {', '.join(ROLES)}")
        password_hash = self._hash(password)
        user_id = new_id("usr")
        try:
            with self._engine.begin() as connection:
                known = set(
                    connection.scalars(
                        sa.select(organizations.c.id).where(organizations.c.id.in_([o for o, _ in orgs]))
                    )
                )
                missing = [org_id for org_id, _ in orgs if org_id not in known]
                if missing:
                    raise InvalidInput(f"no organization has the id {missing[0]!r}")
                self._insert(connection, user_id, email, name, password_hash)
                joined = self._clock.now()
                for org_id, role in dict(orgs).items():
                    connection.execute(
                        memberships.insert().values(user_id=user_id, org_id=org_id, role=role, joined_at=joined)
                    )
        except IntegrityError:
            raise InvalidInput("a user with this email address already exists") from None
        return self.get(user_id)

    def sign_up(self, email: str, name: str, password: str, organization: str) -> User:
        """Create a user and a new organization they own, in one transaction."""
        email, name = check_email(email), check_name(name)
        password_hash = self._hash(password)
        user_id = new_id("usr")
        try:
            with self._engine.begin() as connection:
                org = OrganizationStore.create_in(connection, organization, self._clock.now())
                self._insert(connection, user_id, email, name, password_hash)
                connection.execute(
                    memberships.insert().values(
                        user_id=user_id, org_id=org.id, role="owner", joined_at=self._clock.now()
                    )
                )
        except IntegrityError:
            raise InvalidInput("a user with this email address already exists") from None
        return self.get(user_id)

    def authenticate(self, email: str, password: str) -> User | None:
        """The user whose email and password these are, or None (taking as long either way). Its
        ``credential_version`` is the one read with the hash that was verified, whatever happened since: a session
        started on this sign-in is refused if it is no longer current (``SessionStore.start``)."""
        with self._engine.connect() as connection:
            row = connection.execute(_CREDENTIAL, {"email_key": email_key(email)}).first()
        if not self._hashing.verify(row.password_hash if row else None, password) or row is None:
            return None
        return replace(self.get(row.id), credential_version=int(row.credential_version))

    def account_id(self, email: str) -> str | None:
        """The id of the account with this address, if any (for the audit line of a failed sign-in)."""
        with self._engine.connect() as connection:
            found = connection.scalar(sa.select(users.c.id).where(users.c.email_key == email_key(email)))
        return str(found) if found is not None else None

    def _hash(self, password: str) -> str:
        try:
            return self.hash_password(password)
        except WeakPassword as error:
            raise InvalidInput(str(error)) from None

    def hash_password(self, password: str) -> str:
        """The hash of a new password with this store's hashing (``WeakPassword`` for one that would be refused),
        made before the transaction that stores it, which stays short."""
        return self._hashing.hash(password)

    def get(self, user_id: str) -> User:
        with self._engine.connect() as connection:
            row = connection.execute(sa.select(users).where(users.c.id == user_id)).first()
            if row is None:
                raise UnknownRecord(user_id)
            return _user(row, _memberships(connection, [row.id])[row.id])

    def member(self, user_id: str, org_id: str) -> tuple[User, Membership] | None:
        """The user and their membership of the organization, or None when either is gone or the user is
        disabled (every grant, userinfo and the sign-in flow ask here: a disabled user gets nothing)."""
        try:
            user = self.get(user_id)
        except UnknownRecord:
            return None
        if user.disabled:
            return None
        membership = user.membership(org_id)
        return (user, membership) if membership else None

    @contextmanager
    def transaction(self) -> Iterator[sa.Connection]:
        """One transaction on the users' database, for a change of credential and all it ends (``move_credential``
        with ``Revoking.revoke_user_in``)."""
        with self._engine.begin() as connection:
            yield connection

    @staticmethod
    def move_credential(
        connection: sa.Connection, user_id: str, *, verified: int | None = None, password_hash: str | None = None
    ) -> None:
        """In the caller's transaction: move the user's credential version on, with a new password hash if given.
        With ``verified``, only from that version (the one a sign-in, a link or a change was based on): else
        ``CredentialMoved`` and nothing changes. On PostgreSQL the row stays locked until the commit, so a
        concurrent change waits and then finds the version moved."""
        where = [users.c.id == user_id]
        if verified is not None:
            where.append(users.c.credential_version == verified)
        values: dict[str, Any] = {"credential_version": users.c.credential_version + 1}
        if password_hash is not None:
            values["password_hash"] = password_hash
        if connection.execute(users.update().where(*where).values(**values)).rowcount != 1:
            raise CredentialMoved(user_id)

    def mark_email_verified(self, user_id: str, email: str) -> bool:
        """Mark the address verified, only while it is still the user's (a changed address stays unverified)."""
        with self._engine.begin() as connection:
            changed = connection.execute(
                users.update()
                .where(users.c.id == user_id, users.c.email_key == email_key(email))
                .values(email_verified=True)
            ).rowcount
        return bool(changed)

    def set_disabled(self, connection: sa.Connection, user_id: str, disabled: bool) -> bool:
        """In the caller's transaction: disable or enable the user; True when that changed something (disabling
        twice keeps the first time). Disabling moves the credential version on: whatever the user was signed in
        with, or is signing in with at this moment, stops working."""
        if disabled:
            update = users.update().where(users.c.id == user_id, users.c.disabled_at.is_(None))
            values: dict[str, Any] = {
                "disabled_at": self._clock.now(),
                "credential_version": users.c.credential_version + 1,
            }
        else:
            update = users.update().where(users.c.id == user_id, users.c.disabled_at.is_not(None))
            values = {"disabled_at": None}
        return bool(connection.execute(update.values(**values)).rowcount)

    def list(self) -> list[User]:
        with self._engine.connect() as connection:
            rows = connection.execute(sa.select(users).order_by(users.c.email_key)).all()
            member = _memberships(connection, [row.id for row in rows])
        return [_user(row, member[row.id]) for row in rows]

    def insert(self, connection: sa.Connection, email: str, name: str, password_hash: str) -> str:
        """In the caller's transaction: a new user with this (checked) address, name and password hash, in no
        organization yet (the caller adds the membership: signing up through an invitation); their id.
        ``IntegrityError`` when the address is taken."""
        user_id = new_id("usr")
        self._insert(connection, user_id, check_email(email), check_name(name), password_hash)
        return user_id

    def _insert(self, connection: sa.Connection, user_id: str, email: str, name: str, password_hash: str) -> None:
        connection.execute(
            users.insert().values(
                id=user_id,
                email=email,
                email_key=email_key(email),
                name=name,
                password_hash=password_hash,
                created_at=self._clock.now(),
            )
        )


# Built once: every sign-in reads the hash it verifies with the credential version that hash belongs to.
_CREDENTIAL = sa.select(users.c.id, users.c.password_hash, users.c.credential_version).where(
    users.c.email_key == sa.bindparam("email_key")
)


def _user(row: sa.Row[Any], memberships_of_user: tuple[Membership, ...]) -> User:
    return User(
        row.id,
        row.email,
        row.name,
        memberships_of_user,
        email_verified=bool(row.email_verified),
        disabled=row.disabled_at is not None,
        credential_version=int(row.credential_version),
    )


def _memberships(connection: sa.Connection, user_ids: list[str]) -> dict[str, tuple[Membership, ...]]:
    query = (
        sa.select(memberships, organizations.c.name, organizations.c.slug)
        .join(organizations, organizations.c.id == memberships.c.org_id)
        .where(memberships.c.user_id.in_(user_ids))
        .order_by(organizations.c.name, organizations.c.id)
    )
    found: dict[str, list[Membership]] = {user_id: [] for user_id in user_ids}
    for row in connection.execute(query):
        org = Organization(row.org_id, row.name, row.slug)
        found[row.user_id].append(Membership(org, row.role, utc(row.joined_at)))
    return {user_id: tuple(items) for user_id, items in found.items()}
