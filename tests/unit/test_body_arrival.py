"""The rules of awaiting a request body (service/web/body_arrival.py), without the app: which requests have a body,
how long a body may take for what it has sent, and what is handed on after it."""

from __future__ import annotations

import asyncio
from typing import Any

from service.web.body_arrival import BodyTiming, BodyWatch, Unread, framing

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
        arrived = await BodyWatch(TIMING).read(scope, receive, 1024)
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
        arrived = await BodyWatch(TIMING).read(scope, receive, 10)
        assert not isinstance(arrived, Unread)
        return [await arrived[1]() for _ in range(3)]

    replayed = asyncio.run(run())
    assert [m["body"] for m in replayed] == [b"a" * 8, b"b" * 8, b"c" * 8]  # the last one read by the API's cap


def test_a_client_that_leaves_before_its_body_is_whole_is_gone() -> None:
    receive = messages({"type": "http.request", "body": b"a", "more_body": True}, {"type": "http.disconnect"})
    assert asyncio.run(BodyWatch(TIMING).read(scope_with((b"content-length", b"5")), receive, 10)) is Unread.GONE


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_watch_cuts_a_body_once_its_time_is_over_and_not_before() -> None:
    """Two bodies that sent one byte and then nothing: the watch (looking at every turn of the loop) cuts the one
    whose time is over; the other, started later, is still awaited."""
    clock = Clock()
    watch = BodyWatch(TIMING, tick=0, clock=clock)
    more = asyncio.Event()

    async def stalled() -> dict[str, Any]:
        if not more.is_set():
            more.set()
            return {"type": "http.request", "body": b"g", "more_body": True}
        await asyncio.Event().wait()  # the rest never comes
        raise AssertionError

    async def run() -> tuple[object, bool]:
        scope = scope_with((b"content-length", b"100"))
        early = asyncio.ensure_future(watch.read(scope, stalled, 1024))
        await more.wait()
        clock.now += TIMING.allowed(1) - 1  # a second before the early one's time
        more.clear()
        late = asyncio.ensure_future(watch.read(scope, stalled, 1024))
        await more.wait()
        for _ in range(5):
            await asyncio.sleep(0)
        assert not early.done()
        clock.now += 1.001  # the early one's time is over, not the late one's
        result = await asyncio.wait_for(early, 5)
        still = not late.done()
        late.cancel()
        return result, still

    result, still_awaited = asyncio.run(run())
    assert result is Unread.TOO_SLOW
    assert still_awaited
