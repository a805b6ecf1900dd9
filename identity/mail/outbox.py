"""The outbox: mail, and logout tokens posted to clients, leave through the state database, never from the
request that causes them.

Each message belongs to a channel, the worker that delivers it: ``mail`` (service/mail/) or
``backchannel_logout`` (OpenID Connect Back-Channel Logout 1.0: identity/sessions/backchannel_logout.py, posted by
service/outbound/). An ``Outbox`` claims its own channel's messages only, so a client's endpoint that is away
never holds up mail, nor the reverse; both share the claim, retry and backoff rules below.

A request inserts one row (``Outbox.enqueue``, in the transaction of what it records when it has one).
A background worker on every node runs ``Outbox.deliver``: it claims one due row at a time with a
conditional UPDATE (the row is still pending and nobody's lease on it is running), which one node
alone can win on SQLite and PostgreSQL alike; it sends the mail, then marks it sent with its own claim
token. A failed send is retried with exponential backoff until ``max_attempts``; a mail the server
refuses for good (a 5xx answer) is marked failed at once.

Delivery is once per mail across nodes: a row is only sent by the holder of its claim, and the lease
outlasts any send (``DeliveryPolicy.lease``). The one gap SMTP leaves open is a crash between the
server's acceptance and the mark: the lease then runs out and the mail is sent again (at least once,
never lost). The rows hold what the templates show, never a password; with a sealer (the service's
``MENUS_SECRET_KEYS``) it is sealed at rest, since a mailed link carries a token that the link's own table
keeps only as a hash.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from identity.common.clock import SYSTEM_CLOCK, Clock, new_id
from identity.common.tables import mail_outbox
from identity.keys.sealing import Sealer, SealingError

PENDING, SENT, FAILED = "pending", "sent", "failed"
MAIL = "mail"  # the channel of mail (the default)


class Undeliverable(Exception):
    """The mail server refused this mail for good (RFC 5321 §4.2.1: a 5yz reply); it is not retried."""


@dataclass(frozen=True, slots=True)
class Mail:
    """One message to send: its template (``kind``), its one recipient and what the template shows. A mail's
    recipient is an address; a logout token's, the client it is for (identity/sessions/backchannel_logout.py)."""

    kind: str
    recipient: str
    params: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Claimed:
    """A mail this node holds the claim of, until it marks it."""

    id: str
    mail: Mail
    attempt: int  # 1 for the first try
    token: str


Transport = Callable[[Claimed], None]  # sends, or raises (Undeliverable: for good; anything else: try again)


@dataclass(frozen=True, slots=True)
class DeliveryPolicy:
    lease: timedelta  # how long a claim keeps other nodes off a row; longer than any one send
    max_attempts: int  # tries before a mail is marked failed
    first_retry: timedelta  # the wait after the first failure; it doubles with each failure
    longest_retry: timedelta  # the wait never grows past this
    batch: int  # mails one round sends at most (the next round, a poll interval later, goes on)

    def retry_after(self, attempt: int) -> timedelta:
        """The wait after failed attempt number ``attempt`` (1, 2, …): first_retry × 2^(attempt−1), bounded."""
        wait: timedelta = self.first_retry * (2 ** min(attempt - 1, 30))
        return min(wait, self.longest_retry)


class Doorbell:
    """Rung after a transaction that wrote messages to a channel has committed: the worker of this node that delivers
    them looks at once (``listen``) instead of at its next poll. Messages written elsewhere (another node, the
    command line) are found at that poll, which stays the fallback. A listener must not block: it is called in the
    thread of the request that wrote the messages."""

    def __init__(self) -> None:
        self._listeners: list[Callable[[], None]] = []

    def listen(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)

    def ring(self) -> None:
        for listener in self._listeners:
            listener()


