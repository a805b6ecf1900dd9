"""A real SMTP server on loopback (aiosmtpd, in a thread of the test process) and what it received."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from email import message_from_bytes
from email.message import EmailMessage
from email.policy import default
from typing import Any

from aiosmtpd.controller import Controller

from service.settings import SmtpServer as TransportServer
from tests.support.live import free_port


class Inbox:
    """aiosmtpd's handler: every message accepted, kept in the order it arrived."""

    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802 (aiosmtpd's name)
        message = message_from_bytes(envelope.content, policy=default)
        assert isinstance(message, EmailMessage)
        self.messages.append(message)
        return "250 Message accepted for delivery"

    def wait_for(self, count: int, timeout: float = 10) -> list[EmailMessage]:
        """The messages once ``count`` have arrived (fails after ``timeout`` seconds)."""
        deadline = time.monotonic() + timeout
        while len(self.messages) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(self.messages) >= count, f"{len(self.messages)} of {count} mails arrived"
        return list(self.messages)


class SmtpServer:
    """An SMTP server on 127.0.0.1:``port`` that can be stopped and started again (an outage)."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.inbox = Inbox()
        self._controller: Controller | None = None

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.port}"

    def start(self) -> None:
        self._controller = Controller(self.inbox, hostname="127.0.0.1", port=self.port)
        self._controller.start()

    def stop(self) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None


@contextmanager
def smtp_server(*, running: bool = True) -> Iterator[SmtpServer]:
    server = SmtpServer()
    if running:
        server.start()
    try:
        yield server
    finally:
        server.stop()


class OffLoopback(TransportServer):
    """The transport's settings for a server the test runs, as if it were across a network: never in the clear."""

    loopback = False
