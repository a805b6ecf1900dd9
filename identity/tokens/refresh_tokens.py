"""Refresh tokens (RFC 6749 §6): the one module that writes ``refresh_tokens``.

Refresh tokens are opaque 256-bit values stored only as SHA-256 hashes, grouped in families (one per
authorization, its ``grant_id``) that share an expiry. RFC 9700 §4.14.2: each use rotates the token,
and rotating is one atomic statement, so two requests presenting the same token cannot both win.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from identity.common.clock import SYSTEM_CLOCK, Clock, new_id, utc
from identity.common.digests import sha256_hex
from identity.common.tables import refresh_tokens
from identity.common.token_tables import TokenTable, revoke_live
from identity.tokens.granted import Granted, granted_columns, granted_fields, granted_of_row


@dataclass(frozen=True, slots=True)
class RefreshTokenRecord(Granted):
    """A refresh token of the family ``grant_id``, as recorded: the grant, and when the token was issued and its
    family expires."""

    issued_at: datetime
    expires_at: datetime

    @classmethod
    def of(cls, granted: Granted, issued_at: datetime, expires_at: datetime) -> RefreshTokenRecord:
        return cls(**granted_fields(granted), issued_at=issued_at, expires_at=expires_at)


@dataclass(frozen=True, slots=True)
class RefreshToken(RefreshTokenRecord):
    """A refresh token as read back: its record, its id and hash, and whether it was used or revoked."""

    id: str
    token_hash: str
    rotated: bool
    revoked: bool

    def live(self, at: datetime) -> bool:
        return not self.rotated and not self.revoked and self.expires_at > at


hash_token = sha256_hex


class RefreshTokenStore(TokenTable):
    _table = refresh_tokens

    def __init__(self, engine: Engine, clock: Clock = SYSTEM_CLOCK) -> None:
        self._engine = engine
        self._clock = clock

    def record(self, token: str, record: RefreshTokenRecord) -> None:
        """Record a new token of the family ``grant_id``, by its hash only."""
        with self._engine.begin() as connection:
            connection.execute(
                refresh_tokens.insert().values(
                    token_hash=hash_token(token),
                    id=new_id("rt"),
                    **granted_columns(record),
                    issued_at=record.issued_at,
                    expires_at=record.expires_at,
                )
            )

    def find(self, token: str) -> RefreshToken | None:
        with self._engine.connect() as connection:
            row = connection.execute(
                sa.select(refresh_tokens).where(refresh_tokens.c.token_hash == hash_token(token))
            ).first()
        if row is None:
            return None
        return RefreshToken(
            **granted_of_row(row),
            id=row.id,
            token_hash=row.token_hash,
            issued_at=utc(row.issued_at),
            expires_at=utc(row.expires_at),
            rotated=row.rotated_at is not None,
            revoked=row.revoked_at is not None,
        )

    def rotate(self, token: RefreshToken) -> bool:
        """Mark the token used; False when it was not live (used, revoked or expired) at that instant."""
        at = self._clock.now()
        table = refresh_tokens
        with self._engine.begin() as connection:
            return (
                connection.execute(
                    table.update()
                    .where(
                        table.c.token_hash == token.token_hash,
                        table.c.rotated_at.is_(None),
                        table.c.revoked_at.is_(None),
                        table.c.expires_at > at,
                    )
                    .values(rotated_at=at)
                ).rowcount
                == 1
            )

    # In the caller's transaction: revoking across tables is all or nothing.

    @staticmethod
    def revoke_grant(connection: Connection, grant_id: str, at: datetime) -> None:
        """Revoke the whole family of one authorization."""
        revoke_live(connection, refresh_tokens, refresh_tokens.c.grant_id == grant_id, at)

    @staticmethod
    def revoke_session(connection: Connection, session_id: str, at: datetime) -> list[str]:
        """Revoke the refresh tokens issued in a browser session; the authorizations (families) they were of."""
        grant_ids = list(
            connection.scalars(
                sa.select(refresh_tokens.c.grant_id).where(refresh_tokens.c.session_id == session_id).distinct()
            )
        )
        revoke_live(connection, refresh_tokens, refresh_tokens.c.session_id == session_id, at)
        return grant_ids
