"""The developer console's sessions, on the server: the console's cookie names one, and signing out ends it.

The cookie alone (sealed, with a lifetime) cannot be withdrawn: a copy of it would open the console until it
expired. Each console session therefore has a row in the state database, keyed by the SHA-256 of a random id
the cookie carries; the console admits a cookie only while its row lives, and signing out ends the row, for
every node at once. An ended or expired row is purged (``identity.purge``): a missing row admits nothing.
"""

from __future__ import annotations

import secrets
from datetime import timedelta

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from identity.common.clock import SYSTEM_CLOCK, Clock
from identity.common.digests import sha256_hex
from identity.common.tables import console_sessions


class ConsoleSessionStore:
    def __init__(self, engine: Engine, lifetime: timedelta, clock: Clock = SYSTEM_CLOCK) -> None:
        self._engine = engine
        self._lifetime = lifetime
        self._clock = clock

    def start(self, user_id: str) -> str:
        """A new session of ``user_id``; its id (256 random bits) goes in the cookie, only its hash is kept."""
        session_id = secrets.token_urlsafe(32)
        with self._engine.begin() as connection:
            connection.execute(
                console_sessions.insert().values(
                    id_hash=sha256_hex(session_id), user_id=user_id, expires_at=self._clock.now() + self._lifetime
                )
            )
        return session_id

    def live(self, session_id: str, user_id: str) -> bool:
        """True while the session exists, is the user's, has not ended and has not expired."""
        table = console_sessions
        query = sa.select(table.c.id_hash).where(
            table.c.id_hash == sha256_hex(session_id),
            table.c.user_id == user_id,
            table.c.ended_at.is_(None),
            table.c.expires_at > self._clock.now(),
        )
        with self._engine.connect() as connection:
            return connection.scalar(query) is not None

    def end(self, session_id: str) -> None:
        """Sign-out: the session opens nothing any more, on any node."""
        table = console_sessions
        with self._engine.begin() as connection:
            connection.execute(
                table.update()
                .where(table.c.id_hash == sha256_hex(session_id), table.c.ended_at.is_(None))
                .values(ended_at=self._clock.now())
            )
