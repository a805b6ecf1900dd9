"""Retried creates of the management API: one ``Idempotency-Key`` makes one invitation, one client, one key.

draft-ietf-httpapi-idempotency-key-header: the first request with a key runs, and its answer is kept with the key
(for ``ttl``, a day); the same key with the same request answers the kept answer and makes nothing; the same key
with another request is ``KeyReused`` (422). Keys are the organization's: two organizations never share one.

The create and the key's row are one transaction, begun as a writer (``writing``), so a create is never kept
without its answer nor the reverse. Two requests with one key at the same moment: on SQLite the second waits for
the first's commit, then finds its answer; on PostgreSQL both may run, and the second's insert of the key fails
on the primary key, which rolls its create back: it then reads the first's answer. The answer may carry a client's
secret or an API key: it is sealed with the service's keys (``MENUS_SECRET_KEYS``), as signing keys are.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from identity.common.clock import SYSTEM_CLOCK, Clock, utc
from identity.common.database import writing
from identity.keys.sealing import Sealer
from identity.organizations import trail
from identity.organizations.tables import idempotency_keys


class KeyReused(Exception):
    """The key was used with another request."""


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    body: dict[str, Any]
    replayed: bool


Create = Callable[[Connection], tuple[int, dict[str, Any], list[trail.Written]]]


def fingerprint(operation: str, body: Any) -> str:
    """The request's digest: the operation and its body in one canonical JSON form (keys sorted)."""
    try:
        canonical = orjson.dumps(body, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        # orjson takes integers of 64 bits at most; a body may hold a larger one (a JWKS member is free JSON). The
        # standard library writes any integer: such a body, which orjson never fingerprinted, gets its digest too.
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(operation.encode() + b"\0" + canonical).hexdigest()


class IdempotencyKeys:
    def __init__(
        self, engine: Engine, sealer: Sealer, clock: Clock = SYSTEM_CLOCK, ttl: timedelta = timedelta(hours=24)
    ) -> None:
        self._engine = engine
        self._sealer = sealer
        self._clock = clock
        self.ttl = ttl

    def run(self, org_id: str, key: str | None, operation: str, body: Any, create: Create) -> Answer:
        """``create`` in a transaction of its own (begun as a writer), once per ``key``; without a key, every
        time. ``create`` answers (status, body, trail entries to log after the commit)."""
        if key is None:
            with self._engine.connect() as connection, connection.begin():
                writing(connection)
                status, answer, written = create(connection)
            trail.logged(*written)
            return Answer(status, answer, False)
        key_hash = hashlib.sha256(key.encode()).hexdigest()
        print_ = fingerprint(operation, body)
        try:
            with self._engine.connect() as connection, connection.begin():
                writing(connection)
                kept = self._kept(connection, org_id, key_hash, print_)
                if kept is not None:
                    return kept
                status, answer, written = create(connection)
                at = self._clock.now()
                connection.execute(
                    idempotency_keys.insert().values(
                        org_id=org_id,
                        key_hash=key_hash,
                        operation=operation,
                        fingerprint=print_,
                        status=status,
                        answer=self._sealer.seal(orjson.dumps(answer)).decode("ascii"),
                        created_at=at,
                        expires_at=at + self.ttl,
                    )
                )
        except IntegrityError:  # PostgreSQL: the same key committed meanwhile; this create was rolled back
            with self._engine.connect() as connection:
                kept = self._kept(connection, org_id, key_hash, print_)
            if kept is None:
                raise
            return kept
        trail.logged(*written)
        return Answer(status, answer, False)

    def _kept(self, connection: Connection, org_id: str, key_hash: str, print_: str) -> Answer | None:
        at = self._clock.now()
        row = connection.execute(
            sa.select(idempotency_keys).where(
                idempotency_keys.c.org_id == org_id, idempotency_keys.c.key_hash == key_hash
            )
        ).first()
        if row is None:
            return None
        if utc(row.expires_at) <= at:
            connection.execute(
                idempotency_keys.delete().where(
                    idempotency_keys.c.org_id == org_id, idempotency_keys.c.key_hash == key_hash
                )
            )
            return None
        if row.fingerprint != print_:
            raise KeyReused("This Idempotency-Key was used with another request; use a new key for a new request.")
        return Answer(int(row.status), orjson.loads(self._sealer.open(row.answer.encode("ascii"))), True)

    @staticmethod
    def purge(connection: Connection, before: datetime) -> int:
        """Forget keys whose answer expired before ``before``; how many."""
        return int(connection.execute(idempotency_keys.delete().where(idempotency_keys.c.expires_at < before)).rowcount)
