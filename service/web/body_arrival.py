"""A request's body is awaited before the request is admitted, within a time bound (RFC 9110 §15.5.9, 408).

A worker bounds the requests it answers at once (``service/web/admission.py``). A request counted there while
its body is still on the way holds its place for as long as the client cares to take: 140 connections that each
declared a 60,000-byte form and then sent one byte every two seconds held every place of a worker, and every
other request was refused 503, for about 200 bytes a connection and no credentials. So, as a proxy that buffers
request bodies does (nginx's ``proxy_request_buffering``), the edge (``service/web/edge.py``) first reads the
body of a request that has one, and only then asks the admission: a body that has not arrived holds no place.

The reading is bounded in size and in time:

- **size**: at most the API's cap (``Api.body_limit``: the identity forms' 64 KiB, the console's 16 KiB) is read
  and held; a ``Content-Length`` over the cap is not read at all, and a chunked body is read until it crosses
  the cap. Either way the request then goes on to the API's own cap (``service/web/body_limit.py``), which
  refuses it with its 413 in the API's form;
- **time**, as Kestrel's ``MinRequestBodyDataRate`` and Apache's ``mod_reqtimeout`` bound it: a body must arrive
  whole within ``timeout`` seconds of the edge's first call (``MENUS_BODY_TIMEOUT``), and after a ``grace``
  its average rate since that call must be at least ``min_rate`` bytes a second (a body of *n* bytes received
  so far is cut at ``grace + n / min_rate`` seconds). The attack above is cut after the grace; a 64 KiB form on
  a slow mobile link takes a fraction of the total bound. A body too slow is answered 408 in the API's own
  error form (``Api.too_slow``, listed in the contracts for every operation that takes a body) with
  ``Connection: close``: the server closes the connection, and the rest of the body is never read.

A client that goes away in the middle of its body has nobody to answer: the edge records the request with
status 499 (nginx's "client closed request") instead of an error of ours, so a disconnect never counts as a 5xx.

The menus and operations APIs take no body at all: any body there is refused at once, never read
(``NO_BODY``), so nothing is awaited for them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from starlette.types import Message, Receive, Scope

CLIENT_CLOSED = 499  # the status a request is recorded with when its client left before it was answered


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


async def read_body(scope: Scope, receive: Receive, limit: int, timing: BodyTiming) -> tuple[Scope, Receive] | Unread:
    """Await the request's body (at most ``limit`` bytes of it, a few more for a chunked one that crosses it)
    within ``timing``. Returns the request to hand on, its ``receive`` replaying what was read (and then the
    rest, if any, as it comes), or why it was not read."""
    announced = framing(scope)
    if announced is None or announced > limit:
        return scope, receive  # no body, or one the API's cap refuses unread
    loop = asyncio.get_running_loop()
    start = loop.time()
    received = 0
    messages: list[Message] = []
    try:
        async with asyncio.timeout_at(start + timing.allowed(0)) as deadline:
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return Unread.GONE  # http.disconnect: the client left in the middle of its body
                messages.append(message)
                received += len(message.get("body", b""))
                if not message.get("more_body", False) or received > limit:
                    break
                deadline.reschedule(start + timing.allowed(received))
    except TimeoutError:
        return Unread.TOO_SLOW
    if messages[-1].get("more_body", False):  # crossed the cap: the API's cap reads what follows and refuses
        return scope, replay_then(messages, receive)
    body = b"".join(message.get("body", b"") for message in messages)
    if announced == -1:  # read whole, a chunked body is now one of known length
        headers = [(n, v) for n, v in scope["headers"] if n not in (b"transfer-encoding", b"content-length")]
        headers.append((b"content-length", str(len(body)).encode()))
        scope = {**scope, "headers": headers}
    return scope, replay_then([{"type": "http.request", "body": body, "more_body": False}], receive)


def replay_then(messages: Sequence[Message], receive: Receive) -> Receive:
    """The request's ``receive`` with ``messages`` already read given again, in order, then ``receive`` itself
    (the rest of a body, or the disconnect whenever it comes)."""
    pending = list(messages)
    pending.reverse()

    async def replayed() -> Message:
        if pending:
            return pending.pop()
        return await receive()

    return replayed