class Outbox:
    def __init__(
        self,
        engine: Engine,
        policy: DeliveryPolicy,
        clock: Clock = SYSTEM_CLOCK,
        sealer: Sealer | None = None,
        *,
        channel: str = MAIL,
        one_destination: bool = True,
    ) -> None:
        self._engine = engine
        self.policy = policy
        self._clock = clock
        self._sealer = sealer  # seals what the templates show (links carry tokens)
        self.channel = channel  # the messages this outbox enqueues, claims and delivers
        # True: every message goes through one server (mail: the SMTP server), so a round stops at the first
        # failure to retry; False: each goes to its recipient's own endpoint (logout tokens: each client's URI),
        # so one endpoint away never holds up the others.
        self.one_destination = one_destination

    def _stored(self, params: Mapping[str, str]) -> dict[str, str]:
        if self._sealer is None:
            return dict(params)
        return {"sealed": self._sealer.seal(json.dumps(dict(params)).encode("utf-8")).decode("ascii")}

    def _opened(self, stored: Mapping[str, str]) -> dict[str, str]:
        if "sealed" not in stored or self._sealer is None:
            return dict(stored)
        opened: dict[str, str] = json.loads(self._sealer.open(stored["sealed"].encode("ascii")))
        return opened

    def transaction(self) -> AbstractContextManager[Connection]:
        """A transaction of the state database, for a mail and the record it goes with."""
        return self._engine.begin()

    def enqueue(self, mail: Mail, connection: Connection | None = None) -> str:
        """Write ``mail`` to the outbox (in ``connection``'s transaction when given); its id."""
        stored = Mail(mail.kind, mail.recipient, self._stored(mail.params))
        if connection is not None:
            return self.write(connection, self.channel, stored, self._clock.now())
        with self._engine.begin() as own:
            return self.write(own, self.channel, stored, self._clock.now())

    @staticmethod
    def write(connection: Connection, channel: str, message: Mail, at: datetime) -> str:
        """Write ``message`` as it is (unsealed) to ``channel``, due at once, in ``connection``'s transaction; its
        id. For what holds no secret, written where no ``Outbox`` is at hand (a revocation's logout tokens)."""
        message_id = new_id("mail" if channel == MAIL else "msg")
        connection.execute(
            mail_outbox.insert().values(
                id=message_id,
                channel=channel,
                kind=message.kind,
                recipient=message.recipient,
                params=dict(message.params),
                status=PENDING,
                attempts=0,
                next_attempt_at=at,
                claimed_until=at,
                created_at=at,
            )
        )
        return message_id

    def claim(self) -> Claimed | None:
        """Claim the oldest due mail of this channel no other node holds, or None when none is due.

        One conditional UPDATE per candidate: it changes the row only while the row is pending and no
        lease on it runs, so of two nodes reading the same candidate exactly one sees a row changed."""
        at = self._clock.now()
        due = sa.and_(
            mail_outbox.c.channel == self.channel,
            mail_outbox.c.status == PENDING,
            mail_outbox.c.next_attempt_at <= at,
            mail_outbox.c.claimed_until <= at,
        )
        with self._engine.connect() as connection:
            candidates = connection.execute(
                sa.select(mail_outbox.c.id).where(due).order_by(mail_outbox.c.next_attempt_at).limit(5)
            ).all()
        for (mail_id,) in candidates:
            token = secrets.token_hex(16)
            with self._engine.begin() as connection:
                won = connection.execute(
                    mail_outbox.update()
                    .where(mail_outbox.c.id == mail_id, due)
                    .values(
                        claimed_until=at + self.policy.lease,
                        claim_token=token,
                        attempts=mail_outbox.c.attempts + 1,
                    )
                ).rowcount
                if won != 1:
                    continue  # another node took it between the read and the update
                row = connection.execute(sa.select(mail_outbox).where(mail_outbox.c.id == mail_id)).one()
            try:
                params = self._opened(row.params)
            except SealingError:  # sealed with a key no longer configured: no retry opens it
                self.failed(
                    Claimed(row.id, Mail(row.kind, row.recipient, {}), row.attempts, token), "unsealable", for_good=True
                )
                continue
            return Claimed(row.id, Mail(row.kind, row.recipient, params), row.attempts, token)
        return None

    def sent(self, claimed: Claimed) -> bool:
        """Mark a claimed mail sent; False when the claim was lost (its lease ran out and another node took it)."""
        with self._engine.begin() as connection:
            return bool(
                connection.execute(
                    mail_outbox.update()
                    .where(mail_outbox.c.id == claimed.id, mail_outbox.c.claim_token == claimed.token)
                    .values(status=SENT, sent_at=self._clock.now(), last_error=None)
                ).rowcount
            )

    def failed(self, claimed: Claimed, reason: str, *, for_good: bool = False) -> str:
        """Put a mail whose send failed back for a later attempt, or mark it failed (refused for good, or out of
        attempts); its new status."""
        at = self._clock.now()
        give_up = for_good or claimed.attempt >= self.policy.max_attempts
        status = FAILED if give_up else PENDING
        with self._engine.begin() as connection:
            connection.execute(
                mail_outbox.update()
                .where(mail_outbox.c.id == claimed.id, mail_outbox.c.claim_token == claimed.token)
                .values(
                    status=status,
                    claimed_until=at,
                    claim_token=None,
                    next_attempt_at=at + self.policy.retry_after(claimed.attempt),
                    last_error=reason[:200],
                )
            )
        return status

    def deliver(self, transport: Transport) -> dict[str, int]:
        """One round of the background worker: claim, send and mark due mails, one at a time, at most
        ``policy.batch``; how many were sent, put back for a retry, and given up."""
        counts = {"sent": 0, "retrying": 0, "failed": 0}
        for _ in range(self.policy.batch):
            claimed = self.claim()
            if claimed is None:
                break
            try:
                transport(claimed)
            except Undeliverable as error:
                self.failed(claimed, str(error) or type(error).__name__, for_good=True)
                counts["failed"] += 1
            except Exception as error:  # the server is away, slow or busy: the row waits for its next attempt
                status = self.failed(claimed, f"{type(error).__name__}: {error}")
                counts["retrying" if status == PENDING else "failed"] += 1
                if status == PENDING and self.one_destination:
                    break  # the server is likely away for the others too: the next round tries again
            else:
                self.sent(claimed)
                counts["sent"] += 1
        return counts

    def defer(self, claimed: Claimed, seconds: float) -> None:
        """Put a claimed message back, due again in ``seconds``, as if it had not been claimed: its attempt is not
        counted (its worker had no room for it now: a logout token whose client's host already has as many posts
        under way as it may)."""
        at = self._clock.now()
        with self._engine.begin() as connection:
            connection.execute(
                mail_outbox.update()
                .where(mail_outbox.c.id == claimed.id, mail_outbox.c.claim_token == claimed.token)
                .values(
                    claimed_until=at,
                    claim_token=None,
                    attempts=mail_outbox.c.attempts - 1,
                    next_attempt_at=at + timedelta(seconds=seconds),
                )
            )

    def status(self, mail_id: str) -> str | None:
        """A mail's status (pending, sent, failed), or None when there is no such mail."""
        with self._engine.connect() as connection:
            found = connection.scalar(sa.select(mail_outbox.c.status).where(mail_outbox.c.id == mail_id))
        return str(found) if found is not None else None

    @staticmethod
    def purge(connection: Connection, before: object) -> int:
        """Delete mails sent or given up before ``before`` (they hold links nobody needs any more)."""
        return int(
            connection.execute(
                mail_outbox.delete().where(mail_outbox.c.status != PENDING, mail_outbox.c.created_at < before)
            ).rowcount
        )
