"""A response leaves the server in one write (``service/server/bounded_http.py``, ``HeadHeld``): its head is held
until its first body bytes, never past the connection's close, and an interim 100 Continue or the answer to a HEAD
request is never held, pipelined requests included."""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.types import Receive, Scope, Send
from uvicorn.config import Config
from uvicorn.server import ServerState

from service.server.bounded_http import HeadLimits, bounded_protocol

LIMITS = HeadLimits(line_limit=16_384, head_limit=65_536, fields_limit=100, head_timeout=10.0)


class Transport(asyncio.Transport):
    """What the protocol writes, call by call."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, bytes]] = []
        self.closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.calls.append(("write", bytes(data)))

    def writelines(self, list_of_data: Any) -> None:
        self.calls.append(("writelines", b"".join(list_of_data)))

    def close(self) -> None:
        self.calls.append(("close", b""))
        self.closing = True

    def is_closing(self) -> bool:
        return self.closing

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 40000) if name in ("peername", "sockname") else default

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def exchange(app: Any, request: bytes, *, then: bytes = b"") -> list[tuple[str, bytes]]:
    """``request`` sent to the server's protocol on a fresh connection (``then`` a moment later); its writes."""
    config = Config(app=app, http=bounded_protocol(LIMITS), lifespan="off", log_config=None)
    config.load()
    protocol = config.http_protocol_class(config=config, server_state=ServerState(), app_state={})  # type: ignore[call-arg]
    transport = Transport()
    protocol.connection_made(transport)
    protocol.data_received(request)
    for _ in range(20):
        await asyncio.sleep(0)
    if then:
        protocol.data_received(then)
        for _ in range(20):
            await asyncio.sleep(0)
    protocol.connection_lost(None)
    return transport.calls


def writes(app: Any, request: bytes, *, then: bytes = b"") -> list[tuple[str, bytes]]:
    """The writes of ``exchange`` (the connection's own close, as the test ends it, left out)."""
    calls = asyncio.run(exchange(app, request, then=then))
    return calls[:-1] if calls and calls[-1][0] == "close" else calls


async def hello(scope: Scope, receive: Receive, send: Send) -> None:
    await receive()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"5")]})
    await send({"type": "http.response.body", "body": b"hello"})


def test_a_response_s_head_and_body_leave_in_one_write() -> None:
    calls = writes(hello, b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
    assert len(calls) == 1
    kind, data = calls[0]
    assert kind == "writelines"
    assert data.startswith(b"HTTP/1.1 200 OK\r\n") and data.endswith(b"\r\n\r\nhello")


def test_a_head_request_s_answer_is_written_at_once() -> None:
    calls = writes(hello, b"HEAD / HTTP/1.1\r\nhost: x\r\n\r\n")
    assert [kind for kind, _ in calls] == ["write"]
    assert calls[0][1].startswith(b"HTTP/1.1 200 OK\r\n") and calls[0][1].endswith(b"\r\n\r\n")


def test_a_100_continue_is_written_before_the_client_sends_its_body_not_held() -> None:
    head = b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 3\r\nexpect: 100-continue\r\n\r\n"
    calls = writes(hello, head, then=b"abc")
    assert calls[0] == ("write", b"HTTP/1.1 100 Continue\r\n\r\n")
    assert [kind for kind, _ in calls[1:]] == ["writelines"]
    assert calls[1][1].endswith(b"hello")


def test_a_held_head_is_written_before_the_connection_closes() -> None:
    async def fails_after_the_start(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"5")]})
        raise RuntimeError("the app failed half-way")

    calls = asyncio.run(exchange(fails_after_the_start, b"GET / HTTP/1.1\r\nhost: x\r\n\r\n"))
    assert [kind for kind, _ in calls][:2] == ["write", "close"]
    assert calls[0][1].startswith(b"HTTP/1.1 200 OK\r\n")


def test_pipelined_requests_each_answer_in_order_a_head_request_s_at_once_the_others_in_one_write() -> None:
    get = b"GET / HTTP/1.1\r\nhost: x\r\n\r\n"
    calls = writes(hello, get + b"HEAD / HTTP/1.1\r\nhost: x\r\n\r\n" + get)
    assert [kind for kind, _ in calls] == ["writelines", "write", "writelines"]
    assert calls[0][1].startswith(b"HTTP/1.1 200 OK\r\n") and calls[0][1].endswith(b"\r\n\r\nhello")
    assert calls[1][1].startswith(b"HTTP/1.1 200 OK\r\n") and calls[1][1].endswith(b"\r\n\r\n")
    assert calls[2][1].startswith(b"HTTP/1.1 200 OK\r\n") and calls[2][1].endswith(b"\r\n\r\nhello")


def test_a_chunked_answer_s_head_leaves_with_its_first_chunk_and_the_rest_as_sent() -> None:
    async def streams(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"one", "more_body": True})
        await send({"type": "http.response.body", "body": b"two"})

    calls = writes(streams, b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
    assert [kind for kind, _ in calls] == ["writelines", "write"]
    assert calls[0][1].startswith(b"HTTP/1.1 200 OK\r\n") and calls[0][1].endswith(b"\r\n\r\n3\r\none\r\n")
    assert calls[1][1] == b"3\r\ntwo\r\n0\r\n\r\n"
