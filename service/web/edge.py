"""One edge: the cross-cutting work of every request done in one ASGI layer, with ``send`` wrapped once.

Each concern keeps its own module (the request's id, metrics and log line in ``service/ops/observe.py``,
CORS in ``cors.py``, the documents in ``api_docs.py``, the body cap in ``body_limit.py``, the menus
API's key, limit and caching in ``service/menus_api/gate.py``, per-key usage in ``identity/api_keys/usage.py``);
the edge only calls them in order ("fuse the calls, not the code"). A concern is one of:

- a **step**, run before the API's app: ``await step(scope, receive, exchange)`` answers the request itself
  (through ``exchange``) and returns None, or returns the ``(scope, receive)`` the next step and the app get;
- a **start hook** a step registers on the exchange (``exchange.on_start``): called with the exchange and the
  response's header list as the response starts, innermost first (the last registered first); it may add,
  replace or remove headers in place, or just note the status;
- a **filter** (``exchange.filter``, at most one): sees the app's messages before anything else and returns
  the messages to send instead (the gate holds a 200 to give it its ETag; the documentation pages get their
  security policy);
- the **admission** (``service/web/admission.py``), asked by the edge before any step: past the worker's bound,
  the API's ``overloaded`` answers 503 at once. For an API that takes request bodies (``Api.bodies``), the edge
  first awaits the body of a request that has one (``service/web/body_arrival.py``): a body still on the way
  holds no place in the bound; one too slow is answered 408 by the API's ``too_slow``, and a client that leaves
  in the middle of its body is recorded as 499, never as an error of ours;
- the **observer**, called by the edge itself: ``begin`` as the request arrives, ``start`` as the response
  starts, ``done`` once the last byte of the body is about to leave (or when the request ends without it).

``Exchange`` is the single wrapper of ``send`` that every app and step answers through; an error that escapes
before the response started is answered as a problem by the edge (the last line of defence), never a bare 500.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.web.admission import RETRY_AFTER, Admission
from service.web.body_arrival import CLIENT_CLOSED, BodyWatch, Unread
from service.web.problems import send_problem, to_problem

Headers = list[tuple[bytes, bytes]]
StartHook = Callable[["Exchange", Headers], None]
Filter = Callable[[Message], Sequence[Message]]


class Step(Protocol):
    async def __call__(self, scope: Scope, receive: Receive, exchange: Exchange, /) -> tuple[Scope, Receive] | None: ...


class Observer(Protocol):
    def begin(self, exchange: Exchange) -> object:
        """The request has arrived: may replace ``exchange.scope``; returns what ``end`` is given."""

    def start(self, exchange: Exchange, headers: Headers) -> None:
        """The response starts with ``exchange.status`` and ``headers`` (a list it may change)."""

    def done(self, exchange: Exchange) -> None:
        """The response is complete, or the request ended without one: called once."""

    def end(self, token: object) -> None:
        """After ``done``: the request is over."""


class Exchange:
    """One request as it is answered: the only wrapper of the server's ``send`` (an ASGI ``send`` itself)."""

    __slots__ = ("scope", "status", "started", "complete", "on_start", "filter", "context", "_send", "_observer")

    def __init__(self, send: Send, scope: Scope, observer: Observer) -> None:
        self._send = send
        self._observer = observer
        self.scope = scope
        self.status = 500  # what is recorded if the app fails before answering
        self.started = False  # a response start has gone out
        self.complete = False  # the last body message has gone out
        self.on_start: list[StartHook] = []
        self.filter: Filter | None = None
        self.context: Any = None  # the observer's record of the request

    async def __call__(self, message: Message) -> None:
        if self.filter is None:
            await self._emit(message)
            return
        for each in self.filter(message):
            await self._emit(each)

    async def _emit(self, message: Message) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            self.started = True
            self.status = message["status"]
            headers = list(message.get("headers", ()))
            for hook in reversed(self.on_start):  # the innermost concern first, as nested layers would
                hook(self, headers)
            self._observer.start(self, headers)
            message = {**message, "headers": headers}
        elif kind == "http.response.body" and not message.get("more_body", False) and not self.complete:
            # Recorded before the last byte leaves: a client that has its answer finds it in the next scrape.
            self.complete = True
            self._observer.done(self)
        await self._send(message)

    def unhook(self) -> None:
        """Forget the steps' hooks and filter: what is sent now is the edge's own answer."""
        self.on_start.clear()
        self.filter = None


