"""The SMTP transport's rules against a real server (aiosmtpd on loopback, with a certificate of the test's own):
STARTTLS taken where offered and the server's certificate verified before anything is sent, implicit TLS
(``smtps://``), the login only inside TLS, and a refusal classed by its code (RFC 5321 §4.2.1): a 5yz is for good
(``Undeliverable``: the outbox never retries it), a 4yz is raised as it came, so the outbox tries again later."""

from __future__ import annotations

import smtplib
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from identity.mail.outbox import Claimed, Mail, Undeliverable
from service.mail.letters import Letters
from service.mail.transports import SmtpTransport
from service.settings import SmtpServer
from tests.support.identity_fixtures import EMAIL
from tests.support.live import free_port
from tests.support.nginx import self_signed
from tests.support.smtp import Inbox, OffLoopback

MAIL = Claimed("mail_1", Mail("account_exists", EMAIL, {}), 1, "token")


class Recorded(Inbox):
    """Every message accepted, with whether its session was inside TLS and who logged in."""

    def __init__(self) -> None:
        super().__init__()
        self.encrypted: list[bool] = []
        self.logins: list[tuple[bytes, bytes]] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802 (aiosmtpd's name)
        # STARTTLS sets the session's ``ssl``; smtps:// is TLS from the connection's start, on its transport
        self.encrypted.append(session.ssl is not None or server.transport.get_extra_info("ssl_object") is not None)
        return await super().handle_DATA(server, session, envelope)

    def authenticate(self, server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
        assert isinstance(data, LoginPassword)
        self.logins.append((data.login, data.password))
        return AuthResult(success=(data.login, data.password) == (b"menus", b"s3cret"))


class Refusing(Inbox):
    """A server that refuses every recipient, or every mail's data, with the reply given."""

    def __init__(self, at: str, reply: str) -> None:
        super().__init__()
        self.at, self.reply = at, reply

    async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str, options: Any) -> str:  # noqa: N802
        if self.at == "RCPT":
            return self.reply
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802 (aiosmtpd's name)
        return self.reply if self.at == "DATA" else await super().handle_DATA(server, session, envelope)


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return self_signed(tmp_path_factory.mktemp("smtp-tls"))


def server_tls(certificate: tuple[Path, Path]) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    return context


def trusting(certificate: tuple[Path, Path]) -> ssl.SSLContext:
    """What a deployment's trust store does for its mail server's certificate."""
    return ssl.create_default_context(cafile=str(certificate[0]))


@contextmanager
def running(handler: Any, **options: Any) -> Iterator[int]:
    controller = Controller(handler, hostname="127.0.0.1", port=free_port(), **options)
    controller.start()
    try:
        yield controller.port
    finally:
        controller.stop()


def transport(port: int, *, implicit_tls: bool = False, login: bool = False, tls: ssl.SSLContext | None = None,
              server: type[SmtpServer] = OffLoopback) -> SmtpTransport:  # fmt: skip
    at = server("127.0.0.1", port, implicit_tls=implicit_tls, username="menus" if login else None,
                password="s3cret" if login else None)  # fmt: skip
    return SmtpTransport(at, Letters("menus@example.com").compose, timeout=5, tls=tls)


def test_starttls_offered_is_taken_and_the_login_goes_inside_it(certificate: tuple[Path, Path]) -> None:
    inbox = Recorded()
    options = {"tls_context": server_tls(certificate), "require_starttls": True, "auth_require_tls": True}
    with running(inbox, authenticator=inbox.authenticate, **options) as port:
        transport(port, login=True, tls=trusting(certificate))(MAIL)
    assert inbox.encrypted == [True] and inbox.logins == [(b"menus", b"s3cret")]
    assert [message["To"] for message in inbox.messages] == [EMAIL]


def test_a_certificate_that_does_not_verify_sends_nothing_and_never_logs_in(certificate: tuple[Path, Path]) -> None:
    inbox = Recorded()
    options = {"tls_context": server_tls(certificate), "require_starttls": True, "auth_require_tls": True}
    with running(inbox, authenticator=inbox.authenticate, **options) as port:
        with pytest.raises(ssl.SSLCertVerificationError):
            transport(port, login=True)(MAIL)  # the system's trust store: it has never seen this certificate
    assert inbox.messages == [] and inbox.logins == []


def test_smtps_speaks_tls_from_the_first_byte(certificate: tuple[Path, Path]) -> None:
    inbox = Recorded()
    with running(inbox, ssl_context=server_tls(certificate)) as port:
        transport(port, implicit_tls=True, tls=trusting(certificate))(MAIL)
    assert inbox.encrypted == [True] and len(inbox.messages) == 1


@pytest.mark.parametrize(
    ("at", "reply", "raised"),
    [
        ("RCPT", "550 5.1.1 no such mailbox", Undeliverable),
        ("DATA", "554 5.7.1 refused as spam", Undeliverable),
        ("RCPT", "450 4.2.1 mailbox busy, try later", smtplib.SMTPRecipientsRefused),
        ("DATA", "451 4.3.0 local error, try later", smtplib.SMTPDataError),
    ],
)
def test_a_5yz_refusal_is_for_good_and_a_4yz_is_raised_to_be_tried_again(
    at: str, reply: str, raised: type[Exception]
) -> None:
    with running(Refusing(at, reply)) as port:
        with pytest.raises(raised):
            transport(port, server=SmtpServer)(MAIL)  # loopback: in the clear, as a local relay may be
