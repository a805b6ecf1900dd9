"""Per-key usage of the menus API: request counts by UTC day and status class, and when a key was last used.

Counting happens in memory, in the process that answered (``UsageCounter.count``: a dictionary
increment under a lock, no I/O). ``flush`` writes what was counted in one transaction: one upsert
row per (key, day, status class) seen since the last flush, plus ``last_used_at`` for keys whose
stored value is more than ``last_used_resolution`` old as far as this process knows (at most once a
minute per key and process by default). The service flushes every few seconds and at shutdown, so a thousand
requests a second add a handful of writes, not a thousand. Counts of a process that dies without
shutting down (SIGKILL, power loss) since its last flush are lost: usage is a statistic, not a bill.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from identity.api_keys.keys import api_keys, record_last_used
from identity.common.clock import SYSTEM_CLOCK, Clock
from identity.common.database import metadata
from identity.common.upsert import dialect_insert

api_key_usage = sa.Table(
    "api_key_usage",
    metadata,
    sa.Column("key_id", sa.String(32), sa.ForeignKey(api_keys.c.id, ondelete="CASCADE"), primary_key=True),
    sa.Column("day", sa.Date, primary_key=True),  # UTC
    sa.Column("status_class", sa.SmallInteger, primary_key=True),  # 2 for 2xx … 5 for 5xx
    sa.Column("requests", sa.BigInteger, nullable=False),
)


class UsageCounter:
    """Counts in memory; ``flush`` writes the counts in one transaction. Safe to use from several threads."""

    def __init__(self, engine: Engine, last_used_resolution: timedelta, clock: Clock = SYSTEM_CLOCK) -> None:
        self._engine = engine
        self._last_used_resolution = last_used_resolution  # last_used_at is written at most this often per key
        self._clock = clock
        self._lock = threading.Lock()
        self._counts: Counter[tuple[str, date, int]] = Counter()
        self._seen: dict[str, datetime] = {}  # key id → last request since the last flush
        self._written: dict[str, datetime] = {}  # key id → the last_used_at this process last wrote
        self._flushing = threading.Lock()

    def count(self, key_id: str, status: int) -> None:
        """One answered request of ``key_id`` with ``status``."""
        at = self._clock.now()
        status_class = min(max(status // 100, 2), 5)
        with self._lock:
            self._counts[(key_id, at.date(), status_class)] += 1
            self._seen[key_id] = at

    def pending(self) -> int:
        """Requests counted and not yet written."""
        with self._lock:
            return sum(self._counts.values())

    def flush(self) -> int:
        """Write the counts gathered since the last flush; return the number of statements written.

        If the database fails, the counts are put back, to be written by the next flush."""
        with self._flushing:  # one flush at a time: the shutdown flush may meet the periodic one
            with self._lock:
                counts, self._counts = self._counts, Counter()
                seen, self._seen = self._seen, {}
            stale = {
                key_id: at
                for key_id, at in seen.items()
                if key_id not in self._written or at - self._written[key_id] >= self._last_used_resolution
            }
            if not counts and not stale:
                return 0
            try:
                with self._engine.begin() as connection:
                    statements = self._write(connection, counts, stale)
            except Exception:
                with self._lock:
                    self._counts.update(counts)
                    for key_id, at in seen.items():
                        self._seen[key_id] = max(at, self._seen.get(key_id, at))
                raise
            self._written.update(stale)
            return statements

    @staticmethod
    def _write(connection: Connection, counts: Counter[tuple[str, date, int]], stale: dict[str, datetime]) -> int:
        statements = 0
        if counts:
            rows = [
                {"key_id": key_id, "day": day, "status_class": status_class, "requests": n}
                for (key_id, day, status_class), n in counts.items()
            ]
            insert = dialect_insert(connection.dialect.name)(api_key_usage)
            upsert = insert.on_conflict_do_update(
                index_elements=["key_id", "day", "status_class"],
                set_={"requests": api_key_usage.c.requests + insert.excluded.requests},
            )
            # A key deleted meanwhile would fail the foreign key: count only keys that exist.
            existing = set(
                connection.scalars(sa.select(api_keys.c.id).where(api_keys.c.id.in_({r["key_id"] for r in rows})))
            )
            rows = [row for row in rows if row["key_id"] in existing]
            if rows:
                connection.execute(upsert, rows)
                statements += 1
        if stale:
            record_last_used(connection, stale)
            statements += 1
        return statements


@dataclass(frozen=True, slots=True)
class KeyUsage:
    today: int
    last_30_days: int


@dataclass(frozen=True, slots=True)
class DailyUsage:
    day: date
    by_class: dict[int, int]  # status class → requests

    @property
    def total(self) -> int:
        return sum(self.by_class.values())


class UsageReport:
    """What was written: per key over today and the last 30 days, and day by day for an organization."""

    DAYS = 30

    def __init__(self, engine: Engine, clock: Clock = SYSTEM_CLOCK) -> None:
        self._engine = engine
        self._clock = clock

    def days(self) -> list[date]:
        """The last 30 UTC days, oldest first, today last."""
        today = self._clock.now().date()
        return [today - timedelta(days=n) for n in range(self.DAYS - 1, -1, -1)]

    def per_key(self, org_id: str) -> dict[str, KeyUsage]:
        days = self.days()
        query = _requests_since(org_id, days[0], api_key_usage.c.key_id, api_key_usage.c.day)
        today: Counter[str] = Counter()
        month: Counter[str] = Counter()
        with self._engine.connect() as connection:
            for key_id, day, requests in connection.execute(query):
                month[key_id] += int(requests)
                if day == days[-1]:
                    today[key_id] += int(requests)
        return {key_id: KeyUsage(today[key_id], month[key_id]) for key_id in month}

    def daily(self, org_id: str) -> list[DailyUsage]:
        """Requests of every key of the organization, by day and status class, for each of the last 30 days."""
        days = self.days()
        query = _requests_since(org_id, days[0], api_key_usage.c.day, api_key_usage.c.status_class)
        found: dict[date, dict[int, int]] = {day: {} for day in days}
        with self._engine.connect() as connection:
            for day, status_class, requests in connection.execute(query):
                if day in found:
                    found[day][int(status_class)] = int(requests)
        return [DailyUsage(day, found[day]) for day in days]


def _requests_since(org_id: str, first_day: date, *by: sa.ColumnElement[Any]) -> sa.Select[Any]:
    """The requests of the organization's keys from ``first_day`` on, summed by the columns ``by``."""
    return (
        sa.select(*by, sa.func.sum(api_key_usage.c.requests))
        .join(api_keys, api_keys.c.id == api_key_usage.c.key_id)
        .where(api_keys.c.org_id == org_id, api_key_usage.c.day >= first_day)
        .group_by(*by)
    )
