"""Mail through the outbox to a real SMTP server on loopback (aiosmtpd), or to .eml files without one:
the request only writes the row, the app's mail worker sends it, an outage delays it and loses none."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from email import message_from_bytes
from email.message import EmailMessage
from email.policy import default
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from aiosmtpd.controller import Controller
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from data.catalog import Catalog
from identity.accounts.users import User
from identity.common.tables import mail_outbox
from identity.mail.outbox import Claimed, Mail
from service.cli.demo import prepare as prepare_demo
from service.mail.letters import Letters
from service.mail.transports import FolderTransport, SmtpTransport, outbox_folder
from service.settings import Settings
from service.settings import SmtpServer as TransportServer
from tests.support.apps import make_app
from tests.support.defaults import ACCOUNT_LIMIT
from tests.support.identity_fixtures import EMAIL, Registered
from tests.support.identity_pages import SIGN_UP, authorize, submit, to_page
from tests.support.live import free_port
from tests.support.smtp import Inbox, OffLoopback, SmtpServer, smtp_server
from tests.support.waiting import eventually

FAST = {"mail_poll_interval": 0.1, "mail_first_retry": 0.3, "mail_longest_retry": 0.3}


@pytest.fixture
def smtp() -> Iterator[SmtpServer]:
    with smtp_server() as server:
        yield server


def sign_up_with_a_taken_address(app: object, web: Registered) -> str:
    with TestClient(app, follow_redirects=False) as browser:  # type: ignore[arg-type]
        page = to_page(authorize(browser, web.id, prompt="create"), "sign-up")
        response = submit(browser, page, {**SIGN_UP, "email": EMAIL.upper()})
        return response.text


def parts(message: EmailMessage) -> tuple[str, str]:
    text, html = message.get_body(("plain",)), message.get_body(("html",))
    assert text is not None and html is not None
    return text.get_content(), html.get_content()


def statuses(engine: Engine) -> list[tuple[str, int]]:
    with engine.connect() as connection:
        return [tuple(row) for row in connection.execute(sa.select(mail_outbox.c.status, mail_outbox.c.attempts))]


def test_a_sign_up_with_a_taken_address_mails_its_owner_through_smtp(
    settings: Settings, engine: Engine, catalog: Catalog, user: User, web: Registered, smtp: SmtpServer
) -> None:
    changes = {"smtp_url": smtp.url, "mail_from": "Menus <menus@example.com>", **FAST}
    app = make_app(settings.with_changes(**changes), catalog=catalog)
    with TestClient(app):
        page = sign_up_with_a_taken_address(app, web)
        assert "A user with this email address already exists." in page  # the answer on the page is unchanged
        [message] = smtp.inbox.wait_for(1)
    assert message["To"] == EMAIL  # the address as its owner registered it, not as it was typed
    assert message["From"] == "Menus <menus@example.com>"
    assert message["Subject"] == "Someone tried to sign up with your email address"
    assert message["Auto-Submitted"] == "auto-generated"
    text, html = parts(message)
    assert "nothing was created and nothing changed" in text
    assert "<h1" in html and EMAIL in html
    assert statuses(engine) == [("sent", 1)]


def test_an_smtp_outage_delays_the_mail_and_loses_none(
    settings: Settings, engine: Engine, catalog: Catalog, user: User, web: Registered
) -> None:
    with smtp_server(running=False) as smtp:
        app = make_app(settings.with_changes(smtp_url=smtp.url, **FAST), catalog=catalog)
        with TestClient(app):
            sign_up_with_a_taken_address(app, web)
            assert eventually(
                lambda: statuses(engine)[0][1] >= 2, timeout=10
            )  # the worker tried, failed, and tried again
            assert statuses(engine)[0][0] == "pending"
            smtp.start()  # the server is back
            [message] = smtp.inbox.wait_for(1)
            assert message["Subject"] == "Someone tried to sign up with your email address"
    assert statuses(engine)[0][0] == "sent"
    assert len(smtp.inbox.messages) == 1


MAILS = ACCOUNT_LIMIT  # "someone tried to sign up" mails to one account: as many as its bound lets through


def test_two_apps_over_one_database_send_each_mail_once(
    settings: Settings, engine: Engine, catalog: Catalog, user: User, web: Registered, smtp: SmtpServer
) -> None:
    nodes = [make_app(settings.with_changes(smtp_url=smtp.url, **FAST), catalog=catalog) for _ in range(2)]
    with TestClient(nodes[0]), TestClient(nodes[1]):
        for n in range(MAILS):
            sign_up_with_a_taken_address(nodes[n % 2], web)
        smtp.inbox.wait_for(MAILS)
        assert eventually(lambda: [status for status, _ in statuses(engine)] == ["sent"] * MAILS, timeout=10)
    ids = [message["Message-ID"] for message in smtp.inbox.messages]
    assert len(ids) == MAILS and len(set(ids)) == MAILS


def test_with_a_mail_folder_mail_is_written_as_eml_files_there(
    settings: Settings, engine: Engine, catalog: Catalog, user: User, web: Registered, tmp_path: Path
) -> None:
    folder = tmp_path / "mail"
    app = make_app(settings.with_changes(mail_dir=str(folder), **FAST), catalog=catalog)
    with TestClient(app):
        sign_up_with_a_taken_address(app, web)
        assert eventually(lambda: bool(list(folder.glob("*.eml"))), timeout=10)
    [written] = list(folder.glob("*.eml"))
    message = message_from_bytes(written.read_bytes(), policy=default)
    assert isinstance(message, EmailMessage)
    assert message["To"] == EMAIL
    assert "nothing was created and nothing changed" in parts(message)[0]
    assert not list(folder.glob("*.part"))


class ShuttingDown(Inbox):
    """A server that accepts the mail, then answers QUIT 421: it is going away (as aiosmtpd's own stop can)."""

    async def handle_QUIT(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802 (aiosmtpd's name)
        return "421 4.3.0 closing: shutting down"


def test_a_mail_the_server_accepted_is_sent_whatever_quit_meets_after() -> None:
    """RFC 5321 §6.1: the 250 after the data is the server's acceptance; a 421 to QUIT (the server going away)
    then is no failure, so the outbox marks the mail sent and never sends it twice."""
    inbox = ShuttingDown()
    controller = Controller(inbox, hostname="127.0.0.1", port=free_port())
    controller.start()
    try:
        server = TransportServer("127.0.0.1", controller.port, implicit_tls=False, username=None, password=None)
        transport = SmtpTransport(server, Letters("menus@example.com").compose, timeout=5)
        transport(Claimed("mail_1", Mail("account_exists", EMAIL, {}), 1, "token"))  # no error: sent
    finally:
        controller.stop()
    assert len(inbox.messages) == 1


def test_smtp_off_loopback_without_starttls_is_never_sent_in_the_clear(smtp: SmtpServer) -> None:
    """RFC 3207 §4: a server that offers no STARTTLS is refused off loopback; the mail stays in the outbox."""
    server = OffLoopback("127.0.0.1", smtp.port, implicit_tls=False, username=None, password=None)
    transport = SmtpTransport(server, Letters("menus@example.com").compose, timeout=5)
    with pytest.raises(ConnectionError, match="offers no STARTTLS"):
        transport(Claimed("mail_1", Mail("account_exists", EMAIL, {}), 1, "token"))
    assert smtp.inbox.messages == []


def test_the_demo_logs_each_mail_written_with_its_file_and_its_link_as_plain_text(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A .eml file's body is quoted-printable: a link copied from it (``=3D``, soft line breaks) does not work."""
    link = "http://127.0.0.1:8000/verify-email?token=" + "a-very-long-token-" * 5
    transport = FolderTransport(tmp_path, Letters("menus@example.com").compose, log_links=True)
    with caplog.at_level(logging.INFO, logger="service.mail.transports"):
        mail = Mail("verify_email", EMAIL, {"link": link, "name": "Ana", "valid_for": "24 hours"})
        transport(Claimed("mail_1", mail, 1, "token"))
    written = tmp_path / "mail_1.eml"
    assert link not in written.read_text()  # as the file has it
    [line] = [record.getMessage() for record in caplog.records]
    assert str(written) in line and line.endswith(link)


def test_without_the_demo_no_mail_is_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    transport = FolderTransport(tmp_path, Letters("menus@example.com").compose)
    with caplog.at_level(logging.INFO, logger="service.mail.transports"):
        transport(Claimed("mail_1", Mail("account_exists", EMAIL, {}), 1, "token"))
    assert caplog.records == []


def test_serve_demo_says_where_mail_goes(settings: Settings, engine: Engine) -> None:
    folder = outbox_folder(settings.database_url).absolute()
    assert f"Mail: written as .eml files to {folder}" in prepare_demo(engine, settings).instructions
    relayed = settings.with_changes(smtp_url="smtp://mailer:secret@mail.example.com")
    instructions = prepare_demo(engine, relayed).instructions
    assert "Mail: sent to smtp://mail.example.com:587" in instructions and "secret@" not in instructions
