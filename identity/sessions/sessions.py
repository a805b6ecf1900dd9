"""Browser sessions: who is signed in, since when, and in which organization.

The browser holds a 256-bit random secret in a cookie; the database keeps only
its SHA-256 hash and a public id, the ``sid`` claim of the tokens issued in the
session. Every sign-in gives the browser a new secret (no session fixation). Signing
in again as the same user renews the browser's session (same ``sid``, new
``auth_time``); signing in as someone else ends it, telling the clients that hold
it as a sign-out does (identity/sessions/backchannel_logout.py), and starts a new one.

A session records the user's credential version its sign-in verified (identity/accounts/users.py). It is written only
while that version is still the user's, by the statement that writes it (on PostgreSQL it waits for a change
of credential in progress, then sees it); and it is live only while the version is still the user's, checked by
the statement that reads it. A sign-in with a password that a reset, a change or a disable replaced at that
very moment gets no session, or a session that nothing accepts.
"""

from __future__ import annotations

import secrets
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from identity.accounts.users import CredentialMoved
from identity.common.clock import SYSTEM_CLOCK, Clock, new_id, utc
from identity.common.digests import sha256_hex
from identity.common.tables import browser_sessions, users
from identity.mail.outbox import Doorbell
from identity.sessions import backchannel_logout

PASSWORD = "pwd"  # RFC 8176 §2: a password sign-in
FEDERATED = "fed"  # a sign-in through an organization's own OpenID provider (identity/federation/)


@dataclass(frozen=True, slots=True)
class BrowserSession:
    id: str
    user_id: str
    org_id: str | None
    auth_time: datetime
    expires_at: datetime
    credential_version: int = 0  # the user's credential version its sign-in verified
    amr: str = "pwd"  # how its sign-in was made: PASSWORD or FEDERATED


hash_secret = sha256_hex


class SessionStore:
    def __init__(
        self, engine: Engine, lifetime: timedelta, clock: Clock = SYSTEM_CLOCK, logouts: Doorbell | None = None
    ) -> None:
        """``logouts``: rung once a sign-in that ended another user's session (and wrote its logout tokens) has
        committed."""
        self._engine = engine
        self.lifetime = lifetime
        self._clock = clock
        self._logouts = logouts

    def start(
        self,
        user_id: str,
        org_id: str | None,
        credential_version: int,
        replacing: str | None = None,
        amr: str = PASSWORD,
    ) -> tuple[BrowserSession, str]:
        """``_start``, then the user's last sign-in (the members list), in a short transaction of its own after the
        session's: the sign-in's never waits on it."""
        started = self._start(user_id, org_id, credential_version, replacing, amr)
        with self._engine.begin() as connection:
            connection.execute(_SIGNED_IN, {"user_id": user_id, "at": started[0].auth_time})
        return started

    def _start(
        self,
        user_id: str,
        org_id: str | None,
        credential_version: int,
        replacing: str | None = None,
        amr: str = PASSWORD,
    ) -> tuple[BrowserSession, str]:
        """Start a session after a sign-in that verified ``credential_version``; returns it and its new cookie
        secret. ``CredentialMoved`` (nothing written) when that version is no longer the user's.

        ``replacing`` is the browser's cookie secret. Signing in again as the same user (``prompt=login``,
        ``max_age``) renews that session: a new secret (no fixation), ``auth_time`` and credential version, the
        same ``sid``, so the grants made in it live on (a replaced session is not a sign-out; only signing out
        ends them). A session signed out meanwhile is not renewed: a new one starts. Signing in as someone else
        ends the browser's previous session, as a sign-out would.
        """
        secret = secrets.token_urlsafe(32)
        at = self._clock.now()
        expires_at = at + self.lifetime
        told = 0
        with self._engine.begin() as connection:
            if replacing:
                old_hash = hash_secret(replacing)
                previous = connection.execute(
                    sa.select(browser_sessions.c.id, browser_sessions.c.user_id).where(
                        browser_sessions.c.secret_hash == old_hash,
                        browser_sessions.c.ended_at.is_(None),
                        browser_sessions.c.expires_at > at,
                    )
                ).first()
                if previous is not None and previous.user_id == user_id:
                    renewed = connection.execute(
                        _RENEW,
                        {
                            "verified_user": user_id,
                            "version": credential_version,
                            "session_id": previous.id,
                            "old_hash": old_hash,
                            "at": at,
                            "new_hash": hash_secret(secret),
                            "new_org": org_id,
                            "new_expiry": expires_at,
                            "amr": amr,
                        },
                    ).first()
                    if renewed is not None:  # else signed out, or renewed by a concurrent sign-in, meanwhile
                        renewed_session = BrowserSession(
                            previous.id, user_id, org_id, at, expires_at, credential_version, amr
                        )
                        return renewed_session, secret
                else:
                    ended = connection.execute(
                        browser_sessions.update()
                        .where(browser_sessions.c.secret_hash == old_hash)
                        .where(browser_sessions.c.ended_at.is_(None))
                        .values(ended_at=at)
                    ).rowcount
                    if previous is not None and ended:  # as a sign-out: its clients are told (back-channel logout)
                        told = backchannel_logout.notify_session(connection, previous.id, at)
            session = BrowserSession(new_id("ses"), user_id, org_id, at, expires_at, credential_version, amr)
            started = connection.execute(
                _START_LOCKING if connection.dialect.name == "postgresql" else _START,
                {
                    "version": credential_version,
                    "id": session.id,
                    "user_id": user_id,
                    "secret_hash": hash_secret(secret),
                    "org_id": org_id,
                    "auth_time": at,
                    "expires_at": expires_at,
                    "credential_version": credential_version,
                    "amr": amr,
                },
            ).first()
            if started is None:
                raise CredentialMoved(user_id)  # the transaction rolls back: nothing of this sign-in is written
        if told and self._logouts is not None:  # committed: the node's worker posts them now
            self._logouts.ring()
        return session, secret

    def current(self, secret: str | None) -> BrowserSession | None:
        """The live session whose cookie secret this is, or None."""
        return self._live(browser_sessions.c.secret_hash == hash_secret(secret)) if secret else None

    def get(self, session_id: str) -> BrowserSession | None:
        """The live session with this public id, or None."""
        return self._live(browser_sessions.c.id == session_id)

    def _live(self, which: sa.ColumnElement[bool]) -> BrowserSession | None:
        """The session that is neither ended nor expired, and whose sign-in's credential version is still the
        user's (the user's row joined in the same statement)."""
        query = (
            sa.select(browser_sessions)
            .join(users, users.c.id == browser_sessions.c.user_id)
            .where(
                which,
                browser_sessions.c.ended_at.is_(None),
                browser_sessions.c.expires_at > self._clock.now(),
                users.c.credential_version == browser_sessions.c.credential_version,
            )
        )
        with self._engine.connect() as connection:
            row = connection.execute(query).first()
        if row is None:
            return None
        return BrowserSession(
            row.id,
            row.user_id,
            row.org_id,
            utc(row.auth_time),
            utc(row.expires_at),
            int(row.credential_version),
            row.amr,
        )

    def choose_organization(self, session_id: str, org_id: str) -> None:
        with self._engine.begin() as connection:
            connection.execute(
                browser_sessions.update().where(browser_sessions.c.id == session_id).values(org_id=org_id)
            )

    def ended(self, session_id: str) -> bool:
        """True when the session was signed out (an expired session has not ended: offline access lives on)."""
        query = sa.select(browser_sessions.c.ended_at).where(browser_sessions.c.id == session_id)
        with self._engine.connect() as connection:
            return connection.scalar(query) is not None

    @staticmethod
    def end_all_of(connection: Connection, user_id: str, at: datetime) -> int:
        """End every live browser session of a user (a password reset); how many."""
        return int(
            connection.execute(
                browser_sessions.update()
                .where(browser_sessions.c.user_id == user_id, browser_sessions.c.ended_at.is_(None))
                .values(ended_at=at)
            ).rowcount
        )

    @staticmethod
    def end_in_organization(
        connection: Connection, user_id: str, org_id: str, at: datetime, also: Collection[str] = ()
    ) -> list[str]:
        """End the user's live browser sessions signed in to the organization (they left it, or were removed): the
        sessions whose organization it is, and those among ``also`` (where tokens for it were issued); their ids."""
        where = (
            browser_sessions.c.user_id == user_id,
            sa.or_(browser_sessions.c.org_id == org_id, browser_sessions.c.id.in_(list(also))),
            browser_sessions.c.ended_at.is_(None),
        )
        ids = [str(row.id) for row in connection.execute(sa.select(browser_sessions.c.id).where(*where))]
        if ids:
            connection.execute(browser_sessions.update().where(*where).values(ended_at=at))
        return ids

    def end(self, session_id: str) -> bool:
        """End the session (sign-out); True when it was live."""
        with self._engine.begin() as connection:
            result = connection.execute(
                browser_sessions.update()
                .where(browser_sessions.c.id == session_id, browser_sessions.c.ended_at.is_(None))
                .values(ended_at=self._clock.now())
            )
        return result.rowcount == 1


