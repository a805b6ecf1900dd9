"""A sign-up with a taken address: the page answers as before, and the address's owner is mailed that someone
tried, within a bound per account (sign-ups from many networks flood no mailbox)."""

from __future__ import annotations

import re

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.users import User
from identity.common.tables import mail_outbox
from tests.support.defaults import ACCOUNT_LIMIT
from tests.support.identity_fixtures import EMAIL, Registered
from tests.support.identity_pages import SIGN_UP, authorize, submit, to_page


def test_the_owner_of_a_taken_address_is_mailed_within_the_accounts_bound_and_the_page_stays_the_same(
    browser: TestClient, engine: Engine, user: User, web: Registered
) -> None:
    answers = set()
    for _ in range(ACCOUNT_LIMIT + 2):
        sign_up = to_page(authorize(browser, web.id, prompt="create"), "sign-up")
        answer = submit(browser, sign_up, {**SIGN_UP, "email": EMAIL.upper()})
        assert answer.status_code == 200
        answers.add(re.sub(r"int_[\w-]+|value=\"[\w-]{32}\"", "", answer.text))  # its own interaction aside
    assert len(answers) == 1 and "already exists" in answers.pop()
    with engine.connect() as connection:
        mailed = connection.execute(sa.select(mail_outbox.c.kind, mail_outbox.c.recipient)).all()
    assert [tuple(row) for row in mailed] == [("account_exists", EMAIL)] * ACCOUNT_LIMIT
