"""API keys of the menus API: random, prefixed, shown once, stored only as a hash, owned by an organization.

A key is ``rmk_`` and 43 URL-safe characters (256 random bits). Because keys are
high-entropy, a fast SHA-256 digest is the right hash: it cannot be brute-forced,
and it keeps the check cheap on every request (passwords, by contrast, get Argon2id).

A key belongs to the organization it was made for (by the command line with ``--org``, or
by an owner or admin in the developer console) and records who made it and when. Keys made
before ownership existed belong to no organization and keep working; only the command line
sees them. When a key was last used is written by ``identity.api_keys.usage``, in batches, never on
the request's own path.

The menus gate answers verified keys from memory (``service/menus_api/key_cache.py``). Keys are never
deleted, so the number of revoked keys only grows: ``revocations`` is the deployment's revocation
generation, which every process reads at most every 250 ms to drop what it remembers, and ``revoke`` tells
this process's listeners at once.
"""

from __future__ import annotations

import hmac
import re
import secrets
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from identity.common import audit
from identity.common.clock import SYSTEM_CLOCK, Clock, utc
from identity.common.database import metadata, writing
from identity.common.digests import sha256_hex
from identity.common.errors import InvalidInput
from identity.common.tables import organizations
from identity.common.text import display_name

PREFIX = "rmk_"
KEY_FORMAT = re.compile(r"rmk_[A-Za-z0-9_-]{43}")
SHOWN_PREFIX = 8  # characters of a key shown in lists: rmk_ and four more ("rmk_abcd…")
NAME_MAX = 200

