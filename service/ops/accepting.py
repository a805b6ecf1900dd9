"""The event loop of a worker: uvloop, with new connections accepted as fast as they arrive.

libuv, under uvloop, accepts one connection each time the loop finds its listening socket readable
(``uv__server_io``), once a turn. A worker busy with many kept-alive connections turns its loop every tens of
milliseconds, so new connections pile up in the kernel's accept queue: the kernel has completed their handshake,
the client has sent its first request, and nobody reads it. With one pinned worker under 256 and 1,024 keep-alive
connections (``python -m bench --only overload``), most of them waited there, the queue draining at about 70
connections a second: their first requests were answered 2 to 8 s late, while every request the worker had
accepted was answered within 0.12 s. The worker's admission bound (``service/web/admission.py``) cannot refuse
a request it has not read.

``EagerAcceptLoop`` serves a listening socket as asyncio's own loop does: whenever it is readable, every connection
waiting is accepted (up to ``ACCEPT_PER_TURN``), each handed to uvloop as an accepted socket
(``connect_accepted_socket``: the same transport, TCP_NODELAY included), so its request meets the admission
bound at once, answered or refused 503. uvloop's speed on the connections themselves is kept (asyncio's loop
answered a third fewer requests a second). Out of file descriptors, accepting pauses for ``ACCEPT_RETRY``
seconds, as asyncio's does; the connections wait in the kernel's queue meanwhile.

uvicorn takes the loop from its ``loop`` setting as an import string (``service.ops.server.LOOP``), in one
process or in each gunicorn worker. TLS and Unix sockets, which the service does not serve, keep uvloop's own
server.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
from collections.abc import Callable
from typing import Any

import uvloop

ACCEPT_PER_TURN = 256  # connections accepted at most each time the listening socket is found readable
ACCEPT_RETRY = 1.0  # seconds before accepting again once the process has no file descriptor left
_NO_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})

logger = logging.getLogger(__name__)


def new_event_loop() -> asyncio.AbstractEventLoop:
    return EagerAcceptLoop()


class EagerAcceptLoop(uvloop.Loop):
    async def create_server(  # type: ignore[override]  # uvloop's overloads, in one signature
        self,
        protocol_factory: Callable[[], asyncio.BaseProtocol],
        host: str | None = None,
        port: int | None = None,
        *,
        sock: socket.socket | None = None,
        backlog: int = 100,
        ssl: Any = None,
        **kwargs: Any,
    ) -> asyncio.AbstractServer:
        if ssl is not None or kwargs or (sock is None and (host is None or port is None)):
            own: Any = super()
            return await own.create_server(  # type: ignore[no-any-return]
                protocol_factory, host, port, sock=sock, backlog=backlog, ssl=ssl, **kwargs
            )
        if sock is None:
            family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]
            sock = socket.create_server((host, port), family=family, backlog=backlog)
        return Listener(self, sock, protocol_factory, backlog)


class Listener(asyncio.AbstractServer):
    """One listening socket, served by ``EagerAcceptLoop``; what uvicorn keeps as its server (``close``,
    ``wait_closed``, ``sockets``)."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        sock: socket.socket,
        protocol_factory: Callable[[], asyncio.BaseProtocol],
        backlog: int,
    ) -> None:
        self._loop = loop
        self._sock: socket.socket | None = sock
        self._protocol_factory = protocol_factory
        self._starting: set[asyncio.Task[Any]] = set()  # connections being handed to uvloop
        sock.setblocking(False)
        sock.listen(backlog)
        loop.add_reader(sock.fileno(), self._accept)

    def _accept(self) -> None:
        sock = self._sock
        if sock is None:
            return
        for _ in range(ACCEPT_PER_TURN):
            try:
                connection, _address = sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except ConnectionAbortedError:
                continue  # the client gave up while it waited in the queue
            except OSError as error:
                if error.errno not in _NO_RESOURCES:
                    raise
                logger.error("cannot accept connections (%s); trying again in %s s", error.strerror, ACCEPT_RETRY)
                self._loop.remove_reader(sock.fileno())
                self._loop.call_later(ACCEPT_RETRY, self._resume)
                return
            connection.setblocking(False)
            task = self._loop.create_task(self._loop.connect_accepted_socket(self._protocol_factory, connection))
            self._starting.add(task)
            task.add_done_callback(self._started)

    def _started(self, task: asyncio.Task[Any]) -> None:
        self._starting.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.warning("an accepted connection could not start: %r", task.exception())

    def _resume(self) -> None:
        if self._sock is not None:
            self._loop.add_reader(self._sock.fileno(), self._accept)

    @property
    def sockets(self) -> tuple[socket.socket, ...]:
        return () if self._sock is None else (self._sock,)

    def close(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            self._loop.remove_reader(sock.fileno())
            sock.close()

    async def wait_closed(self) -> None:
        return None  # the connections accepted are uvicorn's to drain

    def get_loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def is_serving(self) -> bool:
        return self._sock is not None

    async def start_serving(self) -> None:
        return None  # serving since it was made

    async def serve_forever(self) -> None:
        raise NotImplementedError("uvicorn runs the loop")
