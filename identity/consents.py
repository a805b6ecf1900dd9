"""What a user allowed a client to do, for one of their organizations. First-party clients need no consent
(unless ``prompt=consent``); third-party clients ask once for each new scope and each organization: the
tokens speak for the organization chosen at sign-in, so allowing a client for one organization says nothing
about another (consent is given per user, client and organization)."""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from identity.clock import SYSTEM_CLOCK, Clock
from identity.tables import consents


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
        """Record consent to ``scopes`` for the organization, in addition to those allowed before."""
        where = _one(user_id, client_id, org_id)
        with self._engine.begin() as connection:
            before = connection.scalar(sa.select(consents.c.scopes).where(*where))
            merged = sorted(set(before or ()) | set(scopes))
            if before is None:
                connection.execute(
                    consents.insert().values(
                        user_id=user_id, client_id=client_id, org_id=org_id, scopes=merged, granted_at=self._clock.now()
                    )
                )
            else:
                connection.execute(consents.update().where(*where).values(scopes=merged, granted_at=self._clock.now()))


def _one(user_id: str, client_id: str, org_id: str) -> tuple[sa.ColumnElement[bool], ...]:
    return (consents.c.user_id == user_id, consents.c.client_id == client_id, consents.c.org_id == org_id)
