"""Browser sessions: who is signed in, since when, and in which organization.

The browser holds a 256-bit random secret in a cookie; the database keeps only
its SHA-256 hash and a public id, the ``sid`` claim of the tokens issued in the
session. Every sign-in starts a new session (a new id and secret: no session
fixation) and ends the one the browser had.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from identity.clock import new_id, now, utc
from identity.tables import browser_sessions


@dataclass(frozen=True, slots=True)
class BrowserSession:
    id: str
    user_id: str
    org_id: str | None
    auth_time: datetime
    expires_at: datetime


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class SessionStore:
    def __init__(self, engine: Engine, lifetime: timedelta) -> None:
        self._engine = engine
        self.lifetime = lifetime

    def start(self, user_id: str, org_id: str | None, replacing: str | None = None) -> tuple[BrowserSession, str]:
        """Start a session after a sign-in; end the browser's previous one. Returns it and its cookie secret."""
        secret = secrets.token_urlsafe(32)
        at = now()
        session = BrowserSession(new_id("ses"), user_id, org_id, at, at + self.lifetime)
        with self._engine.begin() as connection:
            if replacing:
                connection.execute(
                    browser_sessions.update()
                    .where(browser_sessions.c.secret_hash == hash_secret(replacing))
                    .where(browser_sessions.c.ended_at.is_(None))
                    .values(ended_at=at)
                )
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
        return session, secret

    def current(self, secret: str | None) -> BrowserSession | None:
        """The live session whose cookie secret this is, or None."""
        return self._live(browser_sessions.c.secret_hash == hash_secret(secret)) if secret else None

    def get(self, session_id: str) -> BrowserSession | None:
        """The live session with this public id, or None."""
        return self._live(browser_sessions.c.id == session_id)

    def _live(self, which: sa.ColumnElement[bool]) -> BrowserSession | None:
        query = sa.select(browser_sessions).where(
            which, browser_sessions.c.ended_at.is_(None), browser_sessions.c.expires_at > now()
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

    def end(self, session_id: str) -> bool:
        """End the session (sign-out); True when it was live."""
        with self._engine.begin() as connection:
            result = connection.execute(
                browser_sessions.update()
                .where(browser_sessions.c.id == session_id, browser_sessions.c.ended_at.is_(None))
                .values(ended_at=now())
            )
        return result.rowcount == 1