api_keys = sa.Table(
    "api_keys",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("name", sa.String(NAME_MAX), nullable=False),
    sa.Column("key_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
    # Added by migration 0003; NULL for keys made before it (they belong to no organization).
    sa.Column(
        "org_id", sa.String(32), sa.ForeignKey(organizations.c.id, ondelete="CASCADE"), nullable=True, index=True
    ),
    sa.Column("created_by", sa.String(32), nullable=True),  # a user id; NULL when made at the command line
    sa.Column("prefix", sa.String(16), nullable=True),  # the key's first characters, to tell keys apart
    sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
)


@dataclass(frozen=True, slots=True)
class ApiKey:
    id: str
    name: str
    created_at: datetime
    revoked_at: datetime | None
    org_id: str | None = None
    created_by: str | None = None
    prefix: str | None = None
    last_used_at: datetime | None = None

    @property
    def state(self) -> str:
        return "revoked" if self.revoked_at else "active"

    def as_dict(self) -> dict[str, str | None]:
        return {
            "id": self.id,
            "name": self.name,
            "org_id": self.org_id,
            "created_by": self.created_by,
            "created_at": self.created_at.isoformat(),
            "revoked_at": self.revoked_at.isoformat() if self.revoked_at else None,
            "last_used_at": self.last_used_at.isoformat() if self.last_used_at else None,
        }


class UnknownApiKey(LookupError):
    pass


class KeyLimitReached(InvalidInput):
    """The organization has as many active keys as it may (``MENUS_MAX_KEYS_PER_ORG``): revoke one first."""


hash_key = sha256_hex


def check_name(name: str) -> str:
    return display_name(name, "the key's name", longest=NAME_MAX)


_COLUMNS = (
    api_keys.c.id,
    api_keys.c.name,
    api_keys.c.created_at,
    api_keys.c.revoked_at,
    api_keys.c.org_id,
    api_keys.c.created_by,
    api_keys.c.prefix,
    api_keys.c.last_used_at,
)


def _record(row: Any) -> ApiKey:
    m = row._mapping
    return ApiKey(
        id=m["id"],
        name=m["name"],
        created_at=utc(m["created_at"]),
        revoked_at=utc(m["revoked_at"]) if m["revoked_at"] else None,
        org_id=m["org_id"],
        created_by=m["created_by"],
        prefix=m["prefix"],
        last_used_at=utc(m["last_used_at"]) if m["last_used_at"] else None,
    )


class ApiKeyStore:
    def __init__(self, engine: Engine, clock: Clock = SYSTEM_CLOCK, *, max_per_org: int | None = None) -> None:
        self._engine = engine
        self._clock = clock
        self._max_per_org = max_per_org  # active keys an organization may have (None: no cap)
        self._lookup = sa.select(api_keys.c.id, api_keys.c.key_hash).where(
            api_keys.c.key_hash == sa.bindparam("key_hash"), api_keys.c.revoked_at.is_(None)
        )
        self._revoked: list[Callable[[], None]] = []  # told after every revocation made through this store

    def on_revoke(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` after each revocation this store commits (a process's cache of verified keys)."""
        self._revoked.append(listener)

    def revocations(self) -> int:
        """How many keys were ever revoked: the revocation generation (keys are never deleted, so it only grows)."""
        with self._engine.connect() as connection:
            return int(connection.scalar(_REVOKED_COUNT) or 0)

    def create(self, name: str, *, org_id: str | None = None, created_by: str | None = None) -> tuple[ApiKey, str]:
        """Create a key; return its record and the key itself, which is never stored or shown again."""
        with self.transaction() as connection:
            record, key = self.create_in(connection, name, org_id=org_id, created_by=created_by)
        self.created(record)
        return record, key

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """A transaction begun as a writer (``writing``: the count of active keys stays true until the commit)."""
        with self._engine.connect() as connection, connection.begin():
            writing(connection)
            yield connection

    def create_in(
        self, connection: Connection, name: str, *, org_id: str | None = None, created_by: str | None = None
    ) -> tuple[ApiKey, str]:
        """``create`` in the caller's transaction, begun as a writer (``transaction``); ``created`` once it commits."""
        name = check_name(name)
        key = PREFIX + secrets.token_urlsafe(32)
        record = ApiKey(
            id="key_" + secrets.token_hex(8),
            name=name,
            created_at=self._clock.now(),
            revoked_at=None,
            org_id=org_id,
            created_by=created_by,
            prefix=key[:SHOWN_PREFIX],
        )
        if org_id is not None:
            self._check_room(connection, org_id)
        connection.execute(
            api_keys.insert().values(
                id=record.id,
                name=record.name,
                key_hash=hash_key(key),
                created_at=record.created_at,
                org_id=org_id,
                created_by=created_by,
                prefix=record.prefix,
            )
        )
        return record, key

    @staticmethod
    def created(record: ApiKey) -> None:
        """After the commit of a key's creation: its audit line."""
        audit.record(audit.API_KEY_CREATED, key_id=record.id, org_id=record.org_id, user_id=record.created_by)

    def _check_room(self, connection: Connection, org_id: str) -> None:
        """In the creating transaction: the organization exists and has room for one more active key.

        The organization's row is locked first (``FOR UPDATE`` on PostgreSQL; on SQLite the transaction holds the
        write lock from its start, ``identity.common.database.writing``), so concurrent creations are counted one after
        another."""
        org_name = connection.scalar(_ORG_EXISTS.with_for_update(), {"org_id": org_id})
        if org_name is None:
            raise InvalidInput(f"no organization has the id {org_id!r}")
        if self._max_per_org is None:
            return
        active = connection.scalar(
            sa.select(sa.func.count()).where(api_keys.c.org_id == org_id, api_keys.c.revoked_at.is_(None))
        )
        if int(active or 0) >= self._max_per_org:
            raise KeyLimitReached(
                f"{org_name} has {self._max_per_org} active API keys, the most an organization may have: "
                "revoke one before creating another"
            )

    def list(self, org_id: str | None = None) -> list[ApiKey]:
        """Every key, or only the keys of the organization ``org_id``; oldest first."""
        query = sa.select(*_COLUMNS).order_by(api_keys.c.created_at, api_keys.c.id)
        if org_id is not None:
            query = query.where(api_keys.c.org_id == org_id)
        with self._engine.connect() as connection:
            return [_record(row) for row in connection.execute(query)]

    def get(self, key_id: str, org_id: str | None = None) -> ApiKey:
        """The key ``key_id`` (of the organization ``org_id`` when given); ``UnknownApiKey`` otherwise."""
        query = sa.select(*_COLUMNS).where(api_keys.c.id == key_id)
        if org_id is not None:
            query = query.where(api_keys.c.org_id == org_id)
        with self._engine.connect() as connection:
            row = connection.execute(query).first()
        if row is None:
            raise UnknownApiKey(key_id)
        return _record(row)

    def revoke(self, key_id: str, *, org_id: str | None = None, by: str | None = None) -> ApiKey:
        """Revoke a key: refused at once by this process (its listeners are told after the commit) and by every
        other within the gate's revocation bound (``revocations`` grows); revoking a revoked key keeps its first
        revocation time and writes no second audit line. With ``org_id``, only a key of that organization: any
        other is unknown."""
        with self.transaction() as connection:
            record, revoked_now = self.revoke_in(connection, key_id, org_id=org_id)
        self.revoked(record, revoked_now, by=by)
        return record

    def revoke_in(self, connection: Connection, key_id: str, *, org_id: str | None = None) -> tuple[ApiKey, bool]:
        """``revoke`` in the caller's transaction: the key, and whether this revoked it (False: it was already);
        ``revoked`` once it commits. ``UnknownApiKey`` when there is no such key (of ``org_id``)."""
        scope = [api_keys.c.id == key_id] + ([api_keys.c.org_id == org_id] if org_id is not None else [])
        revoked_now = connection.execute(
            api_keys.update().where(*scope, api_keys.c.revoked_at.is_(None)).values(revoked_at=self._clock.now())
        ).rowcount
        row = connection.execute(sa.select(*_COLUMNS).where(*scope)).first()
        if row is None:
            raise UnknownApiKey(key_id)
        return _record(row), bool(revoked_now)

    def revoked(self, record: ApiKey, revoked_now: bool, *, by: str | None = None) -> None:
        """After the commit of a revocation: this process's listeners are told; the one revocation is audited
        once, whoever asks again."""
        for listener in self._revoked:
            listener()
        if revoked_now:
            audit.record(audit.API_KEY_REVOKED, key_id=record.id, org_id=record.org_id, user_id=by)

    def live_digests(self) -> frozenset[str]:
        """The digests of every live key (a cheap "may this key exist?" for networks that guess keys)."""
        query = sa.select(api_keys.c.key_hash).where(api_keys.c.revoked_at.is_(None))
        with self._engine.connect() as connection:
            return frozenset(connection.scalars(query))

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


_REVOKED_COUNT = sa.select(sa.func.count()).select_from(api_keys).where(api_keys.c.revoked_at.is_not(None))
_ORG_EXISTS = sa.select(organizations.c.name).where(organizations.c.id == sa.bindparam("org_id"))


def record_last_used(connection: Connection, used: Mapping[str, datetime]) -> None:
    """In the caller's transaction: each key of ``used`` was last used at its time, unless a later use is
    stored already (several processes write it)."""
    update = (
        api_keys.update()
        .where(
            api_keys.c.id == sa.bindparam("kid"),
            sa.or_(api_keys.c.last_used_at.is_(None), api_keys.c.last_used_at < sa.bindparam("at")),
        )
        .values(last_used_at=sa.bindparam("at"))
    )
    connection.execute(update, [{"kid": key_id, "at": at} for key_id, at in used.items()])