# Built once (the sign-in's statements). The user's credential version must still be the one the sign-in
# verified: the row of ``users`` is the statement's guard.
_VERIFIED = sa.exists().where(
    users.c.id == sa.bindparam("verified_user"), users.c.credential_version == sa.bindparam("version")
)
_RENEW = (
    browser_sessions.update()
    .where(
        browser_sessions.c.id == sa.bindparam("session_id"),
        browser_sessions.c.secret_hash == sa.bindparam("old_hash"),
        browser_sessions.c.ended_at.is_(None),
        browser_sessions.c.expires_at > sa.bindparam("at"),
        _VERIFIED,
    )
    .values(
        secret_hash=sa.bindparam("new_hash"),
        org_id=sa.bindparam("new_org"),
        auth_time=sa.bindparam("at"),
        expires_at=sa.bindparam("new_expiry"),
        credential_version=sa.bindparam("version"),
        amr=sa.bindparam("amr"),
    )
    .returning(browser_sessions.c.id)
)
_SIGNED_IN = users.update().where(users.c.id == sa.bindparam("user_id")).values(last_sign_in_at=sa.bindparam("at"))
_START_COLUMNS = ("id", "secret_hash", "user_id", "org_id", "auth_time", "expires_at", "credential_version", "amr")
_VERIFIED_ROW = sa.select(*(sa.bindparam(name, type_=browser_sessions.c[name].type) for name in _START_COLUMNS)).where(
    users.c.id == sa.bindparam("user_id"), users.c.credential_version == sa.bindparam("version")
)
_START = browser_sessions.insert().from_select(_START_COLUMNS, _VERIFIED_ROW).returning(browser_sessions.c.id)
# PostgreSQL: FOR SHARE waits for a change of credential that holds the user's row, then reads its outcome (a
# plain read would see the version before that change commits). SQLite has one writer: the insert waits anyway.
_START_LOCKING = (
    browser_sessions.insert()
    .from_select(_START_COLUMNS, _VERIFIED_ROW.with_for_update(read=True))
    .returning(browser_sessions.c.id)
)
