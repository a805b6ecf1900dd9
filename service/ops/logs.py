"""Logging as one JSON object per line, set up in one place for the server, its workers and the command line.

Log stores parse JSON without guesswork, and one short line per event keeps the stream of several
workers readable (each write is whole lines: ``BatchedStandardError``). Every line written while a request is
answered carries that request's id and client address, so a request's audit lines and its request line can be
joined.
What goes into a line is chosen where it is logged: request lines and audit lines carry named fields
only (``extra={"fields": …}``), never a request's body, query, headers or cookies.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO, Any

import orjson


@dataclass(frozen=True, slots=True)
class RequestContext:
    request_id: str
    remote: str | None  # the client's address as the server sees it (the proxy's, unless it is trusted)


# The request being answered; set by service.ops.observe for the length of each request.
CURRENT_REQUEST: ContextVar[RequestContext | None] = ContextVar("regional_menus_request", default=None)

# Loggers whose INFO lines are the product: requests and security events.
ACCESS = "regional_menus.access"
SERVICE_LOGGERS = (ACCESS, "regional_menus.audit")
# Servers' loggers that must not keep their own formats; their access lines duplicate ours and are turned off.
SERVER_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access", "gunicorn.error", "gunicorn.access")
# Libraries whose INFO lines carry what the service keeps out of its logs: httpx writes every request's whole URL
# ("HTTP Request: POST https://…?query"), a client's back-channel logout URI included, which
# service/outbound/backchannel.py names by scheme, host and port only. Their warnings and errors still pass.
QUIET_LOGGERS = ("httpx", "httpcore")


class JsonFormatter(logging.Formatter):
    """``{"ts", "level", "logger", then "event" and its fields, or "message"}``, plus the request's id."""

    def __init__(self, source: str | None = None) -> None:
        super().__init__()
        self.source = source  # "cli" on the lines of a command, which have no request
        self._second: tuple[int, str] = (-1, "")  # the last second written, as its ISO 8601 text up to the "."

    def timestamp(self, created: float) -> str:
        """``created`` (POSIX seconds) as ISO 8601 in UTC to the millisecond: ``2026-11-26T07:12:03.042Z``. The
        text of the second is made once a second, not once a line (a request line is written per request)."""
        second = int(created)
        micro = round((created - second) * 1_000_000)  # rounded to the microsecond first, as datetime does
        if micro == 1_000_000:
            second, micro = second + 1, 0
        cached, text = self._second
        if cached != second:
            text = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S.")
            self._second = (second, text)
        return f"{text}{micro // 1000:03d}Z"

    def event_line(self, created: float, level: str, logger: str, fields: Mapping[str, Any]) -> dict[str, Any]:
        """The line of an event's record (``fields`` with an ``event``), before the request's id is added: also
        how a request's line is made straight into the batch (``request_lines``)."""
        line: dict[str, Any] = {"ts": self.timestamp(created), "level": level, "logger": logger}
        if self.source is not None:
            line["source"] = self.source
        line.update(fields)
        return line

    def format(self, record: logging.LogRecord) -> str:
        fields = getattr(record, "fields", None)
        event = fields if isinstance(fields, dict) and "event" in fields else {}
        line = self.event_line(record.created, record.levelname.lower(), record.name, event)
        if not event:
            line["message"] = record.getMessage()
        request = CURRENT_REQUEST.get()
        if request is not None:
            line.setdefault("request_id", request.request_id)
            line.setdefault("remote", request.remote)
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()


def _standard_error() -> IO[str]:
    return sys.stderr


