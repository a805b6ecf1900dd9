"""uvicorn's httptools protocol with bounded request heads: their size, their count of lines, and their time.

uvicorn bounds a head only with its h11 protocol (``h11_max_incomplete_event_size``, which is pure Python and
slower on the hot path); with httptools, a head of any size is buffered until it ends (uvicorn issue #157:
httptools' own limit cannot be changed), and no protocol has a time bound on receiving a head:
``timeout_keep_alive`` runs only between requests and stops at the first byte, so a client that sends one
byte a second holds its connection for ever (slowloris). This subclass adds both, as nginx's
``large_client_header_buffers`` and ``client_header_timeout`` do:

- it scans the bytes of a head as they arrive, before httptools buffers them: a request line over
  ``head_limit`` is answered 414, a header line over ``line_limit``, a head over ``head_limit`` or with more
  than ``fields_limit`` header lines 431 (RFC 6585 §5), and the connection is closed. The request line may
  take the whole head's bound, not a header line's: the contracts' own parameter bounds (``state``,
  ``nonce``, ``redirect_uri``… at authorize) make URLs longer than 16 KiB that a client may rightly send,
  and whose refusal is the operation's own 400 in its own words, not the server's 414;
- a connection must deliver a whole head within ``head_timeout`` seconds of its start, or of the first byte of
  the next request on a kept-alive connection; else it is closed. Idle kept-alive connections are closed after
  uvicorn's ``timeout_keep_alive``; a new connection that sends nothing meets the head bound.

As a head completes, its time (``time.monotonic()``) is stamped in the request's scope under
``service.web.admission.ARRIVED``: the edge refuses a request that has waited too long for the event loop
since (503 at once, docs/operations.md "Overload") rather than answer it late.

The scan stops at the empty line that ends a head; the body and any pipelined request in the same read are
left to httptools (a pipelined head that starts inside a read is bounded by that read's size in addition).

A response leaves in one write: uvicorn writes a response's head as the app starts it and its body as the app
sends it, two system calls for every small answer (a quarter of a prepared document's time on the event loop).
The protocol hands uvicorn the connection's transport wrapped in ``HeadHeld`` (``connection_made``, asyncio's
protocol interface), which keeps a response's head until its first body bytes and writes both together (as
``MSG_MORE`` or ``TCP_CORK`` would), or writes it alone when the connection closes; the answer to a HEAD request,
which has no body, is written at once.

What this relies on in uvicorn's ``HttpToolsProtocol`` (checked by tests/unit/test_uvicorn_protocol.py, which
fails on an upgrade that changes it): the protocol methods overridden here, with their signatures; ``scope``,
``cycle`` (its ``response_complete``), ``transport``, ``loop`` and ``logger``, which ``HttpToolsProtocol`` keeps
on itself; ``on_response_complete``, which its cycle calls once a response has been written whole; and that it
writes a response's head in one write, before its body. Upstream: the missing bound is uvicorn issue #157
(closed in 2026 with the bound left to h11); for the one write we found no uvicorn issue (aiohttp coalesces a small
answer's head and body since aio-libs/aiohttp#10991).
"""

from __future__ import annotations

import asyncio
import http
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, cast

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from service.web.admission import ARRIVED


@dataclass(frozen=True, slots=True)
class HeadLimits:
    line_limit: int  # bytes of one header line (the request line may take the whole head_limit)
    head_limit: int  # bytes of a whole head
    fields_limit: int  # header lines in a head
    head_timeout: float  # seconds to receive a whole head


