"""Authorization codes (RFC 6749 §4.1.2): 60 seconds, single use, stored as hashes.

RFC 6749 §4.1.2: the code is single-use; a replay is refused and every token
issued from it is revoked. Consuming a code is one atomic UPDATE, so two
concurrent exchanges cannot both succeed, on SQLite or PostgreSQL. In the same transaction, the client is
recorded as holding the code's browser session (identity/sessions/backchannel_logout.py: it gets an ID token with
that ``sid``, so signing out tells it).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from identity.common.clock import SYSTEM_CLOCK, Clock
from identity.common.database import use_once
from identity.common.digests import sha256_hex
from identity.common.tables import authorization_codes
from identity.sessions.backchannel_logout import record_holder
from identity.tokens.granted import Granted, granted_columns, granted_of_row


@dataclass(frozen=True, slots=True)
class CodeGrant(Granted):
    """What the code stands for: the consented authorization, bound to a client and a redirect URI."""

    redirect_uri: str
    nonce: str | None
    code_challenge: str | None


@dataclass(frozen=True, slots=True)
class Consumed:
    grant: CodeGrant | None  # None: unknown, expired or already used
    replayed: str | None = None  # the grant id of a code presented a second time


hash_code = sha256_hex


class CodeStore:
    """The one module that writes ``authorization_codes``."""

    def __init__(self, engine: Engine, lifetime: timedelta, clock: Clock = SYSTEM_CLOCK) -> None:
        self._engine = engine
        self._lifetime = lifetime
        self._clock = clock

    def record(self, grant: CodeGrant) -> str:
        """A new code for ``grant`` (stored only as a hash)."""
        code = secrets.token_urlsafe(32)
        at = self._clock.now()
        with self._engine.begin() as connection:
            connection.execute(
                authorization_codes.insert().values(
                    code_hash=hash_code(code),
                    **granted_columns(grant),
                    redirect_uri=grant.redirect_uri,
                    nonce=grant.nonce,
                    code_challenge=grant.code_challenge,
                    expires_at=at + self._lifetime,
                )
            )
        return code

    def consume(self, code: str, client_id: str) -> Consumed:
        """Mark the code used and return its grant; a second use by its client reports the replay.

        Only the client the code was issued to can use it up: another client's attempt leaves it alone.
        """
        at = self._clock.now()
        table = authorization_codes
        code_hash = hash_code(code)
        with self._engine.begin() as connection:
            claimed = use_once(connection, table, at, table.c.code_hash == code_hash, table.c.client_id == client_id)
            row = connection.execute(sa.select(table).where(table.c.code_hash == code_hash)).first()
            if claimed and row is not None:
                record_holder(connection, row.session_id, row.client_id, row.user_id, at)
        if row is None or row.client_id != client_id:
            return Consumed(None)
        if not claimed:
            return Consumed(None, replayed=row.grant_id if row.used_at is not None else None)
        return Consumed(
            CodeGrant(
                **granted_of_row(row),
                redirect_uri=row.redirect_uri,
                nonce=row.nonce,
                code_challenge=row.code_challenge,
            )
        )

    @staticmethod
    def purge(connection: Connection, expired_before: datetime) -> int:
        """Delete the codes expired before ``expired_before``; how many."""
        table = authorization_codes
        return connection.execute(table.delete().where(table.c.expires_at < expired_before)).rowcount
