"""What the two token tables, ``access_tokens`` and ``refresh_tokens``, share: a token is revoked once (RFC 7009
§2.2: a revoked token is invalid from then on; a first revocation stands), every token of a user or of a client at
once, and a record is deleted once its token has expired (the expiry refuses it already, with or without the record).

Each store names its table; these run in the caller's transaction, so that revoking across tables is all or nothing.
"""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from identity.common.tables import access_tokens, refresh_tokens


def revoke_live(connection: Connection, table: sa.Table, where: sa.ColumnElement[bool], at: datetime) -> None:
    """Revoke at ``at`` the tokens of ``table`` matching ``where`` that are still live (a first revocation stands)."""
    connection.execute(table.update().where(where, table.c.revoked_at.is_(None)).values(revoked_at=at))


def revoke_client(connection: Connection, client_id: str, at: datetime) -> None:
    """Revoke every access and refresh token issued to a client (it is being deleted), in the caller's transaction:
    a client knows no token store, only that its tokens end with it."""
    for table in (access_tokens, refresh_tokens):
        revoke_live(connection, table, table.c.client_id == client_id, at)


class TokenTable:
    """The revocations and the purge of a token store over its table ``_table``."""

    _table: ClassVar[sa.Table]

    @classmethod
    def revoke_user(cls, connection: Connection, user_id: str, at: datetime) -> None:
        """Revoke every token issued to a user (a password reset, RFC 9700 §4.14)."""
        revoke_live(connection, cls._table, cls._table.c.user_id == user_id, at)

    @classmethod
    def sessions_of_member(cls, connection: Connection, user_id: str, org_id: str) -> set[str]:
        """The browser sessions in which the user was issued live tokens for the organization."""
        table = cls._table
        rows = connection.execute(
            sa.select(table.c.session_id)
            .where(table.c.user_id == user_id, table.c.org_id == org_id, table.c.revoked_at.is_(None))
            .where(table.c.session_id.is_not(None))
            .distinct()
        )
        return {str(row.session_id) for row in rows}

    @classmethod
    def revoke_member(cls, connection: Connection, user_id: str, org_id: str, at: datetime) -> None:
        """Revoke every token issued to a user for one organization (they were removed from it, or left it)."""
        table = cls._table
        revoke_live(connection, table, sa.and_(table.c.user_id == user_id, table.c.org_id == org_id), at)

    @classmethod
    def purge(cls, connection: Connection, at: datetime) -> int:
        """Delete the records of the tokens expired at ``at`` (refused by their expiry already); how many."""
        return connection.execute(cls._table.delete().where(cls._table.c.expires_at < at)).rowcount