def bounded_protocol(limits: HeadLimits) -> type[HttpToolsProtocol]:
    """The protocol class to give uvicorn (``http=``), with ``limits``."""
    return type("BoundedHttpToolsProtocol", (BoundedHttpToolsProtocol,), {"limits": limits})


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    limits: HeadLimits  # set by bounded_protocol()
    _held: HeadHeld  # the connection's transport as uvicorn writes to it (connection_made)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._in_head = True  # waiting for, or reading, a head
        self._head_bytes = 0
        self._line_bytes = 0  # of the line being read
        self._lines = 0  # complete lines of this head, the request line included
        self._head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._held = HeadHeld(transport)
        super().connection_made(cast(asyncio.Transport, self._held))  # uvicorn writes through it
        self._arm_head_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_deadline()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._in_head:
            self._arm_head_deadline()  # the first byte of the next request on a kept-alive connection
            refusal = self._scan_head(data)
            if refusal is not None:
                self._refuse(refusal)
                return
        super().data_received(data)

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._disarm_head_deadline()
        self.scope[ARRIVED] = time.monotonic()  # type: ignore[literal-required]
        super().on_headers_complete()  # the method is in the scope from here; the app runs later, as a task
        # Its response will carry its head with its body; HEAD's has none. Responses leave in the requests' order.
        self._held.expect(hold=self.scope["method"] != "HEAD")

    def on_response_complete(self) -> None:
        self._held.response_complete()
        super().on_response_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_head = True  # the next bytes start the next head
        self._head_bytes = self._line_bytes = self._lines = 0

    def _scan_head(self, data: bytes) -> http.HTTPStatus | None:
        """Count ``data`` into the head being read: the refusal once a bound is passed, else None."""
        limits = self.limits
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                self._line_bytes += len(data) - start
                self._head_bytes += len(data) - start
                break
            line = self._line_bytes + end - start  # without the LF
            self._head_bytes += end + 1 - start
            self._line_bytes = 0
            start = end + 1
            if line <= 1:  # an empty line (CRLF or LF)
                if self._lines == 0:
                    continue  # RFC 9112 §2.2: empty lines before the request line are ignored
                self._lines = 0  # the head is complete: the rest is httptools' to read
                self._head_bytes = 0
                return None
            if self._lines == 0 and line > limits.head_limit:
                return http.HTTPStatus.REQUEST_URI_TOO_LONG
            if self._lines > 0 and line > limits.line_limit:
                return _TOO_LARGE
            self._lines += 1
            if self._lines > limits.fields_limit + 1 or self._head_bytes > limits.head_limit:
                return _TOO_LARGE
        if self._lines == 0 and self._line_bytes > limits.head_limit:
            return http.HTTPStatus.REQUEST_URI_TOO_LONG
        if self._lines > 0 and self._line_bytes > limits.line_limit:
            return _TOO_LARGE
        return _TOO_LARGE if self._head_bytes > limits.head_limit else None

    def _refuse(self, status: http.HTTPStatus) -> None:
        """Answer ``status`` with a short text and close: the head was never parsed, so no app sees it."""
        self._disarm_head_deadline()
        self._in_head = False
        body = f"{status.phrase}\n".encode("ascii")
        self.logger.warning("request head refused: %s", status.phrase)
        self.transport.write(
            b"HTTP/1.1 %d %s\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: %d\r\n"
            b"connection: close\r\n\r\n%s" % (status.value, status.phrase.encode("ascii"), len(body), body)
        )
        self.transport.close()

    def _arm_head_deadline(self) -> None:
        if self._head_deadline is None:
            self._head_deadline = self.loop.call_later(self.limits.head_timeout, self._head_too_slow)

    def _disarm_head_deadline(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_too_slow(self) -> None:
        self._head_deadline = None
        if self.transport.is_closing():
            return
        if self.cycle is not None and not self.cycle.response_complete:
            self._arm_head_deadline()  # a pipelined head behind a request still being answered: not yet
            return
        self.logger.info("closed a connection that sent no complete request head in %s s", self.limits.head_timeout)
        self.transport.close()


_TOO_LARGE = http.HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE
_INTERIM = b"HTTP/1.1 1"  # an interim response (100 Continue), written at once: the client waits for it


class HeadHeld:
    """The transport uvicorn writes a connection's responses through: a response's head is held until the next write
    (its first body bytes), and both leave in one write; a head expected without a body (HEAD's answer) and an
    interim response (1xx) are not held. Closing writes a head still held first. Everything else is the
    connection's transport.

    The protocol says, for each request read, whether its response's head is to be held (``expect``), in the
    order the responses will be written, and when a response has been written whole (``response_complete``):
    between the two, every write is that response's body."""

    __slots__ = ("_transport", "_head", "_holds", "_in_body")

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._head: bytes | None = None
        self._holds: deque[bool] = deque()  # of the requests read and not yet answered, in order
        self._in_body = False  # the current response's head has been written: the rest goes straight through

    def expect(self, *, hold: bool) -> None:
        self._holds.append(hold)

    def response_complete(self) -> None:
        self._in_body = False

    def write(self, data: bytes) -> None:
        if self._in_body:
            self._transport.write(data)
        elif self._head is not None:
            head, self._head = self._head, None
            self._in_body = True
            self._transport.writelines((head, data))  # one system call (uvloop gathers them; asyncio joins them)
        elif data.startswith(_INTERIM):
            self._transport.write(data)
        elif self._holds.popleft() if self._holds else False:
            self._head = data
        else:  # a HEAD answer, or a refusal of the protocol's own before any request was read: then it closes
            self._in_body = True
            self._transport.write(data)

    def close(self) -> None:
        if self._head is not None:
            head, self._head = self._head, None
            self._transport.write(head)
        self._transport.close()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)
