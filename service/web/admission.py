"""How much work a worker accepts: past its bound, a request is answered 503 with ``Retry-After`` at once.

A worker that takes every request it is sent answers all of them late under overload: at 1,024 connections on
one worker, the p99 was near a second and some requests waited past five (docs/performance.md). The edge
(``service/web/edge.py``) asks ``Admission.admit`` first, and refuses a request when

- ``max_in_flight`` requests are already being answered by this worker (each counted from the edge's first
  call, or from the arrival of its body for a request that has one, to its last byte: a body still on the way
  holds no place, ``service/web/body_arrival.py``), or
- the request has already waited ``max_queue_wait`` seconds: between its head being read (stamped in the scope
  as ``ARRIVED`` by the server's protocol, ``service/server/bounded_http.py``) and the edge's first call, plus the
  event loop's lag (``watch_loop``: how late a timer last ran). The lag stands for the wait before the head was
  read, which no stamp can see: bytes that arrive while the loop works through a turn wait in the kernel's socket
  buffer until the next turn reads them, a turn's length later. A loop that far behind answers the request late
  whatever it does, and answering it would only add to the queue. Only the part of the last lag that came before
  the head was read is added (``unseen``): a turn that held the loop after it is in the stamped wait already, and
  counted twice, a stall of just over a quarter of a second could refuse the second of two requests sent together.

The refusal is the API's own 503 in its own error form (the contract lists it for every operation with
``Retry-After``); it costs a fraction of an answer and never reaches the database. The operations endpoints
(health, readiness, metrics) and the developer console are not bounded: a liveness probe refused under load
would get a busy worker restarted, and the metrics are what tells the operator about the load
(docs/operations.md).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from starlette.types import Scope

ARRIVED = "regional_menus.arrived"  # scope key: time.monotonic() when the request's head was complete
RETRY_AFTER = 1  # seconds: a refusal for load is short-lived
LAG_EVERY = 0.05  # seconds between the turns of the loop-lag watch (20 wake-ups a second when idle)


@dataclass
class Admission:
    """The bound of one worker's accepted work (one per process: the event loop's)."""

    max_in_flight: int  # requests answered at once by this worker
    max_queue_wait: float  # seconds a request may have waited before the edge sees it
    on_refused: Callable[[str], None] = field(default=lambda _reason: None)  # "in_flight" or "waited"
    clock: Callable[[], float] = time.monotonic
    in_flight: int = 0
    loop_lag: float = 0.0  # seconds the event loop ran the watch's last timer late (``watch_loop``)
    lag_ended: float | None = None  # ``clock()`` when that late timer ran (None: the lag is counted whole)

    def admit(self, scope: Scope) -> bool:
        """True (and counted in flight until ``release``) when this request is taken; False when it is refused."""
        if self.in_flight >= self.max_in_flight:
            self.on_refused("in_flight")
            return False
        if self.late(scope):
            return False
        self.in_flight += 1
        return True

    def late(self, scope: Scope) -> bool:
        """True (and counted as refused) when the request has waited past ``max_queue_wait`` already: asked as the
        edge first sees a request that has a body, before the body is awaited (``service/web/body_arrival.py``)."""
        arrived = scope.get(ARRIVED)
        if arrived is not None and self.clock() - arrived + self.unseen(arrived) > self.max_queue_wait:
            self.on_refused("waited")
            return True
        return False

    def unseen(self, arrived: float) -> float:
        """The wait before a head read at ``arrived`` that its stamp cannot see: the part of the loop's last lag
        (the stall from the late timer's due time to its run, ``lag_ended``) that came before the head was read. A
        stall after the read is in ``clock() - arrived`` already."""
        if self.lag_ended is None:
            return self.loop_lag
        return max(0.0, min(self.loop_lag, arrived - (self.lag_ended - self.loop_lag)))

    def take(self) -> bool:
        """True (and counted in flight until ``release``) when the worker answers fewer than ``max_in_flight``
        requests; False (counted as refused) otherwise. For a request whose body has arrived, asked ``late`` before
        it was awaited: the time its body took to arrive is the client's, not a wait in this worker's queue."""
        if self.in_flight >= self.max_in_flight:
            self.on_refused("in_flight")
            return False
        self.in_flight += 1
        return True

    def release(self) -> None:
        self.in_flight -= 1

    async def watch_loop(self, stopping: asyncio.Event, every: float = LAG_EVERY) -> None:
        """Until ``stopping``: every ``every`` seconds, how late the event loop ran the timer (``loop_lag``), a task
        of the worker's lifespan (``service/app.py``)."""
        while not stopping.is_set():
            started = self.clock()
            await asyncio.sleep(every)
            ran = self.clock()
            self.loop_lag = max(0.0, ran - started - every)
            self.lag_ended = ran
