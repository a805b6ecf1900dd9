"""Logging as one JSON object per line, set up in one place for the server, its workers and the command line.

Log stores parse JSON without guesswork, and one short line per event keeps the stream of several
workers readable (each record is one write). Every line written while a request is answered carries
that request's id and client address, so a request's audit lines and its request line can be joined.
What goes into a line is chosen where it is logged: request lines and audit lines carry named fields
only (``extra={"fields": …}``), never a request's body, query, headers or cookies.
"""

from __future__ import annotations

import logging
import sys
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
SERVICE_LOGGERS = ("regional_menus.access", "regional_menus.audit")
# Servers' loggers that must not keep their own formats; their access lines duplicate ours and are turned off.
SERVER_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access", "gunicorn.error", "gunicorn.access")


class JsonFormatter(logging.Formatter):
    """``{"ts", "level", "logger", then "event" and its fields, or "message"}``, plus the request's id."""

    def __init__(self, source: str | None = None) -> None:
        super().__init__()
        self.source = source  # "cli" on the lines of a command, which have no request

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        if self.source is not None:
            line["source"] = self.source
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict) and "event" in fields:
            line.update(fields)
        else:
            line["message"] = record.getMessage()
        request = CURRENT_REQUEST.get()
        if request is not None:
            line.setdefault("request_id", request.request_id)
            line.setdefault("remote", request.remote)
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()


class StandardError(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is at the time of the record (as logging's last resort does)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> IO[str]:
        return sys.stderr

    @stream.setter
    def stream(self, _: IO[str]) -> None:
        pass


def configure(level: int = logging.INFO, stream: IO[str] | None = None) -> None:
    """The server: every record to ``stream`` (standard error) as a JSON line, the servers' own loggers too."""
    handler = logging.StreamHandler(stream) if stream is not None else StandardError()
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
    handler = {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}
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
        },
    }
