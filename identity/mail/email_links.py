"""Single-use links sent by mail: email verification (24 h) and password reset (30 min).

The link carries a 256-bit random token; only its SHA-256 is stored (as refresh tokens are). A link is bound
to the address it was sent to: once the user's address changes, it opens nothing. Following it is one
atomic statement (``used_at`` set only where it was unset and the link has not expired), so two clicks
from two browsers consume it once.

A password-reset link is also bound to the user's credential version when it was issued (identity/accounts/users.py): it
opens only while that version is current, so the first link used (or any change of password, or a disable) ends
every other link the user was sent.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from identity.common.clock import SYSTEM_CLOCK, Clock
from identity.common.database import use_once
from identity.common.tables import email_links, users

VERIFY_EMAIL = "verify_email"
RESET_PASSWORD = "reset_password"


@dataclass(frozen=True, slots=True)
class Followed:
    """A link that was just consumed: whose, and for which address."""

    user_id: str
    email_key: str
    interaction_id: str | None = None  # the paused sign-in a verification link resumes, if any
    credential_version: int = 0  # the user's credential version when the link was issued
    return_to: str | None = None  # where the link's flow started: its last page links back there


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class EmailLinks:
    def __init__(self, engine: Engine, clock: Clock = SYSTEM_CLOCK) -> None:
        self._engine = engine
        self._clock = clock

    def issue(
        self,
        connection: Connection,
        purpose: str,
        user_id: str,
        email_key: str,
        lifetime: timedelta,
        interaction_id: str | None = None,
        return_to: str | None = None,
    ) -> str:
        """A new link token for ``purpose``, written in ``connection``'s transaction (with the mail that carries
        it); the token itself is returned once and never stored. ``interaction_id``: the sign-in the link
        resumes; ``return_to``: where its flow started (both stored beside the hash: the link itself carries
        nothing but its token)."""
        token = secrets.token_urlsafe(32)
        at = self._clock.now()
        connection.execute(
            email_links.insert().values(
                token_hash=_hash(token),
                purpose=purpose,
                user_id=user_id,
                email_key=email_key,
                created_at=at,
                expires_at=at + lifetime,
                interaction_id=interaction_id,
                # the version now, read by the INSERT itself (a reset link opens only while it lasts)
                credential_version=sa.select(users.c.credential_version).where(users.c.id == user_id).scalar_subquery(),
                return_to=return_to,
            )
        )
        return token

    def follow(self, purpose: str, token: str) -> Followed | None:
        """Consume the link in a transaction of its own (``spend``)."""
        with self._engine.begin() as connection:
            return self.spend(connection, purpose, token)

    def spend(self, connection: Connection, purpose: str, token: str) -> Followed | None:
        """In the caller's transaction: consume the link; its user and address, or None when it is unknown,
        expired, used, of another purpose or, for a password reset, issued under a credential version that is no
        longer the user's (one answer for all, and nothing consumed then)."""
        if not token or len(token) > 100:
            return None
        where = [email_links.c.token_hash == _hash(token), email_links.c.purpose == purpose]
        if purpose == RESET_PASSWORD:
            where.append(email_links.c.credential_version == _CURRENT_VERSION)
        if use_once(connection, email_links, self._clock.now(), *where) != 1:
            return None
        row = connection.execute(_FOLLOWED, {"token_hash": _hash(token)}).one()
        return Followed(row.user_id, row.email_key, row.interaction_id, int(row.credential_version), row.return_to)

    def opens(self, purpose: str, token: str) -> bool:
        """Whether the link would open now (``spend`` decides, in its transaction): asked before the costly work
        that following it needs (hashing a new password), so that a made-up token costs one lookup only."""
        if not token or len(token) > 100:
            return False
        query = sa.select(email_links.c.token_hash).where(
            email_links.c.token_hash == _hash(token),
            email_links.c.purpose == purpose,
            email_links.c.used_at.is_(None),
            email_links.c.expires_at > self._clock.now(),
        )
        if purpose == RESET_PASSWORD:
            query = query.where(email_links.c.credential_version == _CURRENT_VERSION)
        with self._engine.connect() as connection:
            return connection.execute(query).first() is not None

    @staticmethod
    def purge(connection: Connection, before: object) -> int:
        """Delete links that expired before ``before``."""
        return int(connection.execute(email_links.delete().where(email_links.c.expires_at < before)).rowcount)


# The user's credential version now, beside the link's row (in its INSERT, its UPDATE or its SELECT).
_CURRENT_VERSION = sa.select(users.c.credential_version).where(users.c.id == email_links.c.user_id).scalar_subquery()
_FOLLOWED = sa.select(
    email_links.c.user_id,
    email_links.c.email_key,
    email_links.c.interaction_id,
    email_links.c.credential_version,
    email_links.c.return_to,
).where(email_links.c.token_hash == sa.bindparam("token_hash"))
