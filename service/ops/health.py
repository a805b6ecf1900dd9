"""Readiness: can this node reach its state database (and, when configured, its rate-limit Redis) right now?"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import orjson
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from service.web.offload import in_thread
from service.web.problems import unavailable
from service.web.request_state import Slot

STATUSES = ("ready", "degraded")
log = logging.getLogger("service.health")  # the name operators filter on (kept from before the re-layout)


class Readiness:
    def __init__(
        self,
        engine: Engine,
        rate_limit_store: Callable[[], Awaitable[bool]],
        *,
        timeout: float,
        mail: str = "smtp",
    ) -> None:
        """``mail``: this node's mail transport, ``smtp``, ``folder`` or ``none`` (it then claims no mail:
        service/mail/transports.py), said in the answer's details."""
        self.engine = engine
        self.rate_limit_store = rate_limit_store  # whether the rate limit's store answers (always, in memory)
        self.timeout = timeout
        details = {"mail": mail}
        self.answers = {status: orjson.dumps({"status": status, "details": details}) for status in STATUSES}

    async def answer(self) -> bytes:
        """The body of ``/readyz`` when the node is ready (or degraded): its status and details."""
        return self.answers[await self.check()]

    async def check(self) -> str:
        """``ready``, or ``degraded`` when the rate-limit Redis does not answer (the node still serves: the
        menus API fails open); raise the 503 problem when ``SELECT 1`` does not succeed within ``timeout``."""
        try:
            await asyncio.wait_for(in_thread(self._ping), self.timeout)
        except (TimeoutError, sa.exc.SQLAlchemyError) as error:
            log.warning("not ready: the database cannot be reached (%s)", type(error).__name__)
            raise unavailable() from None
        if not await self.rate_limit_store():
            return "degraded"
        return "ready"

    def _ping(self) -> None:
        with self.engine.connect() as connection:
            connection.execute(sa.text("SELECT 1"))


READINESS: Slot[Readiness] = Slot("readiness")  # the operations app: the readiness check of /readyz
