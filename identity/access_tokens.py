"""The record of every access token issued, by ``jti``: the one module that writes ``access_tokens``.

An access token is a self-contained JWT (RFC 9068), yet each one is also recorded so that revocation
takes effect at once (RFC 7009 §2.2: a revoked token is invalid from then on). A record is written on
issue, read at every verification, marked revoked one at a time, by authorization, by browser session or
by client, and deleted once expired.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from identity.clock import SYSTEM_CLOCK, Clock, utc
from identity.database import commit_without_waiting
from identity.errors import InvalidClient
from identity.tables import access_tokens, clients
from identity.token_tables import TokenTable, revoke_live

MAX_READ_TOGETHER = 64  # records read in one statement at most (a bound on its parameters)
# The statements of every token issued and verified, built once (building one costs more than running it).
_COLUMNS = (
    "jti",
    "grant_id",
    "client_id",
    "user_id",
    "org_id",
    "session_id",
    "scope",
    "issued_at",
    "expires_at",
    "credential_version",
)
# The row, written only while its client is registered and, when a secret hash is bound, still holds it.
_RECORD = (
    access_tokens.insert()
    .from_select(
        _COLUMNS,
        sa.select(*(sa.bindparam(name, type_=access_tokens.c[name].type) for name in _COLUMNS)).where(
            sa.exists().where(
                clients.c.id == sa.bindparam("client_id"),
                sa.or_(
                    sa.bindparam("secret_hash", type_=clients.c.secret_hash.type).is_(None),
                    clients.c.secret_hash == sa.bindparam("secret_hash", type_=clients.c.secret_hash.type),
                ),
            )
        ),
    )
    .returning(access_tokens.c.jti)
)  # psycopg's rowcount of an INSERT … SELECT is -1
_BY_JTI = sa.select(access_tokens).where(access_tokens.c.jti == sa.bindparam("jti"))
_BY_JTIS = sa.select(access_tokens).where(access_tokens.c.jti.in_(sa.bindparam("jtis", expanding=True)))


@dataclass(frozen=True, slots=True)
class AccessTokenRecord:
    jti: str
    grant_id: str | None  # None for application tokens (client_credentials)
    client_id: str
    user_id: str | None  # None for application tokens
    org_id: str
    session_id: str | None
    scope: tuple[str, ...]
    issued_at: datetime
    expires_at: datetime
    revoked: bool = False
    credential_version: int = 0  # the user's, as its grant's session verified it (0 for application tokens)


class _Read(threading.local):
    records: dict[str, AccessTokenRecord | None] | None = None


class _Later(threading.local):
    rows: list[tuple[Hashable, dict[str, Any]]] | None = None  # (whose, the statement's values), in order
    key: Hashable = None


class AccessTokenStore(TokenTable):
    _table = access_tokens

    def __init__(self, engine: Engine, clock: Clock = SYSTEM_CLOCK) -> None:
        self._engine = engine
        self._clock = clock
        self._read = _Read()  # per thread: the records read together for the calls it is running
        self._later = _Later()  # per thread: the records to write together (``write_later``)

    def record(self, token: AccessTokenRecord, *, secret_hash: str | None = None) -> bool:
        """Record a token being issued, in one statement, only while its client is registered (and, with
        ``secret_hash``, still holds that secret): whether it was. A client deleted or given a new secret on
        another node, that this node still knows from its short client cache, so gets no token (its deletion
        revoked every token it had, in one transaction). Lost in a power cut, the record would only make the
        token inactive: its commit need not wait for the disk."""
        values = {
            "jti": token.jti,
            "grant_id": token.grant_id,
            "client_id": token.client_id,
            "user_id": token.user_id,
            "org_id": token.org_id,
            "session_id": token.session_id,
            "scope": " ".join(token.scope),
            "issued_at": token.issued_at,
            "expires_at": token.expires_at,
            "credential_version": token.credential_version,
            "secret_hash": secret_hash,
        }
        if self._later.rows is not None and self._later.key is not None:
            self._later.rows.append((self._later.key, values))
            return True  # for now: ``write_now`` says which were not
        with commit_without_waiting(self._engine) as connection:
            return connection.execute(_RECORD, values).first() is not None

    # Records written together: for the tokens one thread issues in a row, one transaction and one commit, after
    # the last (``identity.minting.IssuedTogether``). No token is handed out before ``write_now`` has said its
    # record was written.

    def write_later(self) -> None:
        """From now on in this thread, ``record`` keeps the records for ``write_now`` and answers True."""
        self._later.rows, self._later.key = [], None

    def write_for(self, key: Hashable) -> None:
        """The records kept from now on are ``key``'s (one call among those whose records are written together);
        with None, ``record`` writes at once (a call that is not among them)."""
        self._later.key = key

    def write_now(self) -> dict[Hashable, Exception]:
        """Write the records kept in this thread in one transaction, each only while its client is registered
        and holds its secret (as ``record``); stop keeping them. The keys whose record was not written, with
        why: ``InvalidClient``, or the database's error for all of them if the transaction failed."""
        rows, self._later.rows = self._later.rows or [], None
        refused: dict[Hashable, Exception] = {}
        if not rows:
            return refused
        try:
            with commit_without_waiting(self._engine) as connection:
                for key, values in rows:
                    if connection.execute(_RECORD, values).first() is None:
                        refused[key] = not_recorded(values["client_id"])
        except Exception as error:  # noqa: BLE001 - nothing was written: each key's caller meets the error
            return {key: error for key, _ in rows}
        return refused

    def get(self, jti: str) -> AccessTokenRecord | None:
        read = self._read.records
        if read is not None and jti in read:
            return read[jti]  # read after the request of this use came in (``read_together``)
        with self._engine.connect() as connection:
            row = connection.execute(_BY_JTI, {"jti": jti}).first()
        return None if row is None else _record(row)

    @contextmanager
    def read_together(self, jtis: Collection[str]) -> Iterator[None]:
        """The records of ``jtis`` read in one statement; within the block, ``get`` of any of them in this
        thread answers from that read. For the introspections of requests that came in together, none answered
        before the block ends (``service/web/offload.py``): each record is read after its
        request arrived and before it is answered, as ``get`` alone would read it (RFC 7009 §2.2)."""
        records: dict[str, AccessTokenRecord | None] = dict.fromkeys(jtis)
        if len(records) > MAX_READ_TOGETHER:
            raise ValueError(f"at most {MAX_READ_TOGETHER} records are read together")
        with self._engine.connect() as connection:
            for row in connection.execute(_BY_JTIS, {"jtis": list(records)}):
                records[row.jti] = _record(row)
        self._read.records = records
        try:
            yield
        finally:
            self._read.records = None

    def revoke(self, jti: str) -> None:
        """RFC 7009 §2.2: the token is invalid from now on (revoking it again changes nothing)."""
        with self._engine.begin() as connection:
            revoke_live(connection, access_tokens, access_tokens.c.jti == jti, self._clock.now())

    # In the caller's transaction: revoking across tables is all or nothing.

    @staticmethod
    def revoke_grant(connection: Connection, grant_id: str, at: datetime) -> None:
        """Revoke every access token issued from one authorization."""
        revoke_live(connection, access_tokens, access_tokens.c.grant_id == grant_id, at)

    @staticmethod
    def revoke_session(connection: Connection, session_id: str, grant_ids: Sequence[str], at: datetime) -> None:
        """Revoke the access tokens issued in a browser session or from the authorizations ``grant_ids``."""
        issued_here = access_tokens.c.session_id == session_id
        revoke_live(
            connection,
            access_tokens,
            sa.or_(issued_here, access_tokens.c.grant_id.in_(grant_ids)) if grant_ids else issued_here,
            at,
        )


def not_recorded(client_id: str) -> InvalidClient:
    """Why a token's record was not written: its client was deleted or given a new secret meanwhile."""
    return InvalidClient(detail=f"Client {client_id} was deleted, or given a new secret, as it asked.")


def _record(row: sa.Row[Any]) -> AccessTokenRecord:
    return AccessTokenRecord(
        jti=row.jti,
        grant_id=row.grant_id,
        client_id=row.client_id,
        user_id=row.user_id,
        org_id=row.org_id,
        session_id=row.session_id,
        scope=tuple(row.scope.split()),
        issued_at=utc(row.issued_at),
        expires_at=utc(row.expires_at),
        revoked=row.revoked_at is not None,
        credential_version=int(row.credential_version),
    )
