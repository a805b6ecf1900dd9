"""Readiness: can this node reach its state database right now?"""

from __future__ import annotations

import asyncio
import logging

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from service.problems import unavailable

log = logging.getLogger(__name__)
READY_TIMEOUT = 3.0  # seconds a readiness probe waits for the database before answering 503


class Readiness:
    def __init__(self, engine: Engine, timeout: float = READY_TIMEOUT) -> None:
        self.engine = engine
        self.timeout = timeout

    async def check(self) -> None:
        """Return when ``SELECT 1`` succeeds within ``timeout``; raise the 503 problem otherwise."""
        try:
            await asyncio.wait_for(asyncio.to_thread(self._ping), self.timeout)
        except (TimeoutError, sa.exc.SQLAlchemyError) as error:
            log.warning("not ready: the database cannot be reached (%s)", type(error).__name__)
            raise unavailable() from None

    def _ping(self) -> None:
        with self.engine.connect() as connection:
            connection.execute(sa.text("SELECT 1"))
