"""Sign-in throttling: repeated failures slow an account and an address down.

Counters live in the state database, so every node sees the same ones. Within a
window, an account may fail ``account_limit`` times and an address
``address_limit`` times; after that, sign-ins for it are refused until the window
ends, before any password is hashed. A successful sign-in clears its account's
counter. Emails are kept only as hashes here.
"""

from __future__ import annotations

import hashlib
import math
from datetime import timedelta

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from identity.clock import now, utc
from identity.errors import Throttled
from identity.tables import sign_in_failures

ACCOUNT_LIMIT = 5  # failed sign-ins per account per window
ADDRESS_LIMIT = 20  # failed sign-ins per client address per window
WINDOW = timedelta(minutes=15)


def account_key(email: str) -> str:
    return "account:" + hashlib.sha256(email.strip().casefold().encode()).hexdigest()


def address_key(address: str) -> str:
    return "address:" + address[:64]


class SignInThrottle:
    def __init__(self, engine: Engine, account_limit: int = ACCOUNT_LIMIT, address_limit: int = ADDRESS_LIMIT) -> None:
        self._engine = engine
        self._limits = {"account": account_limit, "address": address_limit}

    def check(self, email: str, address: str) -> None:
        """Raise ``Throttled`` when the account or the address has failed too often in this window."""
        at = now()
        keys = [account_key(email), address_key(address)]
        with self._engine.connect() as connection:
            rows = connection.execute(sa.select(sign_in_failures).where(sign_in_failures.c.key.in_(keys))).all()
        waits = [
            (utc(row.window_start) + WINDOW - at).total_seconds()
            for row in rows
            if row.failures >= self._limits[row.key.split(":", 1)[0]] and utc(row.window_start) + WINDOW > at
        ]
        if waits:
            raise Throttled(max(1, math.ceil(max(waits))))

    def failed(self, email: str, address: str) -> None:
        for key in (account_key(email), address_key(address)):
            self._count(key)

    def succeeded(self, email: str) -> None:
        with self._engine.begin() as connection:
            connection.execute(sign_in_failures.delete().where(sign_in_failures.c.key == account_key(email)))

    def _count(self, key: str) -> None:
        """One failure more; a counter whose window has passed starts again (one statement each way)."""
        at = now()
        table = sign_in_failures
        for _ in range(3):
            with self._engine.begin() as connection:
                restarted = connection.execute(
                    table.update()
                    .where(table.c.key == key, table.c.window_start <= at - WINDOW)
                    .values(failures=1, window_start=at)
                ).rowcount
                if restarted:
                    return
                counted = connection.execute(
                    table.update().where(table.c.key == key).values(failures=table.c.failures + 1)
                ).rowcount
                if counted:
                    return
            try:
                with self._engine.begin() as connection:
                    connection.execute(table.insert().values(key=key, failures=1, window_start=at))
                return
            except IntegrityError:
                continue  # another request inserted it first; count again
