"""Where the outbox's mail goes: an SMTP server (``MENUS_SMTP_URL``) or, without one, ``.eml`` files in a folder.

``smtp://[user:password@]host[:port]`` (port 587 by default) speaks STARTTLS whenever the server offers it
(RFC 3207), with the system's certificate authorities. The decision: STARTTLS is *required* for every host
but loopback, so that neither credentials nor mail ever cross a network in the clear; on loopback (a relay
on the same machine) plain SMTP is allowed when the server offers no STARTTLS. ``smtps://…`` (port 465 by
default) is implicit TLS (RFC 8314 §3.3). User and password are percent-decoded (RFC 3986 §2.1).
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Callable
from email.message import EmailMessage
from pathlib import Path

from identity.outbox import Claimed, Outbox, Transport, Undeliverable
from service.database.sealing_keys import key_file_for
from service.mail.letters import Letters
from service.settings import SmtpServer

logger = logging.getLogger(__name__)
Compose = Callable[[Claimed], EmailMessage]


class SmtpTransport:
    """Sends each mail in one SMTP session (blocking: the worker calls it in a thread, never on the event loop)."""

    def __init__(
        self, server: SmtpServer, compose: Compose, *, timeout: float, tls: ssl.SSLContext | None = None
    ) -> None:
        self.server = server
        self.compose = compose
        self.timeout = timeout  # seconds each connection and command may take
        self.tls = tls or ssl.create_default_context()

    def __call__(self, claimed: Claimed) -> None:
        import smtplib  # for the first mail sent, as the letters' modules are (service/mail/letters.py)

        message = self.compose(claimed)
        server = self.server
        connection: smtplib.SMTP
        if server.implicit_tls:
            connection = smtplib.SMTP_SSL(server.host, server.port, timeout=self.timeout, context=self.tls)
        else:
            connection = smtplib.SMTP(server.host, server.port, timeout=self.timeout)
        try:
            connection.ehlo()
            if not server.implicit_tls:
                if connection.has_extn("starttls"):
                    connection.starttls(context=self.tls)
                    connection.ehlo()
                elif not server.loopback:
                    raise ConnectionError(f"{server.describe()} offers no STARTTLS; mail is never sent in the clear")
            if server.username is not None:
                connection.login(server.username, server.password or "")
            try:
                connection.send_message(message)
            except smtplib.SMTPRecipientsRefused as error:
                if all(code >= 500 for code, _ in error.recipients.values()):
                    raise Undeliverable("the server refused the recipient") from None
                raise
            except smtplib.SMTPResponseException as error:
                if error.smtp_code >= 500:
                    raise Undeliverable(f"the server refused the mail ({error.smtp_code})") from None
                raise
        except BaseException:
            connection.close()
            raise
        # RFC 5321 §6.1: with its 250 after the data, the server took responsibility for the mail: it is sent. What
        # QUIT meets now (a 421 from a server shutting down, a dropped connection) must not have it sent again.
        try:
            connection.quit()
        except (smtplib.SMTPException, OSError):
            pass
        finally:
            connection.close()


class FolderTransport:
    """Writes each mail as ``<outbox id>.eml`` into a folder (the demo, or a service without a mail server)."""

    def __init__(self, folder: Path, compose: Compose) -> None:
        self.folder = folder
        self.compose = compose

    def __call__(self, claimed: Claimed) -> None:
        from email.policy import SMTP  # for the first mail written, as the letters' modules are

        self.folder.mkdir(parents=True, exist_ok=True)
        data = self.compose(claimed).as_bytes(policy=SMTP)
        final = self.folder / f"{claimed.id}.eml"
        partial = final.with_suffix(".eml.part")
        partial.write_bytes(data)
        partial.replace(final)  # a reader never sees half a mail


def outbox_folder(database_url: str) -> Path:
    """Where mail goes without ``MENUS_SMTP_URL``: ``outbox/`` beside the SQLite database, else ``./var/outbox``."""
    return key_file_for(database_url).parent / "outbox"


class Courier:
    """The mail worker's round (run in a thread every poll interval by the app's lifespan): the outbox's due
    mails through one transport, with a log line for what did not go."""

    def __init__(self, outbox: Outbox, transport: Transport, where: str) -> None:
        self.outbox = outbox
        self.transport = transport
        self.where = where  # the server or folder, without credentials, for the log

    @classmethod
    def of(cls, outbox: Outbox, *, smtp_url: str, mail_from: str, timeout: float, database_url: str) -> Courier:
        compose = Letters(mail_from).compose
        if smtp_url:
            server = SmtpServer.parse(smtp_url)
            return cls(outbox, SmtpTransport(server, compose, timeout=timeout), server.describe())
        folder = outbox_folder(database_url)
        return cls(outbox, FolderTransport(folder, compose), str(folder))

    def __call__(self) -> dict[str, int]:
        counts = self.outbox.deliver(self.transport)
        if counts["retrying"] or counts["failed"]:
            logger.warning(
                "mail to %s: %d sent, %d to retry, %d given up",
                self.where,
                counts["sent"],
                counts["retrying"],
                counts["failed"],
            )
        return counts
