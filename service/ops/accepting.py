"""The event loop of a worker: uvloop, with new connections accepted as fast as they arrive.

libuv, under uvloop, accepts one connection each time the loop finds its listening socket readable
(``uv__server_io``), once a turn. A worker busy with many kept-alive connections turns its loop every tens of
milliseconds, so new connections pile up in the kernel's accept queue: the kernel has completed their handshake,
the client has sent its first request, and nobody reads it. With one pinned worker under 256 and 1,024 keep-alive
connections (``python -m bench --only overload``), most of them waited there, the queue draining at about 70
connections a second: their first requests were answered 2 to 8 s late, while every request the worker had
accepted was answered within 0.12 s. The worker's admission bound (``service/web/admission.py``) cannot refuse
a request it has not read.

``EagerAcceptLoop`` serves a listening socket itself, and hands each connection to uvloop as an accepted socket
(``connect_accepted_socket``: the same transport, TCP_NODELAY included); uvloop's speed on the connections is
kept (asyncio's loop, which accepts eagerly too, answered a third fewer requests a second). How many it takes
each time the socket is readable depends on how long the loop's turns are:

- while they are short, ``ACCEPT_FEW`` a turn. Gunicorn's workers share one listening socket and all wake for
  each connection; a worker that took every waiting connection would take a burst of them alone (wrk's 16
  connections all on one of two workers, in one run of three), where a few each turn spreads them;
- once the last turn that left connections waiting took ``SLOW_TURN`` seconds or more (and less than ``STALE``:
  a later call is for connections that arrived since), every connection waiting (up to ``ACCEPT_MANY``), so
  that its request meets the admission bound at once, answered or refused 503.

Out of file descriptors, accepting pauses for ``ACCEPT_RETRY`` seconds, as asyncio's does; the connections
wait in the kernel's queue meanwhile.

uvicorn takes the loop from its ``loop`` setting as an import string (``service.ops.server.LOOP``), in one
process or in each gunicorn worker. A TLS server and ``create_unix_server``, which the service does not use,
keep uvloop's own.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import time
from collections.abc import Callable
from typing import Any

import uvloop

ACCEPT_FEW = 2  # connections accepted each time the listening socket is found readable, while turns are short
ACCEPT_MANY = 256  # the same, once a turn has taken SLOW_TURN or more
SLOW_TURN = 0.01  # seconds
STALE = 1.0  # seconds: connections left waiting longer ago were taken by another worker, or none were left
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
        if ssl is not None or kwargs or (sock is None and not (isinstance(host, str) and isinstance(port, int))):
            own: Any = super()
            return await own.create_server(  # type: ignore[no-any-return]
                protocol_factory, host, port, sock=sock, backlog=backlog, ssl=ssl, **kwargs
            )
        sockets = [sock] if sock is not None else _bound(host, port)  # type: ignore[arg-type]
        return Listener(self, sockets, protocol_factory, backlog)


def _bound(host: str, port: int) -> list[socket.socket]:
    """A socket bound to each address ``host`` names (``localhost``: IPv4 and IPv6), as asyncio's create_server
    binds them: SO_REUSEADDR, and IPv6 sockets for IPv6 alone."""
    sockets: list[socket.socket] = []
    try:
        for family, kind, protocol, _, address in dict.fromkeys(
            socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        ):
            sock = socket.socket(family, kind, protocol)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    return sockets


class Listener(asyncio.AbstractServer):
    """The listening sockets of one server, served by ``EagerAcceptLoop``; what uvicorn keeps as its server
    (``close``, ``wait_closed``, ``sockets``)."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        sockets: list[socket.socket],
        protocol_factory: Callable[[], asyncio.BaseProtocol],
        backlog: int,
    ) -> None:
        self._loop = loop
        self._sockets: tuple[socket.socket, ...] = tuple(sockets)
        self._protocol_factory = protocol_factory
        self._starting: set[asyncio.Task[Any]] = set()  # connections being handed to uvloop
        self._left_waiting: dict[int, float] = {}  # by socket: when connections were last left waiting on it
        self.clock = time.monotonic
        self.accept_retry = ACCEPT_RETRY  # seconds of pause once out of file descriptors (a test shortens it)
        for sock in self._sockets:
            sock.setblocking(False)
            sock.listen(backlog)
            loop.add_reader(sock.fileno(), self._accept, sock)

    def _accept(self, sock: socket.socket) -> None:
        now = self.clock()
        left = self._left_waiting.pop(sock.fileno(), None)  # a turn ago, if connections were left waiting
        slow = left is not None and SLOW_TURN <= now - left < STALE
        for _ in range(ACCEPT_MANY if slow else ACCEPT_FEW):
            try:
                connection, _address = sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except ConnectionAbortedError:
                continue  # the client gave up while it waited in the queue
            except OSError as error:
                if error.errno not in _NO_RESOURCES:
                    raise
                retry = self.accept_retry
                logger.error("cannot accept connections (%s); trying again in %s s", error.strerror, retry)
                self._loop.remove_reader(sock.fileno())
                self._loop.call_later(retry, self._resume, sock)
                return
            connection.setblocking(False)
            task = self._loop.create_task(self._loop.connect_accepted_socket(self._protocol_factory, connection))
            self._starting.add(task)
            task.add_done_callback(self._started)
        self._left_waiting[sock.fileno()] = now  # perhaps: the next call, a turn later, tells how long turns are

    def _started(self, task: asyncio.Task[Any]) -> None:
        self._starting.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.warning("an accepted connection could not start: %r", task.exception())

    def _resume(self, sock: socket.socket) -> None:
        if sock in self._sockets:
            self._loop.add_reader(sock.fileno(), self._accept, sock)

    @property
    def sockets(self) -> tuple[socket.socket, ...]:
        return self._sockets

    def close(self) -> None:
        sockets, self._sockets = self._sockets, ()
        for sock in sockets:
            self._loop.remove_reader(sock.fileno())
            sock.close()

    async def wait_closed(self) -> None:
        return None  # the connections accepted are uvicorn's to drain

    def get_loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def is_serving(self) -> bool:
        return bool(self._sockets)

    async def start_serving(self) -> None:
        return None  # serving since it was made

    async def serve_forever(self) -> None:
        raise NotImplementedError("uvicorn runs the loop")
