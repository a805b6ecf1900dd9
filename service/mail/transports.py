"""Where the outbox's mail goes: an SMTP server (``MENUS_SMTP_URL``), or ``.eml`` files in a folder (``MENUS_MAIL_DIR``,
or ``serve --demo``'s outbox beside its database). A node with neither has no transport: it claims no mail, and
the outbox's mail waits for a node that has one (``Courier.of`` is None; the app says so at start and in
``/readyz``). Several nodes share one outbox, so a node that would write the mail of real users to a folder of its
own, where nobody reads it, must not take it.

``smtp://[user:password@]host[:port]`` (port 587 by default) speaks STARTTLS whenever the server offers it
(RFC 3207), with the system's certificate authorities. The decision: STARTTLS is *required* for every host
but loopback, so that neither credentials nor mail ever cross a network in the clear; on loopback (a relay
on the same machine) plain SMTP is allowed when the server offers no STARTTLS. ``smtps://…`` (port 465 by
default) is implicit TLS (RFC 8314 §3.3). User and password are percent-decoded (RFC 3986 §2.1).
"""

from __future__ import annotations

import logging
import re
import ssl
from collections.abc import Callable
from email.message import EmailMessage
from pathlib import Path

from identity.mail.outbox import Claimed, Outbox, Transport, Undeliverable
from service.database.sealing_keys import key_file_for
from service.mail.letters import Letters
from service.settings import SmtpServer

logger = logging.getLogger(__name__)
_LINK = re.compile(r"https?://\S+")  # the first link of a mail's plain text (each letter has one at most)
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
    """Writes each mail as ``<outbox id>.eml`` into a folder (``MENUS_MAIL_DIR``, or the demo's). ``log_links``
    (the demo): one log line per mail written, with its file and its link as plain text, since the file's body is
    quoted-printable and a link copied from it does not work."""

    def __init__(self, folder: Path, compose: Compose, *, log_links: bool = False) -> None:
        self.folder = folder
        self.compose = compose
        self.log_links = log_links

    def __call__(self, claimed: Claimed) -> None:
        from email.policy import SMTP  # for the first mail written, as the letters' modules are

        self.folder.mkdir(parents=True, exist_ok=True)
        message = self.compose(claimed)
        data = message.as_bytes(policy=SMTP)
        final = self.folder / f"{claimed.id}.eml"
        partial = final.with_suffix(".eml.part")
        partial.write_bytes(data)
        partial.replace(final)  # a reader never sees half a mail
        if self.log_links:
            text = message.get_body(("plain",))
            found = _LINK.search(text.get_content()) if isinstance(text, EmailMessage) else None
            link = found.group(0) if found else "no link"
            logger.info("demo mail %r written to %s: %s", claimed.mail.kind, final, link)


def outbox_folder(database_url: str) -> Path:
    """Where ``serve --demo`` writes its mail (without ``MENUS_SMTP_URL`` or ``MENUS_MAIL_DIR``): ``outbox/`` beside
    the SQLite database, else ``./var/outbox``."""
    return key_file_for(database_url).parent / "outbox"


class Courier:
    """The mail worker's round (run in a thread every poll interval by the app's lifespan): the outbox's due
    mails through one transport, with a log line for what did not go."""

    def __init__(self, outbox: Outbox, transport: Transport, where: str, kind: str) -> None:
        self.outbox = outbox
        self.transport = transport
        self.where = where  # the server or folder, without credentials, for the log
        self.kind = kind  # "smtp" or "folder", for /readyz

    @classmethod
    def of(
        cls,
        outbox: Outbox,
        *,
        smtp_url: str,
        mail_dir: str,
        mail_from: str,
        timeout: float,
        log_links: bool = False,
    ) -> Courier | None:
        """The node's mail worker: through ``smtp_url``, else into ``mail_dir``; None when it has neither (it then
        claims no mail at all)."""
        compose = Letters(mail_from).compose
        if smtp_url:
            server = SmtpServer.parse(smtp_url)
            return cls(outbox, SmtpTransport(server, compose, timeout=timeout), server.describe(), "smtp")
        if mail_dir:
            folder = Path(mail_dir)
            return cls(outbox, FolderTransport(folder, compose, log_links=log_links), str(folder), "folder")
        return None

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
