"""The record of every access token issued, by ``jti``: the one module that writes ``access_tokens``.

An access token is a self-contained JWT (RFC 9068), yet each one is also recorded so that revocation
takes effect at once (RFC 7009 §2.2: a revoked token is invalid from then on). A record is written on
issue, read at every verification, marked revoked one at a time, by authorization, by browser session or
by client, and deleted once expired.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from identity.common.clock import SYSTEM_CLOCK, Clock, utc
from identity.common.database import commit_without_waiting
from identity.common.errors import InvalidClient
from identity.common.tables import access_tokens, clients
from identity.common.token_tables import TokenTable, revoke_live

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
# The row, written only while its client is registered and, when a secret hash is bound, still holds it: one
# statement a row (executemany) for a commit's rows, and with RETURNING for a token recorded alone.
_RECORD_ROWS = access_tokens.insert().from_select(
    _COLUMNS,
    sa.select(*(sa.bindparam(name, type_=access_tokens.c[name].type) for name in _COLUMNS)).where(
        sa.exists().where(
            clients.c.id == sa.bindparam("client_id"),
            sa.or_(
                sa.bindparam("secret_hash", type_=clients.c.secret_hash.type).is_(None),
                clients.c.secret_hash == sa.bindparam("secret_hash", type_=clients.c.secret_hash.type),
                # rotated meanwhile with a grace (MENUS_CLIENT_SECRET_GRACE): the secret read is the previous one
                clients.c.previous_secret_hash == sa.bindparam("secret_hash", type_=clients.c.secret_hash.type),
            ),
        )
    ),
)
_RECORD = _RECORD_ROWS.returning(access_tokens.c.jti)  # psycopg's rowcount of an INSERT … SELECT is -1
_WRITTEN = sa.select(access_tokens.c.jti).where(access_tokens.c.jti.in_(sa.bindparam("jtis", expanding=True)))
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


class AccessTokenStore(TokenTable):
    _table = access_tokens

    def __init__(self, engine: Engine, clock: Clock = SYSTEM_CLOCK) -> None:
        self._engine = engine
        self._clock = clock

    def record(self, token: AccessTokenRecord, *, secret_hash: str | None = None) -> bool:
        """Record a token being issued, in one statement, only while its client is registered (and, with
        ``secret_hash``, still holds that secret): whether it was. A client deleted or given a new secret on
        another node, that this node still knows from its short client cache, so gets no token (its deletion
        revoked every token it had, in one transaction). Lost in a power cut, the record would only make the
        token inactive: its commit need not wait for the disk."""
        with commit_without_waiting(self._engine) as connection:
            return connection.execute(_RECORD, _values(token, secret_hash)).first() is not None

    def commit(self, issued: Sequence[Sequence[tuple[AccessTokenRecord, str | None]]]) -> list[Exception | None]:
        """The records of several units of work (``identity.tokens.unit_of_work``), each a list of (record, secret
        hash), written in one transaction with one commit, each only while its client is registered and holds that
        secret (as ``record``): for each unit, None, or why its records were not all written (``InvalidClient``;
        the database's error for every unit if the transaction failed: then none was written).

        Several records are written by one statement run for each (executemany), and those written then read back by
        their ``jti`` in the same transaction: two statements for the row, where a statement a record cost each
        token its own round through SQLAlchemy."""
        refused: list[Exception | None] = [None] * len(issued)
        rows = [(index, token, secret_hash) for index, records in enumerate(issued) for token, secret_hash in records]
        if not rows:
            return refused
        try:
            with commit_without_waiting(self._engine) as connection:
                if len(rows) == 1:
                    _, token, secret_hash = rows[0]
                    written = set(connection.scalars(_RECORD, _values(token, secret_hash)))
                else:
                    connection.execute(_RECORD_ROWS, [_values(token, secret_hash) for _, token, secret_hash in rows])
                    written = set(connection.scalars(_WRITTEN, {"jtis": [token.jti for _, token, _ in rows]}))
        except Exception as error:  # noqa: BLE001 - nothing was written: each unit's caller meets the error
            return [error if records else None for records in issued]
        for index, token, _ in rows:
            if token.jti not in written:
                refused[index] = not_recorded(token.client_id)
        return refused

    def get(self, jti: str, read: Mapping[str, AccessTokenRecord | None] | None = None) -> AccessTokenRecord | None:
        """The record of ``jti``: from ``read``, the records a unit of work read together
        (identity/tokens/unit_of_work.py), when it is among them (each read after its request came in, as this read
        would be: RFC 7009 §2.2), else read now."""
        if read is not None and jti in read:
            return read[jti]
        with self._engine.connect() as connection:
            row = connection.execute(_BY_JTI, {"jti": jti}).first()
        return None if row is None else _record(row)

    def read(self, jtis: Collection[str]) -> dict[str, AccessTokenRecord | None]:
        """The records of ``jtis`` (None for an unknown one), read in one statement."""
        records: dict[str, AccessTokenRecord | None] = dict.fromkeys(jtis)
        if len(records) > MAX_READ_TOGETHER:
            raise ValueError(f"at most {MAX_READ_TOGETHER} records are read together")
        with self._engine.connect() as connection:
            for row in connection.execute(_BY_JTIS, {"jtis": list(records)}):
                records[row.jti] = _record(row)
        return records

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


def _values(token: AccessTokenRecord, secret_hash: str | None) -> dict[str, Any]:
    return {
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
