"""API keys of the menus API: random, prefixed, shown once, stored only as a hash.

A key is ``rmk_`` and 43 URL-safe characters (256 random bits). Because keys are
high-entropy, a fast SHA-256 digest is the right hash: it cannot be brute-forced,
and it keeps the check cheap on every request (passwords, by contrast, get Argon2id).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from identity import audit
from identity.clock import now, utc
from service.db import metadata

PREFIX = "rmk_"
KEY_FORMAT = re.compile(r"rmk_[A-Za-z0-9_-]{43}")

api_keys = sa.Table(
    "api_keys",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("key_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
)


@dataclass(frozen=True, slots=True)
class ApiKey:
    id: str
    name: str
    created_at: datetime
    revoked_at: datetime | None

    def as_dict(self) -> dict[str, str | None]:
        return {
            "id": self.id,
            "name": self.name,
            "created_at": self.created_at.isoformat(),
            "revoked_at": self.revoked_at.isoformat() if self.revoked_at else None,
        }


class UnknownApiKey(LookupError):
    pass


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class ApiKeyStore:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._lookup = sa.select(api_keys.c.id, api_keys.c.key_hash).where(
            api_keys.c.key_hash == sa.bindparam("key_hash"), api_keys.c.revoked_at.is_(None)
        )

    def create(self, name: str) -> tuple[ApiKey, str]:
        """Create a key; return its record and the key itself, which is never stored or shown again."""
        name = name.strip()
        if not name or len(name) > 200:
            raise ValueError("the key's name must be 1 to 200 characters")
        key = PREFIX + secrets.token_urlsafe(32)
        record = ApiKey(id="key_" + secrets.token_hex(8), name=name, created_at=now(), revoked_at=None)
        with self._engine.begin() as connection:
            connection.execute(
                api_keys.insert().values(
                    id=record.id, name=record.name, key_hash=hash_key(key), created_at=record.created_at
                )
            )
        audit.record(audit.API_KEY_CREATED, key_id=record.id)
        return record, key

    def list(self) -> list[ApiKey]:
        query = sa.select(api_keys.c.id, api_keys.c.name, api_keys.c.created_at, api_keys.c.revoked_at)
        with self._engine.connect() as connection:
            rows = connection.execute(query.order_by(api_keys.c.created_at, api_keys.c.id)).all()
        return [
            ApiKey(row.id, row.name, utc(row.created_at), utc(row.revoked_at) if row.revoked_at else None)
            for row in rows
        ]

    def revoke(self, key_id: str) -> ApiKey:
        """Revoke a key at once; revoking a revoked key keeps its first revocation time."""
        with self._engine.begin() as connection:
            connection.execute(
                api_keys.update()
                .where(api_keys.c.id == key_id, api_keys.c.revoked_at.is_(None))
                .values(revoked_at=now())
            )
            row = connection.execute(sa.select(api_keys).where(api_keys.c.id == key_id)).first()
        if row is None:
            raise UnknownApiKey(key_id)
        audit.record(audit.API_KEY_REVOKED, key_id=key_id)
        return ApiKey(row.id, row.name, utc(row.created_at), utc(row.revoked_at) if row.revoked_at else None)

    def authenticate(self, key: str) -> str | None:
        """Return the id of the live key ``key``, or None when it is malformed, unknown or revoked."""
        if not KEY_FORMAT.fullmatch(key):
            return None
        digest = hash_key(key)
        with self._engine.connect() as connection:
            row = connection.execute(self._lookup, {"key_hash": digest}).first()
        if row is None or not hmac.compare_digest(row.key_hash, digest):
            return None
        return str(row.id)
