"""The server's log lines written in batches (``service.ops.logs.BatchedStandardError``): whole lines, at most
PIPE_BUF bytes a write, an INFO line within ``flush_after``, a warning at once and in order, nothing written twice
across a fork."""

from __future__ import annotations

import io
import json
import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import pytest

from service.ops.logs import (
    ACCESS,
    BATCH_BYTES,
    BatchedStandardError,
    JsonFormatter,
    _through_logging,
    request_lines,
)


class Writes(io.StringIO):
    """A stream that keeps each write apart."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []

    def write(self, text: str) -> int:
        self.writes.append(text)
        return super().write(text)


def capture() -> Writes:
    """A stream that stands for standard error: the handlers below are given it (``stream_of``)."""
    return Writes()


@pytest.fixture
def logger() -> Iterator[logging.Logger]:
    named = logging.getLogger("regional_menus.test_batches")
    named.propagate = False
    named.setLevel(logging.INFO)
    yield named
    named.handlers.clear()


def batched(logger: logging.Logger, flush_after: float, stream: IO[str]) -> BatchedStandardError:
    handler = BatchedStandardError(flush_after=flush_after, stream_of=lambda: stream)
    logger.addHandler(handler)
    return handler


def wait_for(condition: object, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "not written in time"
        time.sleep(0.01)


def test_info_lines_wait_for_one_write_and_are_written_within_the_flush_delay(logger: logging.Logger) -> None:
    stderr = capture()
    batched(logger, flush_after=0.2, stream=stderr)
    for number in range(5):
        logger.info("line %d", number)
    assert stderr.writes == []
    wait_for(lambda: stderr.writes)
    assert stderr.writes == ["".join(f"line {number}\n" for number in range(5))]


def test_a_write_holds_whole_lines_and_never_more_than_pipe_buf_bytes(logger: logging.Logger) -> None:
    stderr = capture()
    handler = batched(logger, flush_after=60, stream=stderr)
    lines = [f"{number:04d} " + "é" * 150 for number in range(100)]  # 304 bytes each in UTF-8, 155 characters
    for line in lines:
        logger.info(line)
    handler.flush()
    assert "".join(stderr.writes) == "".join(f"{line}\n" for line in lines)
    assert all(write.endswith("\n") for write in stderr.writes)
    assert max(len(write.encode()) for write in stderr.writes) <= BATCH_BYTES
    assert len(stderr.writes) < len(lines) / 10  # batches, not a write a line


def test_a_warning_is_written_at_once_after_the_lines_before_it(logger: logging.Logger) -> None:
    stderr = capture()
    batched(logger, flush_after=60, stream=stderr)
    logger.info("first")
    logger.info("second")
    logger.warning("third")
    assert stderr.getvalue() == "first\nsecond\nthird\n"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_lines_waiting_at_a_fork_are_written_once_by_the_parent_never_by_the_child(
    tmp_path: Path, logger: logging.Logger
) -> None:
    with (tmp_path / "stderr").open("w") as stream:
        handler = batched(logger, flush_after=60, stream=stream)
        logger.info("before the fork")
        child = os.fork()
        if child == 0:
            handler.flush()  # what exiting would do in the child
            logger.warning("the child")
            os._exit(0)
        os.waitpid(child, 0)
        handler.flush()
    lines = (tmp_path / "stderr").read_text().splitlines()
    assert sorted(lines) == ["before the fork", "the child"]


@contextmanager
def served_logging(stream: IO[str]) -> Iterator[BatchedStandardError]:
    """The root logger as ``serve`` sets it up: one batched standard error with the JSON formatter (in the test's
    body: pytest adds its own handlers to the root logger between the fixtures and the test)."""
    root = logging.getLogger()
    kept, level = list(root.handlers), root.level
    handler = BatchedStandardError(flush_after=60, stream_of=lambda: stream)
    handler.setFormatter(JsonFormatter())
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        root.handlers[:] = kept
        root.setLevel(level)


FIELDS = {
    "event": "request",
    "method": "GET",
    "route": "/jwks",
    "path": "/jwks",
    "status": 200,
    "duration_ms": 0.25,
    "request_id": "a" * 32,
    "remote": "127.0.0.1",
}


def test_a_served_request_line_is_the_line_a_record_of_the_access_logger_makes() -> None:
    stderr = capture()
    with served_logging(stderr) as handler:
        write = request_lines()
        assert write is not _through_logging  # straight into the batch
        write(dict(FIELDS))
        _through_logging(dict(FIELDS))
        handler.flush()
    straight, logged = (json.loads(line) for line in stderr.getvalue().splitlines())
    assert list(straight) == list(logged)  # the same keys in the same order
    assert {**straight, "ts": None} == {**logged, "ts": None}
    assert straight["logger"] == ACCESS and straight["level"] == "info"


def test_request_lines_go_through_logging_when_anything_else_listens() -> None:
    stderr = capture()
    listening = Writes()
    other = logging.StreamHandler(listening)
    with served_logging(stderr) as handler:
        logging.getLogger(ACCESS).addHandler(other)
        try:
            write = request_lines()
            write(dict(FIELDS))
        finally:
            logging.getLogger(ACCESS).removeHandler(other)
            handler.flush()
    assert json.loads(stderr.getvalue())["path"] == "/jwks"  # and the served handler's too
    assert write is _through_logging
    assert listening.getvalue() == "request\n"  # a record reached it