class StandardError(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is at the time of the record (as logging's last resort does), or to
    what ``stream_of`` answers then (a test's own stream)."""

    def __init__(self, stream_of: Callable[[], IO[str]] = _standard_error) -> None:
        self._stream_of = stream_of
        super().__init__(stream_of())

    @property
    def stream(self) -> IO[str]:
        return self._stream_of()

    @stream.setter
    def stream(self, _: IO[str]) -> None:
        pass


def lean_records() -> None:
    """Records without the fields no line of ours writes (thread, process and its name: the logging HOWTO's
    "Optimization"): gathering them was a third of the cost of a request's line."""
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False


# One write of whole lines, at most PIPE_BUF bytes (4,096 on Linux): the kernel never splits it nor mixes it with
# another worker's writes to the same pipe, so the stream of several workers stays one line per record.
BATCH_BYTES = 4096
FLUSH_AFTER = 0.1  # seconds an INFO line waits at most before it is written


class BatchedStandardError(StandardError):
    """Standard error, written a batch of lines at a time: an INFO line (a request's line, an audit line) waits
    until ``BATCH_BYTES`` of lines are ready or ``FLUSH_AFTER`` has passed, whichever comes first; a WARNING or
    worse is written at once, after the lines before it. Under load that is one write for a dozen request lines,
    not one per request (a system call was a fifth of a prepared document's cost on a virtual machine). What
    waits is written on exit (``logging.shutdown``) and before a fork (a worker never writes its master's lines);
    a process killed outright loses at most ``FLUSH_AFTER`` of INFO lines."""

    def __init__(self, flush_after: float = FLUSH_AFTER, stream_of: Callable[[], IO[str]] = _standard_error) -> None:
        super().__init__(stream_of)
        self.flush_after = flush_after
        self._lines: list[str] = []
        self._size = 0  # bytes waiting
        self._new()
        os.register_at_fork(before=self.flush, after_in_child=self._new)

    def _new(self) -> None:
        """A waker and no writer thread yet: in a new process, after a fork, where the thread did not follow."""
        self._waiting = threading.Condition(threading.Lock())
        self._writer: threading.Thread | None = None

    def emit(self, record: logging.LogRecord) -> None:  # called with the handler's lock held (Handler.handle)
        try:
            line = self.format(record) + self.terminator
        except Exception:
            self.handleError(record)
            return
        self._add(line, record.levelno)

    def write_line(self, line: str) -> None:
        """An INFO line made elsewhere (``request_lines``), batched with the records' lines."""
        with self.lock:  # type: ignore[union-attr]  # created by Handler.__init__
            self._add(line + self.terminator, logging.INFO)

    def _add(self, line: str, level: int) -> None:
        size = len(line) if line.isascii() else len(line.encode())  # isascii is a flag: no scan
        if self._size + size > BATCH_BYTES:
            self._write()
        self._lines.append(line)
        self._size += size
        if level >= logging.WARNING:
            self._write()
        elif len(self._lines) == 1:  # the first line of a batch: the writer thread writes it within FLUSH_AFTER
            self._wake_writer()

    def flush(self) -> None:
        with self.lock:  # type: ignore[union-attr]  # created by Handler.__init__
            self._write()

    def _write(self) -> None:
        if self._lines:
            batch, self._lines, self._size = "".join(self._lines), [], 0
            try:
                self.stream.write(batch)
                self.stream.flush()
            except Exception:  # as StreamHandler.emit does: logging never raises into the service
                self.handleError(logging.makeLogRecord({"msg": "lost log lines", "levelno": logging.ERROR}))

    def _wake_writer(self) -> None:
        with self._waiting:
            if self._writer is None:
                self._writer = threading.Thread(target=self._write_late, name="log-writer", daemon=True)
                self._writer.start()
            self._waiting.notify()

    def _write_late(self) -> None:
        while True:
            with self._waiting:
                while not self._lines:
                    self._waiting.wait()
            time.sleep(self.flush_after)
            self.flush()


RequestLine = Callable[[dict[str, Any]], None]


def request_lines() -> RequestLine:
    """How this process writes the line of each answered request (``service/ops/observe.py``: ``fields`` with an
    ``event``), chosen once, as the app is built.

    Where logging sends the access logger's lines to one place only, the server's batched standard error with our
    JSON formatter (as ``configure`` and ``dict_config`` set up ``serve``), the line is made here, the same line
    the formatter would make, and added to that handler's batch: through ``logging`` (a record, its dispatch up
    the loggers, the handler's filters) it was a third of the cost of answering a prepared document on a busy
    core. Anywhere else (tests that capture records, an app embedded in another program's logging), the line is
    a record through ``logging``, when its level is on at the time."""
    access = logging.getLogger(ACCESS)
    handler = _only_destination(access)
    if (
        isinstance(handler, BatchedStandardError)
        and type(handler.formatter) is JsonFormatter
        and access.isEnabledFor(logging.INFO)
        and handler.level <= logging.INFO
    ):
        return _straight_to(handler, handler.formatter)
    return _through_logging


def _only_destination(logger: logging.Logger) -> logging.Handler | None:
    """The one handler ``logger``'s records reach, when it is one and nothing on the way filters them; else None."""
    found: list[logging.Handler] = []
    current: logging.Logger | None = logger
    while current is not None:
        if current.filters:
            return None
        found.extend(current.handlers)
        current = current.parent if current.propagate else None
    return found[0] if len(found) == 1 and not found[0].filters else None


def _straight_to(handler: BatchedStandardError, formatter: JsonFormatter) -> RequestLine:
    write, event_line = handler.write_line, formatter.event_line

    def line(fields: dict[str, Any]) -> None:
        # the formatter's line for a record of the access logger (its fields carry the request's id and address)
        write(orjson.dumps(event_line(time.time(), "info", ACCESS, fields), default=str).decode())

    return line


_access_log = logging.getLogger(ACCESS)


def _through_logging(fields: dict[str, Any]) -> None:
    if _access_log.isEnabledFor(logging.INFO):
        # makeRecord and handle: logger.info would also walk the stack for a caller nobody reads.
        record = _access_log.makeRecord(ACCESS, logging.INFO, __file__, 0, "request", (), None)
        record.fields = fields
        _access_log.handle(record)


def configure(level: int = logging.INFO, stream: IO[str] | None = None) -> None:
    """The server: every record to ``stream`` (standard error, in batches of lines) as a JSON line, the servers'
    own loggers too."""
    lean_records()
    handler = logging.StreamHandler(stream) if stream is not None else BatchedStandardError()
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for name in SERVER_LOGGERS + SERVICE_LOGGERS:
        named = logging.getLogger(name)
        named.handlers.clear()
        named.propagate = True
        named.setLevel(logging.NOTSET)
    logging.getLogger("uvicorn.access").setLevel(logging.WARNING)  # our request line replaces it
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


def configure_command() -> None:
    """A command other than ``serve``: its audit lines to standard error as JSON (standard output is the
    command's answer, which scripts parse); other records keep Python's default (warnings and errors)."""
    handler = StandardError()
    handler.setFormatter(JsonFormatter(source="cli"))
    audit = logging.getLogger("regional_menus.audit")
    audit.handlers[:] = [handler]
    audit.setLevel(logging.INFO)
    audit.propagate = False


def dict_config(level: str = "INFO") -> dict[str, Any]:
    """The same set-up for ``logging.config.dictConfig`` (gunicorn's ``logconfig_dict``, in master and workers)."""
    handler = {"class": f"{__name__}.BatchedStandardError", "formatter": "json"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": JsonFormatter}},
        "handlers": {"stderr": handler},
        "root": {"level": level, "handlers": ["stderr"]},
        "loggers": {
            **{name: {"level": level, "handlers": [], "propagate": True} for name in SERVER_LOGGERS},
            # uvicorn's worker class copies these two loggers' handlers onto uvicorn's own loggers.
            "gunicorn.error": {"level": level, "handlers": ["stderr"], "propagate": False},
            "gunicorn.access": {"level": "WARNING", "handlers": ["stderr"], "propagate": False},
            **{name: {"level": "WARNING", "handlers": [], "propagate": True} for name in QUIET_LOGGERS},
        },
    }
