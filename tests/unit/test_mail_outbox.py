"""The mail outbox (identity/mail/outbox.py): claimed by one node, sent, marked; retried with backoff; on SQLite and
PostgreSQL."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace

import pytest
from sqlalchemy.engine import Engine

from identity.mail.outbox import FAILED, PENDING, SENT, Claimed, Mail, Outbox, Undeliverable
from service.database.db import make_engine
from service.database.schema import upgrade
from tests.support.clocks import MovableClock
from tests.support.defaults import DELIVERY, POOL

MAIL = Mail("account_exists", "ana@example.com", {})


ON_BOTH_ENGINES = True  # every test here that uses the state database runs on SQLite and on PostgreSQL


@pytest.fixture
def nodes(database_url: str) -> Iterator[list[Engine]]:
    """Two nodes' engines over one state database."""
    engines = [make_engine(database_url, POOL) for _ in range(2)]
    upgrade(engines[0])
    yield engines
    for engine in engines:
        engine.dispose()


def test_a_claimed_mail_is_not_claimed_again_until_its_lease_runs_out(nodes: list[Engine]) -> None:
    clock = MovableClock()
    first, second = (Outbox(engine, DELIVERY, clock) for engine in nodes)
    mail_id = first.enqueue(MAIL)
    claimed = first.claim()
    assert claimed is not None and claimed.id == mail_id and claimed.attempt == 1
    assert second.claim() is None
    clock.advance(DELIVERY.lease.total_seconds() + 1)  # the first node died while sending
    taken_over = second.claim()
    assert taken_over is not None and taken_over.id == mail_id and taken_over.attempt == 2
    assert not first.sent(claimed)  # a lost claim marks nothing
    assert second.sent(taken_over)
    assert first.status(mail_id) == SENT
    clock.advance(DELIVERY.lease.total_seconds() + 1)
    assert first.claim() is None  # a sent mail is never claimed again


def test_two_nodes_over_one_database_send_each_mail_once(nodes: list[Engine]) -> None:
    policy = replace(DELIVERY, batch=1000)
    outboxes = [Outbox(engine, policy) for engine in nodes]
    ids = {outboxes[0].enqueue(Mail("account_exists", f"user{n}@example.com", {})) for n in range(40)}
    sent: Counter[str] = Counter()
    lock = threading.Lock()
    start = threading.Barrier(2)

    def transport(claimed: Claimed) -> None:
        with lock:
            sent[claimed.id] += 1

    def node(outbox: Outbox) -> None:
        start.wait()
        outbox.deliver(transport)

    threads = [threading.Thread(target=node, args=(outbox,)) for outbox in outboxes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert set(sent) == ids
    assert set(sent.values()) == {1}
    assert {outboxes[1].status(mail_id) for mail_id in ids} == {SENT}


def test_a_failed_send_is_retried_after_a_doubling_wait_and_given_up_after_max_attempts(nodes: list[Engine]) -> None:
    clock = MovableClock()
    policy = replace(DELIVERY, max_attempts=3)
    outbox = Outbox(nodes[0], policy, clock)
    mail_id = outbox.enqueue(MAIL)
    attempts: list[int] = []

    def down(claimed: Claimed) -> None:
        attempts.append(claimed.attempt)
        raise ConnectionRefusedError("the server is away")

    assert outbox.deliver(down) == {"sent": 0, "retrying": 1, "failed": 0}
    for attempt in (1, 2):
        wait = policy.retry_after(attempt).total_seconds()
        assert wait == policy.first_retry.total_seconds() * 2 ** (attempt - 1)
        clock.advance(wait - 1)
        assert outbox.claim() is None  # not before its wait is over
        clock.advance(1)
        outbox.deliver(down)
    assert attempts == [1, 2, 3]
    assert outbox.status(mail_id) == FAILED


def test_the_wait_between_attempts_never_exceeds_the_longest_retry() -> None:
    assert DELIVERY.retry_after(200) == DELIVERY.longest_retry


def test_a_mail_the_server_refuses_for_good_is_not_retried(nodes: list[Engine]) -> None:
    outbox = Outbox(nodes[0], DELIVERY)
    mail_id = outbox.enqueue(MAIL)

    def refusing(_: Claimed) -> None:
        raise Undeliverable("550 no such mailbox")

    assert outbox.deliver(refusing) == {"sent": 0, "retrying": 0, "failed": 1}
    assert outbox.status(mail_id) == FAILED


def test_an_outage_stops_the_round_and_loses_no_mail(nodes: list[Engine]) -> None:
    clock = MovableClock()
    outbox = Outbox(nodes[0], DELIVERY, clock)
    ids = [outbox.enqueue(MAIL) for _ in range(3)]
    delivered: list[str] = []

    def down(_: Claimed) -> None:
        raise TimeoutError

    assert outbox.deliver(down)["retrying"] == 1  # one try; the others wait for the next round
    assert {outbox.status(mail_id) for mail_id in ids} == {PENDING}
    clock.advance(DELIVERY.first_retry.total_seconds())
    assert outbox.deliver(lambda claimed: delivered.append(claimed.id))["sent"] == 3
    assert sorted(delivered) == sorted(ids)


def test_a_mail_written_in_a_transaction_that_rolls_back_is_never_sent(nodes: list[Engine]) -> None:
    outbox = Outbox(nodes[0], DELIVERY)
    with pytest.raises(RuntimeError), nodes[0].begin() as connection:
        outbox.enqueue(MAIL, connection)
        raise RuntimeError("the request failed")
    assert outbox.claim() is None


def test_a_deferred_message_comes_back_after_its_wait_with_its_attempt_not_counted(nodes: list[Engine]) -> None:
    """A worker with no room for a message now (a logout token whose host is at its bound) puts it back: another
    node may take it once the wait is over, and it has lost none of its attempts."""
    clock = MovableClock()
    first, second = (Outbox(engine, DELIVERY, clock) for engine in nodes)
    mail_id = first.enqueue(MAIL)
    claimed = first.claim()
    assert claimed is not None and claimed.attempt == 1
    first.defer(claimed, 5)
    assert second.claim() is None  # not due yet
    clock.advance(5)
    again = second.claim()
    assert again is not None and again.id == mail_id and again.attempt == 1
    assert not first.sent(claimed)  # the deferred claim marks nothing