@dataclass(frozen=True, slots=True)
class Bodies:
    """What an API that takes request bodies tells the edge: ``limit``, the most bytes of a body it takes (its cap,
    enforced by the API itself: the edge reads no more before admission), and ``too_slow``, which sends its 408 in
    its own error form when a body does not arrive in time (the edge adds ``Connection: close``)."""

    limit: int
    too_slow: Callable[[Scope, Send], Awaitable[None]]


@dataclass(eq=False)
class Api:
    """An API behind the edge: its ``steps`` in order, then its ``app`` (called with the exchange as ``send``).
    ``overloaded`` sends its 503 in its own error form (``Retry-After`` seconds given) when the worker's admission
    refuses a request; None: the API is not bounded (``service/web/admission.py``). ``bodies``: the API takes
    request bodies, awaited before admission (``service/web/body_arrival.py``); None: it takes none (its own cap
    refuses any at once)."""

    app: ASGIApp
    steps: Sequence[Step] = field(default_factory=tuple)
    overloaded: Callable[[Scope, Send, int], Awaitable[None]] | None = None
    bodies: Bodies | None = None


async def answer(
    api: Api,
    observer: Observer,
    scope: Scope,
    receive: Receive,
    send: Send,
    admission: Admission | None = None,
    bodies: BodyWatch | None = None,
) -> None:
    """Answer one HTTP request with ``api``: observed, its body awaited (by ``bodies``), admitted, through its
    steps and app, ``send`` wrapped once."""
    exchange = Exchange(send, scope, observer)
    token = observer.begin(exchange)
    scope = exchange.scope
    bound = admission if api.overloaded is not None else None  # None: this API is not bounded
    in_flight = False  # counted by the admission until the answer ends
    try:
        if api.bodies is not None and bodies is not None:
            if bound is not None and bound.late(scope):
                await _overloaded(api, scope, exchange)
                return
            arrived = await bodies.read(scope, receive, api.bodies.limit)
            if arrived is Unread.GONE:
                exchange.status = CLIENT_CLOSED  # nobody to answer; recorded, never as an error of ours
                return
            if arrived is Unread.TOO_SLOW:
                exchange.on_start.append(_close_connection)  # the rest of the body is never read
                await api.bodies.too_slow(scope, exchange)
                return
            scope, receive = arrived
            if bound is not None:
                if not bound.take():
                    await _overloaded(api, scope, exchange)
                    return
                in_flight = True
        elif bound is not None:
            if not bound.admit(scope):
                await _overloaded(api, scope, exchange)
                return
            in_flight = True
        try:
            await through(api.steps, api.app, scope, receive, exchange)
        except Exception as error:
            # Last line of defence: an error that escapes an app is answered as a problem, never a bare 500.
            if exchange.started:
                raise
            exchange.unhook()
            await send_problem(exchange, to_problem(error))
    finally:
        if in_flight and bound is not None:
            bound.release()
        if not exchange.complete:  # the app failed, or the client left, before the answer was complete
            exchange.complete = True
            observer.done(exchange)
        observer.end(token)


async def _overloaded(api: Api, scope: Scope, exchange: Exchange) -> None:
    assert api.overloaded is not None
    await api.overloaded(scope, exchange, RETRY_AFTER)


def _close_connection(_: Exchange, headers: Headers) -> None:
    """RFC 9112 §9.6: the server closes the connection after this answer."""
    headers[:] = [(name, value) for name, value in headers if name.lower() != b"connection"]
    headers.append((b"connection", b"close"))


@dataclass(eq=False)
class Stepped:
    """An ASGI app that runs ``steps`` before ``app`` inside the edge (``send`` must be the request's exchange):
    for an app built after start-up, such as the developer console, whose steps are built with it."""

    app: ASGIApp
    steps: Sequence[Step]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        assert isinstance(send, Exchange), "Stepped runs inside the edge"
        await through(self.steps, self.app, scope, receive, send)


async def through(steps: Sequence[Step], app: ASGIApp, scope: Scope, receive: Receive, exchange: Exchange) -> None:
    """Run the request through ``steps`` in turn, then ``app``: a step that answers itself ends it there, one that
    lets it pass may hand on a new scope and ``receive``."""
    for step in steps:
        admitted = await step(scope, receive, exchange)
        if admitted is None:
            return
        scope, receive = admitted
    await app(scope, receive, exchange)
