"""Mail across nodes that share one outbox (identity/mail/outbox.py, service/mail/transports.py): only a node with a
transport (an SMTP server, or a folder it was told to write to) claims mail; a node with neither leaves it to the
others, says so at start and in ``/readyz``, and signs users up all the same. On SQLite and PostgreSQL."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from data.catalog import Catalog
from identity.accounts.users import User
from identity.common.tables import mail_outbox
from service.mail.transports import outbox_folder
from service.settings import Settings
from tests.support.apps import make_app
from tests.support.defaults import ACCOUNT_LIMIT
from tests.support.identity_fixtures import EMAIL, Registered
from tests.support.identity_pages import SIGN_UP, authorize, submit, to_page
from tests.support.smtp import SmtpServer
from tests.support.waiting import eventually

ON_BOTH_ENGINES = True  # every test here that uses the state database runs on SQLite and on PostgreSQL
FAST = {"mail_poll_interval": 0.1}
MAILS = ACCOUNT_LIMIT  # "someone tried to sign up with your address" mails to one account: its bound's worth


def sign_up_with_a_taken_address(browser: TestClient, web: Registered) -> int:
    page = to_page(authorize(browser, web.id, prompt="create"), "sign-up")
    response = submit(browser, page, {**SIGN_UP, "email": EMAIL.upper()})
    assert "A user with this email address already exists." in response.text
    return response.status_code


def statuses(engine: Engine) -> list[str]:
    with engine.connect() as connection:
        return list(connection.scalars(sa.select(mail_outbox.c.status).where(mail_outbox.c.channel == "mail")))


def test_a_node_without_a_transport_claims_no_mail_and_the_node_with_smtp_sends_every_one(
    settings: Settings,
    engine: Engine,
    catalog: Catalog,
    user: User,
    web: Registered,
    smtp: SmtpServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """Sign-ups on the node without a transport; every mail reaches the SMTP server of the other, and no folder
    (where a node without a transport used to write the users' mail, unread) gets any."""
    monkeypatch.chdir(tmp_path)  # where a node would write .eml files of a PostgreSQL database: ./var/outbox
    bare = make_app(settings.with_changes(**FAST), catalog=catalog)
    mailer = make_app(settings.with_changes(smtp_url=smtp.url, **FAST), catalog=catalog)
    with TestClient(bare, follow_redirects=False) as browser, TestClient(mailer):
        for _ in range(MAILS):
            sign_up_with_a_taken_address(browser, web)
        smtp.inbox.wait_for(MAILS)
        assert eventually(lambda: statuses(engine) == ["sent"] * MAILS, timeout=10)
    assert len({message["Message-ID"] for message in smtp.inbox.messages}) == MAILS
    for folder in (outbox_folder(settings.database_url), tmp_path / "var" / "outbox"):
        assert not folder.exists() or not list(folder.iterdir())


def test_a_node_without_a_transport_says_so_and_signs_users_up_all_the_same(
    settings: Settings, engine: Engine, catalog: Catalog, user: User, web: Registered, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="service.app"):
        bare = make_app(settings.with_changes(**FAST), catalog=catalog)
    [warning] = [record.getMessage() for record in caplog.records if record.name == "service.app"]
    assert "no mail transport" in warning and "MENUS_SMTP_URL" in warning and "MENUS_MAIL_DIR" in warning
    with TestClient(bare, follow_redirects=False) as browser:
        ready = browser.get("/readyz")
        assert sign_up_with_a_taken_address(browser, web) == 200  # the page says so, as with a transport
    assert ready.status_code == 200 and ready.json() == {"status": "ready", "details": {"mail": "none"}}
    assert statuses(engine) == ["pending"]  # waiting for a node that has a transport


@pytest.mark.parametrize(
    ("changes", "mail"), [({"smtp_url": "smtp://127.0.0.1:2525"}, "smtp"), ({"mail_dir": "m"}, "folder")]
)
def test_readyz_says_which_transport_a_node_has(
    settings: Settings, engine: Engine, catalog: Catalog, changes: dict[str, str], mail: str
) -> None:
    app = make_app(settings.with_changes(mail_poll_interval=3600, **changes), catalog=catalog)
    with TestClient(app) as client:
        assert client.get("/readyz").json() == {"status": "ready", "details": {"mail": mail}}
