"""Single-use mailed links (identity/mail/email_links.py): hashed at rest, once, until they expire, for one purpose."""

from __future__ import annotations

from datetime import timedelta

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from identity.accounts.organizations import OrganizationStore
from identity.accounts.users import UserStore
from identity.common.tables import email_links
from identity.mail.email_links import RESET_PASSWORD, VERIFY_EMAIL, EmailLinks, Followed
from tests.support.clocks import MovableClock
from tests.support.passwords import FAST_HASHING

DAY = timedelta(hours=24)


def new_user(engine: Engine) -> str:
    org = OrganizationStore(engine).create("Kitchen")
    return (
        UserStore(engine, hashing=FAST_HASHING)
        .create("ana@example.com", "Ana", "correct horse battery staple", [(org.id, "owner")])
        .id
    )


def issued(engine: Engine, links: EmailLinks, user_id: str, lifetime: timedelta = DAY) -> str:
    with engine.begin() as connection:
        return links.issue(connection, VERIFY_EMAIL, user_id, "ana@example.com", lifetime)


def test_a_link_is_stored_only_as_a_hash_and_opens_once(engine: Engine) -> None:
    links = EmailLinks(engine)
    user_id = new_user(engine)
    token = issued(engine, links, user_id)
    with engine.connect() as connection:
        stored = connection.scalar(sa.select(email_links.c.token_hash))
    assert stored != token and token not in str(stored)
    assert links.follow(VERIFY_EMAIL, token) == Followed(user_id, "ana@example.com")
    assert links.follow(VERIFY_EMAIL, token) is None


def test_a_link_opens_nothing_after_it_expires(engine: Engine) -> None:
    clock = MovableClock()
    links = EmailLinks(engine, clock)
    token = issued(engine, links, new_user(engine), timedelta(minutes=30))
    clock.advance(30 * 60)
    assert links.follow(VERIFY_EMAIL, token) is None


def test_a_link_opens_only_for_its_own_purpose(engine: Engine) -> None:
    links = EmailLinks(engine)
    token = issued(engine, links, new_user(engine))
    assert links.follow(RESET_PASSWORD, token) is None
    assert links.follow(VERIFY_EMAIL, token) is not None  # the wrong purpose consumed nothing


def test_a_verified_address_is_the_one_the_link_was_sent_to(engine: Engine) -> None:
    users = UserStore(engine, hashing=FAST_HASHING)
    user_id = new_user(engine)
    assert not users.mark_email_verified(user_id, "someone-else@example.com")
    assert not users.get(user_id).email_verified
    assert users.mark_email_verified(user_id, "ANA@example.com")
    assert users.get(user_id).email_verified
