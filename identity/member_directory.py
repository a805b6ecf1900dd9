"""The member directory: an organization's members, read with an application token.

The caller is a client with a ``client_credentials`` access token carrying
``members:read``; it sees the members of its own organization, sorted by
``joined_at`` then id, a page at a time with signed keyset cursors bound to the
organization (as the menus API's).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from cursors import CursorCodec, InvalidCursor
from identity.common.clock import utc
from identity.common.errors import InsufficientScope, MalformedBearerRequest
from identity.common.tables import memberships, users
from identity.tokens.bearer_tokens import bearer_token
from identity.tokens.verification import TokenVerifier

SCOPE = "members:read"


class Directory:
    def __init__(self, engine: Engine, verifier: TokenVerifier, cursor_key: bytes) -> None:
        self._engine = engine
        self._verifier = verifier
        self._cursors = CursorCodec(cursor_key)

    def members(self, authorization: str | None, limit: int = 20, cursor: str | None = None) -> dict[str, Any]:
        access = self._verifier.verify_access_token(bearer_token(authorization))
        if access.user_id is not None or SCOPE not in access.scope:
            raise InsufficientScope(f"This token lacks the scope {SCOPE}.", scope=SCOPE)
        org_id = access.org_id
        base = (
            sa.select(users.c.id, users.c.email, users.c.name, memberships.c.role, memberships.c.joined_at)
            .join(memberships, memberships.c.user_id == users.c.id)
            .where(memberships.c.org_id == org_id, users.c.disabled_at.is_(None))  # a disabled user is not listed
        )
        query = base
        if cursor is not None:
            try:
                joined, user_id = self._cursors.decode(cursor, org_id)
            except InvalidCursor:
                raise MalformedBearerRequest("The cursor is invalid.") from None
            moment = _moment(joined)
            query = query.where(
                sa.or_(
                    memberships.c.joined_at > moment,
                    sa.and_(memberships.c.joined_at == moment, users.c.id > user_id),
                )
            )
        query = query.order_by(memberships.c.joined_at, users.c.id).limit(limit + 1)
        with self._engine.connect() as connection:
            rows = connection.execute(query).all()
            total = connection.scalar(sa.select(sa.func.count()).select_from(base.subquery()))
        page = rows[:limit]
        data = [
            {
                "id": row.id,
                "email": row.email,
                "name": row.name,
                "role": row.role,
                "joined_at": utc(row.joined_at).isoformat().replace("+00:00", "Z"),
            }
            for row in page
        ]
        next_cursor = None
        if len(rows) > limit:
            last = page[-1]
            next_cursor = self._cursors.encode((utc(last.joined_at).isoformat(), last.id), org_id)
        return {"data": data, "total": total or 0, "next_cursor": next_cursor}


def _moment(iso: str) -> datetime:
    try:
        return datetime.fromisoformat(iso)
    except ValueError:
        raise MalformedBearerRequest("The cursor is invalid.") from None
