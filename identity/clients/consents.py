"""What a user allowed a client to do, for one of their organizations. First-party clients need no consent
(unless ``prompt=consent``); third-party clients ask once for each new scope and each organization: the
tokens speak for the organization chosen at sign-in, so allowing a client for one organization says nothing
about another (consent is given per user, client and organization)."""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from identity.common.clock import SYSTEM_CLOCK, Clock
from identity.common.tables import consents
from identity.common.upsert import dialect_insert


class ConsentStore:
    def __init__(self, engine: Engine, clock: Clock = SYSTEM_CLOCK) -> None:
        self._engine = engine
        self._clock = clock

    def covers(self, user_id: str, client_id: str, org_id: str, scopes: Iterable[str]) -> bool:
        """True when the user already allowed this client every scope asked for, for this organization."""
        query = sa.select(consents.c.scopes).where(*_one(user_id, client_id, org_id))
        with self._engine.connect() as connection:
            granted = connection.scalar(query)
        return granted is not None and set(scopes) <= set(granted)

    def grant(self, user_id: str, client_id: str, org_id: str, scopes: Iterable[str]) -> None:
        """Record consent to ``scopes`` for the organization, in addition to those allowed before: one statement,
        an insert that merges the scopes into the row already there (``ON CONFLICT … DO UPDATE``, the union taken
        by the database). Two consents given at once (two tabs, two nodes) both count, and the first one for a
        client never meets the primary key."""
        values = {
            "user_id": user_id,
            "client_id": client_id,
            "org_id": org_id,
            "scopes": sorted(set(scopes)),
            "granted_at": self._clock.now(),
        }
        with self._engine.begin() as connection:
            dialect = connection.dialect.name
            upsert = dialect_insert(dialect)(consents).values(**values)
            connection.execute(
                upsert.on_conflict_do_update(
                    index_elements=[consents.c.user_id, consents.c.client_id, consents.c.org_id],
                    set_={"scopes": _MERGED[dialect], "granted_at": upsert.excluded.granted_at},
                )
            )


def _one(user_id: str, client_id: str, org_id: str) -> tuple[sa.ColumnElement[bool], ...]:
    return (consents.c.user_id == user_id, consents.c.client_id == client_id, consents.c.org_id == org_id)


# The scopes of the row there and of the one inserted, without repeats, sorted: a JSON array on either engine.
_MERGED: dict[str, sa.ColumnElement[object]] = {
    "postgresql": sa.literal_column(
        "(SELECT json_agg(scope ORDER BY scope) FROM (SELECT json_array_elements_text(consents.scopes) AS scope"
        " UNION SELECT json_array_elements_text(excluded.scopes)) AS merged)"
    ),
    "sqlite": sa.literal_column(
        "(SELECT json_group_array(value) FROM (SELECT value FROM json_each(consents.scopes)"
        " UNION SELECT value FROM json_each(excluded.scopes) ORDER BY value))"
    ),
}
