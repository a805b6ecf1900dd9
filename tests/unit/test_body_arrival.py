"""The rules of awaiting a request body (service/web/body_arrival.py), without the app: which requests have a body,
how long a body may take for what it has sent, and what is handed on after it."""

from __future__ import annotations

import asyncio
from typing import Any

from service.web.body_arrival import BodyTiming, Unread, framing, read_body

TIMING = BodyTiming(timeout=10, min_rate=240, grace=5)


def scope_with(*headers: tuple[bytes, bytes]) -> dict[str, Any]:
    return {"type": "http", "headers": list(headers)}


def test_a_body_may_take_the_grace_then_as_long_as_its_bytes_allow_at_the_rate_never_past_the_timeout() -> None:
    assert TIMING.allowed(0) == 5  # nothing sent: cut after the grace
    assert TIMING.allowed(480) == 7  # 480 bytes at 240 a second buy two more seconds
    assert TIMING.allowed(60_000) == 10  # however fast, the whole body within the timeout


def test_the_head_says_whether_a_body_comes_chunked_overriding_a_length() -> None:
    assert framing(scope_with((b"content-length", b"29"))) == 29
    assert framing(scope_with((b"content-length", b"29"), (b"transfer-encoding", b"chunked"))) == -1
    assert framing(scope_with((b"content-length", b"0"))) is None
    assert framing(scope_with((b"content-length", b"x1"))) is None  # the API's cap refuses it, unread
    assert framing(scope_with()) is None


def messages(*items: dict[str, Any]) -> Any:
    queue = list(items)

    async def receive() -> dict[str, Any]:
        return queue.pop(0)

    return receive


def test_a_chunked_body_read_whole_is_handed_on_as_one_of_known_length() -> None:
    scope = scope_with((b"transfer-encoding", b"chunked"))
    receive = messages(
        {"type": "http.request", "body": b"grant_type=", "more_body": True},
        {"type": "http.request", "body": b"client_credentials", "more_body": False},
    )

    async def run() -> tuple[dict[str, Any], dict[str, Any]]:
        arrived = await read_body(scope, receive, 1024, TIMING)
        assert not isinstance(arrived, Unread)
        return arrived[0], await arrived[1]()

    handed, first = asyncio.run(run())
    assert handed["headers"] == [(b"content-length", b"29")]
    assert first == {"type": "http.request", "body": b"grant_type=client_credentials", "more_body": False}


def test_a_chunked_body_past_the_cap_is_read_no_further_and_handed_on_with_the_rest_to_come() -> None:
    scope = scope_with((b"transfer-encoding", b"chunked"))
    rest = {"type": "http.request", "body": b"c" * 8, "more_body": False}
    receive = messages(
        {"type": "http.request", "body": b"a" * 8, "more_body": True},
        {"type": "http.request", "body": b"b" * 8, "more_body": True},
        rest,
    )

    async def run() -> list[dict[str, Any]]:
        arrived = await read_body(scope, receive, 10, TIMING)
        assert not isinstance(arrived, Unread)
        return [await arrived[1]() for _ in range(3)]

    replayed = asyncio.run(run())
    assert [m["body"] for m in replayed] == [b"a" * 8, b"b" * 8, b"c" * 8]  # the last one read by the API's cap


def test_a_client_that_leaves_before_its_body_is_whole_is_gone() -> None:
    receive = messages({"type": "http.request", "body": b"a", "more_body": True}, {"type": "http.disconnect"})
    assert asyncio.run(read_body(scope_with((b"content-length", b"5")), receive, 10, TIMING)) is Unread.GONE
