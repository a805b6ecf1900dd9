"""Browser sessions: who is signed in, since when, and in which organization.

The browser holds a 256-bit random secret in a cookie; the database keeps only
its SHA-256 hash and a public id, the ``sid`` claim of the tokens issued in the
session. Every sign-in gives the browser a new secret (no session fixation). Signing
in again as the same user renews the browser's session (same ``sid``, new
``auth_time``); signing in as someone else ends it, telling the clients that hold
it as a sign-out does (identity/backchannel_logout.py), and starts a new one.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from identity import backchannel_logout
from identity.clock import SYSTEM_CLOCK, Clock, new_id, utc
from identity.digests import sha256_hex
from identity.outbox import Doorbell
from identity.tables import browser_sessions


@dataclass(frozen=True, slots=True)
class BrowserSession:
    id: str
    user_id: str
    org_id: str | None
    auth_time: datetime
    expires_at: datetime


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

    def start(self, user_id: str, org_id: str | None, replacing: str | None = None) -> tuple[BrowserSession, str]:
        """Start a session after a sign-in; returns it and its new cookie secret.

        ``replacing`` is the browser's cookie secret. Signing in again as the same user (``prompt=login``,
        ``max_age``) renews that session: a new secret (no fixation) and ``auth_time``, the same ``sid``, so
        the grants made in it live on (a replaced session is not a sign-out; only signing out ends them).
        Signing in as someone else ends the browser's previous session, as a sign-out would.
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
                        browser_sessions.update()
                        .where(browser_sessions.c.id == previous.id, browser_sessions.c.secret_hash == old_hash)
                        .values(secret_hash=hash_secret(secret), org_id=org_id, auth_time=at, expires_at=expires_at)
                    )
                    if renewed.rowcount == 1:  # else a concurrent sign-in renewed it first: start another
                        return BrowserSession(previous.id, user_id, org_id, at, expires_at), secret
                else:
                    ended = connection.execute(
                        browser_sessions.update()
                        .where(browser_sessions.c.secret_hash == old_hash)
                        .where(browser_sessions.c.ended_at.is_(None))
                        .values(ended_at=at)
                    ).rowcount
                    if previous is not None and ended:  # as a sign-out: its clients are told (back-channel logout)
                        told = backchannel_logout.notify_session(connection, previous.id, at)
            session = BrowserSession(new_id("ses"), user_id, org_id, at, expires_at)
            connection.execute(
                browser_sessions.insert().values(
                    id=session.id,
                    secret_hash=hash_secret(secret),
                    user_id=user_id,
                    org_id=org_id,
                    auth_time=at,
                    expires_at=session.expires_at,
                )
            )
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
        query = sa.select(browser_sessions).where(
            which, browser_sessions.c.ended_at.is_(None), browser_sessions.c.expires_at > self._clock.now()
        )
        with self._engine.connect() as connection:
            row = connection.execute(query).first()
        if row is None:
            return None
        return BrowserSession(row.id, row.user_id, row.org_id, utc(row.auth_time), utc(row.expires_at))

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

    def end(self, session_id: str) -> bool:
        """End the session (sign-out); True when it was live."""
        with self._engine.begin() as connection:
            result = connection.execute(
                browser_sessions.update()
                .where(browser_sessions.c.id == session_id, browser_sessions.c.ended_at.is_(None))
                .values(ended_at=self._clock.now())
            )
        return result.rowcount == 1
