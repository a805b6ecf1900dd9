"""A worker accepts every connection waiting on its socket whenever the socket is readable
(``service/ops/accepting.py``): under load, a new connection's first request is read at once, not after the
kernel's accept queue drains one connection a turn; out of file descriptors, accepting pauses and resumes."""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import time
from collections.abc import Callable, Iterator

import pytest
from uvicorn.config import Config

from service.ops import accepting
from service.ops.accepting import EagerAcceptLoop, Listener
from service.ops.bounded_http import HeadLimits
from service.ops.server import LOOP, worker_class


class Echo(asyncio.Protocol):
    made: list[Echo] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        Echo.made.append(self)

    def data_received(self, data: bytes) -> None:
        self.transport.write(data)  # type: ignore[attr-defined]


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    Echo.made = []
    loop = accepting.new_event_loop()
    yield loop
    loop.run_until_complete(asyncio.sleep(0.01))  # connections still being handed over are made
    for each in Echo.made:
        each.transport.close()
    loop.run_until_complete(asyncio.sleep(0.01))
    loop.close()


@pytest.fixture
def listener(loop: asyncio.AbstractEventLoop) -> Iterator[tuple[Listener, socket.socket]]:
    """A server on a listening socket of its own, closed after the test whatever it found."""
    sock = listening()
    server = loop.run_until_complete(loop.create_server(Echo, sock=sock, backlog=128))
    assert isinstance(server, Listener)
    yield server, sock
    server.close()


def listening(kind: type[socket.socket] = socket.socket) -> socket.socket:
    sock = kind(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    return sock


Connect = Callable[[socket.socket, int], list[socket.socket]]


@pytest.fixture
def connect() -> Iterator[Connect]:
    """``connect(sock, count)``: ``count`` clients whose handshake the kernel completes while nobody accepts them
    yet; closed after the test, whatever it found."""
    opened: list[socket.socket] = []

    def clients(sock: socket.socket, count: int) -> list[socket.socket]:
        made = [socket.create_connection(sock.getsockname()[:2], timeout=5) for _ in range(count)]
        opened.extend(made)
        return made

    yield clients
    for client in opened:
        client.close()


def test_the_service_loop_is_the_eager_accepting_uvloop_in_one_process_and_in_gunicorn_workers() -> None:
    factory = Config(app=None, loop=LOOP).get_loop_factory()
    assert factory is not None
    loop = factory()
    try:
        assert isinstance(loop, EagerAcceptLoop)
    finally:
        loop.close()
    limits = HeadLimits(line_limit=8192, head_limit=16384, fields_limit=100, head_timeout=10.0)
    assert worker_class(limits).CONFIG_KWARGS["loop"] == LOOP


class Turns:
    """The listener's clock: each call is a turn of ``length`` seconds after the last."""

    def __init__(self, length: float) -> None:
        self.length = length
        self.now = 1000.0

    def __call__(self) -> float:
        self.now += self.length
        return self.now


def waiting(sock: socket.socket) -> int:
    """Connections still in the kernel's accept queue (taken here, so no loop sees them)."""
    count = 0
    while True:
        try:
            taken, _ = sock.accept()
        except BlockingIOError:
            return count
        taken.close()
        count += 1


def test_while_the_loops_turns_are_short_a_few_connections_are_taken_a_turn_so_workers_sharing_a_socket_split_a_burst(
    listener: tuple[Listener, socket.socket], connect: Connect
) -> None:
    server, sock = listener
    server.clock = Turns(0.001)
    connect(sock, 20)
    server._accept(sock)  # what the loop calls when the socket is readable
    server._accept(sock)  # the next turn, 1 ms later
    assert waiting(sock) == 20 - 2 * accepting.ACCEPT_FEW  # left to the other workers' turns


def test_once_a_turn_is_slow_every_connection_waiting_is_taken_at_once(
    loop: asyncio.AbstractEventLoop, listener: tuple[Listener, socket.socket], connect: Connect
) -> None:
    server, sock = listener
    server.clock = Turns(2 * accepting.SLOW_TURN)
    clients = connect(sock, 60)
    server._accept(sock)  # a few, and connections are left waiting
    server._accept(sock)  # a turn of twice SLOW_TURN later: the rest
    assert waiting(sock) == 0
    loop.run_until_complete(asyncio.sleep(0.05))
    assert len(Echo.made) == 60
    for index, client in enumerate(clients):
        client.sendall(b"ping %d" % index)
    loop.run_until_complete(asyncio.sleep(0.05))
    assert [client.recv(64) for client in clients] == [b"ping %d" % index for index in range(60)]


def test_under_a_busy_loop_a_backlog_of_connections_is_taken_within_a_few_turns_where_uvloop_takes_one_a_turn(
    loop: asyncio.AbstractEventLoop, listener: tuple[Listener, socket.socket], connect: Connect
) -> None:
    _, sock = listener
    connect(sock, 60)

    def busy() -> None:
        time.sleep(accepting.SLOW_TURN)  # every turn of the loop takes SLOW_TURN
        loop.call_soon(busy)

    loop.call_soon(busy)
    loop.run_until_complete(asyncio.sleep(0.3))  # about 30 turns: libuv alone would take one connection each
    assert len(Echo.made) == 60


def test_a_server_made_from_host_and_port_listens_there_and_stops_accepting_once_closed(
    loop: asyncio.AbstractEventLoop,
) -> None:
    server = loop.run_until_complete(loop.create_server(Echo, host="127.0.0.1", port=0, backlog=16))
    assert isinstance(server, Listener) and server.is_serving()
    address = server.sockets[0].getsockname()[:2]
    client = socket.create_connection(address, timeout=5)
    loop.run_until_complete(asyncio.sleep(0.05))
    assert len(Echo.made) == 1
    server.close()
    loop.run_until_complete(server.wait_closed())
    assert not server.is_serving() and server.sockets == ()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(address, timeout=5)
    client.close()


class RunsOutOnce(socket.socket):
    """A listening socket whose first accept finds the process out of file descriptors."""

    failures = 1

    def accept(self) -> tuple[socket.socket, object]:
        if self.failures:
            self.failures -= 1
            raise OSError(errno.EMFILE, "Too many open files")
        return super().accept()


def test_out_of_file_descriptors_accepting_pauses_then_takes_the_waiting_connections(
    loop: asyncio.AbstractEventLoop,
    caplog: pytest.LogCaptureFixture,
    connect: Connect,
) -> None:
    sock = listening(RunsOutOnce)
    server = loop.run_until_complete(loop.create_server(Echo, sock=sock, backlog=16))
    assert isinstance(server, Listener)
    server.accept_retry = 0.2  # its pause, shortened (as its clock is replaced above)
    connect(sock, 3)
    with caplog.at_level(logging.ERROR, logger="service.ops.accepting"):
        loop.run_until_complete(asyncio.sleep(0.05))
    assert Echo.made == []  # paused, the connections wait in the kernel's queue
    assert "cannot accept connections (Too many open files)" in caplog.text
    loop.run_until_complete(asyncio.sleep(0.4))
    assert len(Echo.made) == 3
    server.close()
