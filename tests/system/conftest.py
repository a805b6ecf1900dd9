"""Fixtures of the system tests alone: a real SMTP server on loopback, and an app that mails through it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy.engine import Engine

from data.catalog import Catalog
from service.settings import Settings
from tests.support.apps import make_app
from tests.support.logout_rp import RelyingParty
from tests.support.smtp import SmtpServer, smtp_server


@pytest.fixture
def smtp() -> Iterator[SmtpServer]:
    with smtp_server() as server:
        yield server


@pytest.fixture
def mailing_app(settings: Settings, engine: Engine, catalog: Catalog, smtp: SmtpServer) -> object:
    """The app over ``engine``'s database, its outbox polled every 0.1 s and delivered to ``smtp``."""
    return make_app(settings.with_changes(smtp_url=smtp.url, mail_poll_interval=0.1), catalog=catalog)


@pytest.fixture
def relying_party() -> Iterator[RelyingParty]:
    party = RelyingParty()
    party.start()
    yield party
    party.stop()
