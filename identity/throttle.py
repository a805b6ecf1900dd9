"""Sign-in throttling: repeated failures slow an account and an address down.

Counters live in the state database, so every node sees the same ones. Every
attempt is counted *before* the password is checked, in one atomic statement
per counter, so concurrent guesses cannot all slip under the limit; a
successful sign-in then takes its attempt back. Within a window an account may
have ``account_limit`` failed attempts and an address ``address_limit``; past
that, attempts are refused until the window ends, before any password is
hashed. Emails are kept only as hashes here. Sign-ups count against their
address like failures, so one address cannot create accounts without limit.

Behind a reverse proxy the address is the client's only when the proxy's
``X-Forwarded-For`` is trusted (uvicorn's ``FORWARDED_ALLOW_IPS``); otherwise
every client shares the proxy's address and its counter.
"""

from __future__ import annotations

import hashlib
import math
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from identity.clock import now, utc
from identity.errors import Throttled
from identity.tables import sign_in_failures

ACCOUNT_LIMIT = 5  # failed sign-ins per account per window
ADDRESS_LIMIT = 20  # failed sign-ins (and sign-ups) per client address per window
WINDOW = timedelta(minutes=15)


def account_key(email: str) -> str:
    return "account:" + hashlib.sha256(email.strip().casefold().encode()).hexdigest()


def address_key(address: str) -> str:
    return "address:" + address[:64]


class SignInThrottle:
    def __init__(self, engine: Engine, account_limit: int = ACCOUNT_LIMIT, address_limit: int = ADDRESS_LIMIT) -> None:
        self._engine = engine
        self._limits = {"account": account_limit, "address": address_limit}

    def attempt(self, email: str, address: str) -> None:
        """Count an attempt for the account and the address; raise ``Throttled`` past either limit."""
        waits = [self._count(key) for key in (account_key(email), address_key(address))]
        refused = [wait for wait in waits if wait is not None]
        if refused:
            raise Throttled(max(refused))

    def succeeded(self, email: str, address: str) -> None:
        """A sign-in succeeded: clear the account's counter and take the address's attempt back."""
        table = sign_in_failures
        with self._engine.begin() as connection:
            connection.execute(table.delete().where(table.c.key == account_key(email)))
            connection.execute(
                table.update()
                .where(table.c.key == address_key(address), table.c.failures > 0)
                .values(failures=table.c.failures - 1)
            )

    def signed_up(self, email: str) -> None:
        """A sign-up succeeded: the new account starts clean; the address keeps the attempt."""
        with self._engine.begin() as connection:
            connection.execute(sign_in_failures.delete().where(sign_in_failures.c.key == account_key(email)))

    def _count(self, key: str) -> int | None:
        """One attempt more, atomically; the seconds to wait when the counter is past its limit, else None."""
        limit = self._limits[key.split(":", 1)[0]]
        at = now()
        counted = self._increment(key, at)
        if counted is None:
            return None
        failures, window_start = counted
        if failures > limit:
            return max(1, math.ceil((window_start + WINDOW - at).total_seconds()))
        return None

    def _increment(self, key: str, at: datetime) -> tuple[int, datetime] | None:
        """Add one in a single UPDATE (restarting a window that has passed), or insert the first row."""
        table = sign_in_failures
        for _ in range(3):
            with self._engine.begin() as connection:
                changed = (
                    connection.execute(
                        table.update()
                        .where(table.c.key == key, table.c.window_start <= at - WINDOW)
                        .values(failures=1, window_start=at)
                    ).rowcount
                    or connection.execute(
                        table.update().where(table.c.key == key).values(failures=table.c.failures + 1)
                    ).rowcount
                )
                if changed:
                    row = connection.execute(
                        sa.select(table.c.failures, table.c.window_start).where(table.c.key == key)
                    ).one()
                    return int(row.failures), utc(row.window_start)
            try:
                with self._engine.begin() as connection:
                    connection.execute(table.insert().values(key=key, failures=1, window_start=at))
                return 1, at
            except IntegrityError:
                continue  # another request inserted it first; count again
        return None  # pragma: no cover - three lost races in a row
