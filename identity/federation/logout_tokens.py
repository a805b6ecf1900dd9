"""The logout tokens a provider already sent: each is taken once (OpenID Connect Back-Channel Logout 1.0 §2.6,
"the jti ... MAY be used to detect replay"; RFC 7519 §4.1.7).

A token is remembered by the SHA-256 of its issuer and ``jti`` (the two together name it: two providers may use
the same ``jti``) until its own ``exp``, after which its signature check refuses it anyway. The row is written by
one ``INSERT … ON CONFLICT DO NOTHING``, so two nodes that receive the same token at once cannot both take it; the
purge job (identity/purge.py) deletes the expired rows.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.engine import Connection, Engine

from identity.common.digests import sha256_hex
from identity.common.upsert import dialect_insert
from identity.federation.tables import federation_logout_tokens


class LogoutTokenLedger:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def take(self, org_id: str, issuer: str, jti: str, expires_at: int) -> bool:
        """True the first time a token of ``issuer`` with this ``jti`` is taken; False for a replay."""
        insert = dialect_insert(self._engine.dialect.name)(federation_logout_tokens)
        statement = insert.values(
            token_hash=sha256_hex(f"{issuer}\n{jti}"),
            org_id=org_id,
            expires_at=datetime.fromtimestamp(expires_at, UTC),
        ).on_conflict_do_nothing(index_elements=["token_hash"])
        with self._engine.begin() as connection:  # a row back only when this statement wrote it
            return connection.execute(statement.returning(federation_logout_tokens.c.token_hash)).first() is not None


def purge(connection: Connection, now: datetime) -> int:
    """Delete the tokens past their expiry (their signature check refuses them now); how many."""
    table = federation_logout_tokens
    return int(connection.execute(table.delete().where(table.c.expires_at <= now)).rowcount)
