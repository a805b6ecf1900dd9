"""A request's body is awaited before the request is admitted, within a time bound (RFC 9110 §15.5.9, 408).

A worker bounds the requests it answers at once (``service/web/admission.py``). A request counted there while
its body is still on the way holds its place for as long as the client cares to take: 140 connections that each
declared a 60,000-byte form and then sent one byte every two seconds held every place of a worker, and every
other request was refused 503, for about 200 bytes a connection and no credentials. So, as a proxy that buffers
request bodies does (nginx's ``proxy_request_buffering``), the edge (``service/web/edge.py``) first reads the
body of a request that has one, and only then asks the admission: a body that has not arrived holds no place.

The reading is bounded in size and in time:

- **size**: at most the API's cap (``Bodies.limit``, service/web/edge.py: the identity forms' 64 KiB, the
  console's 16 KiB) is read and held; a ``Content-Length`` over the cap is not read at all, and a chunked body is
  read until it crosses the cap. Either way the request then goes on to the API's own cap
  (``service/web/body_limit.py``), which refuses it with its 413 in the API's form;
- **time**, as Kestrel's ``MinRequestBodyDataRate`` and Apache's ``mod_reqtimeout`` bound it: a body must arrive
  whole within ``timeout`` seconds of the edge's first call (``MENUS_BODY_TIMEOUT``), and after a ``grace``
  its average rate since that call must be at least ``min_rate`` bytes a second (a body of *n* bytes received
  so far is cut at ``grace + n / min_rate`` seconds; ``BodyWatch`` looks every ``TICK`` seconds). The attack
  above is cut after the grace; a 64 KiB form on a slow mobile link takes a fraction of the total bound. A body
  too slow is answered 408 in the API's own error form (``Bodies.too_slow``, listed in the contracts for every
  operation that takes a body) with ``Connection: close``: the server closes the connection, and the rest of
  the body is never read.

A client that goes away in the middle of its body has nobody to answer: the edge records the request with
status 499 (nginx's "client closed request") instead of an error of ours, so a disconnect never counts as a 5xx.

The menus and operations APIs take no body at all: any body there is refused at once, never read
(``NO_BODY``), so nothing is awaited for them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from starlette.types import Message, Receive, Scope

CLIENT_CLOSED = 499  # the status a request is recorded with when its client left before it was answered
TICK = 0.1  # seconds between two looks of the watch at the bodies awaited (a body is cut this late at most)
IDLE_TICKS = 50  # looks with no body awaited before the watch stops (it starts again with the next body)


class Unread(Enum):
    """Why a body was not read whole: ``TOO_SLOW`` (answer 408) or ``GONE`` (the client left: nobody to answer)."""

    TOO_SLOW = "too_slow"
    GONE = "gone"


@dataclass(frozen=True, slots=True)
class BodyTiming:
    """How fast a request body must arrive."""

    timeout: float  # seconds a whole body may take, from the edge's first call
    min_rate: float  # bytes a second, on average since that call, once the grace is over
    grace: float  # seconds before the rate applies (the first round trips, a 100 Continue)

    def allowed(self, received: int) -> float:
        """Seconds since the start within which the body must be complete, or grow past ``received`` bytes."""
        return min(self.timeout, self.grace + received / self.min_rate)


def framing(scope: Scope) -> int | None:
    """The body the request's head announces: its ``Content-Length``, -1 for a chunked one (RFC 9112 §6.3:
    ``Transfer-Encoding`` overrides ``Content-Length``), None when there is no body (or no valid length: the
    API's cap refuses it)."""
    length: int | None = None
    for name, value in scope["headers"]:
        if name == b"transfer-encoding":
            return -1
        if name == b"content-length":
            length = int(value) if value.isdigit() else None
    return length or None


@dataclass(slots=True)
class _Reading:
    task: asyncio.Task[Any]  # the request's, awaiting its body
    start: float
    received: int = 0
    cut: bool = False  # the watch cancelled the task: the body was too slow


class BodyWatch:
    """The bodies a worker awaits, and the one task that cuts those too slow.

    A timer per request (``asyncio.timeout``) cost 9 to 11 µs of every body, most of which arrive with their head;
    instead, while any body is awaited (and for ``IDLE_TICKS`` after), one task looks every ``tick`` seconds at
    the bodies awaited and cancels the request of each past its time, which then answers 408. A body is cut
    within ``tick`` of its time."""

    def __init__(self, timing: BodyTiming, *, tick: float = TICK, clock: Callable[[], float] = time.monotonic) -> None:
        self.timing = timing
        self.tick = tick
        self.clock = clock
        self._reading: dict[asyncio.Task[Any], _Reading] = {}
        self._watcher: asyncio.Task[None] | None = None

    async def read(self, scope: Scope, receive: Receive, limit: int) -> tuple[Scope, Receive] | Unread:
        """Await the request's body (at most ``limit`` bytes of it, a few more for a chunked one that crosses it).
        Returns the request to hand on, its ``receive`` replaying what was read (and then the rest, if any, as it
        comes), or why it was not read."""
        announced = framing(scope)
        if announced is None or announced > limit:
            return scope, receive  # no body, or one the API's cap refuses unread
        task = asyncio.current_task()
        assert task is not None
        reading = self._reading[task] = _Reading(task, self.clock())
        watcher = self._watcher
        if watcher is None or watcher.done() or watcher.get_loop() is not task.get_loop():
            self._watcher = asyncio.create_task(self._watch())
        messages: list[Message] = []
        try:
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return Unread.GONE  # http.disconnect: the client left in the middle of its body
                messages.append(message)
                reading.received += len(message.get("body", b""))
                if not message.get("more_body", False) or reading.received > limit:
                    break
        except asyncio.CancelledError:
            if not reading.cut or task.uncancel() > 0:
                raise  # cancelled by someone else (the server stopping), too
            return Unread.TOO_SLOW
        finally:
            del self._reading[task]
        if messages[-1].get("more_body", False):  # crossed the cap: the API's cap reads what follows and refuses
            return scope, replay_then(messages, receive)
        if len(messages) == 1 and announced != -1:  # the usual case: the body came with its head, in one message
            return scope, replay_then(messages, receive)
        body = b"".join([message.get("body", b"") for message in messages])
        if announced == -1:  # read whole, a chunked body is now one of known length
            headers = [(n, v) for n, v in scope["headers"] if n not in (b"transfer-encoding", b"content-length")]
            headers.append((b"content-length", str(len(body)).encode()))
            scope = {**scope, "headers": headers}
        return scope, replay_then([{"type": "http.request", "body": body, "more_body": False}], receive)

    async def _watch(self) -> None:
        idle = 0
        while idle < IDLE_TICKS:
            await asyncio.sleep(self.tick)
            if not self._reading:
                idle += 1
                continue
            idle = 0
            now = self.clock()
            for reading in list(self._reading.values()):
                if not reading.cut and now - reading.start > self.timing.allowed(reading.received):
                    reading.cut = True
                    reading.task.cancel()


def replay_then(messages: list[Message], receive: Receive) -> Receive:
    """The request's ``receive`` with ``messages`` already read given again, in order, then ``receive`` itself
    (the rest of a body, or the disconnect whenever it comes)."""
    pending = messages[::-1]

    async def replayed() -> Message:
        if pending:
            return pending.pop()
        return await receive()

    return replayed
