"""A cap on every request body, enforced while it is read (RFC 9110 §15.5.14, 413 Content Too Large).

A request whose ``Content-Length`` is over the cap is refused at once, before a byte of its body is read; so is
any body at all (chunked or not) where the cap is ``NO_BODY``.
A request with a ``Transfer-Encoding`` (chunked; it overrides any ``Content-Length``, RFC 9112 §6.3) is read
here chunk by chunk, up to the cap: it is cut as soon as the cap is crossed, and otherwise replayed to the
app as a body of known length. Either way the server holds at most the cap (and the server's own read
buffer) of any body in memory. A request with neither header has no body and passes straight through, as
does one within its cap. Neither Starlette nor uvicorn offers such a cap, hence this small step (``BodyCap``,
at the edge) and its middleware form (``BodyLimit``).

The answer is the endpoint's own error form (``too_large`` builds it) and closes the connection, so the
rest of the body is never read."""

from __future__ import annotations

from collections.abc import Callable

from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

NO_BODY = 0  # the menus and operations APIs take no request body at all


def replay(body: bytes, receive: Receive) -> Receive:
    """The request's ``receive`` with the body already read given again, once."""
    replayed = False

    async def replay_body() -> Message:
        nonlocal replayed
        if replayed:
            return await receive()  # after the body: the disconnect, whenever it comes
        replayed = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay_body


class BodyCap:
    """The cap as a step of the edge (``service/web/edge.py``): answers a refusal itself, or returns the request
    (a chunked body read whole and replayed, as one of known length)."""

    def __init__(self, limit: int, too_large: Callable[[Scope, int], Response]) -> None:
        self.limit = limit
        self.too_large = too_large

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> tuple[Scope, Receive] | None:
        length: bytes | None = None
        chunked = False
        for name, value in scope["headers"]:
            if name == b"content-length":
                length = value
            elif name == b"transfer-encoding":
                chunked = True
        if chunked:  # RFC 9112 §6.3: Transfer-Encoding overrides Content-Length
            if self.limit == NO_BODY:  # refused unread: nothing of it is awaited (service/web/body_arrival.py)
                await self._refuse(scope, receive, send)
                return None
            return await self._read_capped(scope, receive, send)
        if length is not None and (not length.isdigit() or int(length) > self.limit):
            await self._refuse(scope, receive, send)
            return None
        return scope, receive

    async def _read_capped(self, scope: Scope, receive: Receive, send: Send) -> tuple[Scope, Receive] | None:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None  # the client left: nobody to answer
            body = message.get("body", b"")
            size += len(body)
            if size > self.limit:
                await self._refuse(scope, receive, send)
                return None
            chunks.append(body)
            if not message.get("more_body", False):
                break
        whole = b"".join(chunks)
        # Read whole, the body is now one of known length (Connexion reads a body only when it has one).
        headers = [(n, v) for n, v in scope["headers"] if n not in (b"transfer-encoding", b"content-length")]
        headers.append((b"content-length", str(len(whole)).encode()))
        return {**scope, "headers": headers}, replay(whole, receive)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = self.too_large(scope, self.limit)
        response.headers["Connection"] = "close"  # the rest of the body is never read
        await response(scope, receive, send)


class BodyLimit:
    """The cap as a middleware, for an app that is not an API of the edge's own (the identity API's forms)."""

    def __init__(self, app: ASGIApp, limit: int, too_large: Callable[[Scope, int], Response]) -> None:
        self.app = app
        self.cap = BodyCap(limit, too_large)

    @property
    def limit(self) -> int:
        return self.cap.limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        admitted = await self.cap(scope, receive, send)
        if admitted is not None:
            await self.app(admitted[0], admitted[1], send)


def describe(limit: int) -> str:
    """The public text of a refusal."""
    if limit == 0:
        return "This endpoint takes no request body."
    return f"The request body is larger than {limit // 1024} KiB, the most this endpoint accepts."
