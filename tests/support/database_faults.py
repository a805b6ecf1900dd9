"""Real failures of a real database, for the tests of what a failed write leaves behind: through SQLAlchemy's
documented events (``before_cursor_execute``, ``commit``) on the test's own engine, never by replacing a
function of the product or of SQLAlchemy."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import OperationalError

WROTE = "tests.database_faults.wrote"


@contextmanager
def commits_fail_after_writing(
    engine: Engine, table: sa.Table, message: str = "database or disk is full"
) -> Iterator[None]:
    """While open, a transaction on ``engine`` that inserted into ``table`` fails at its COMMIT with an
    ``OperationalError`` (as a full disk fails it); other transactions commit as usual."""

    def noted(connection: Connection, cursor: Any, statement: str, *args: Any) -> None:
        if statement.lstrip().upper().startswith("INSERT INTO " + table.name.upper()):
            connection.info[WROTE] = True

    def refused(connection: Connection) -> None:
        if connection.info.pop(WROTE, False):
            raise OperationalError("COMMIT", {}, Exception(message))

    def began(connection: Connection) -> None:
        connection.info.pop(WROTE, None)

    listeners = (("begin", began), ("before_cursor_execute", noted), ("commit", refused))
    for name, listener in listeners:
        sa.event.listen(engine, name, listener)
    try:
        yield
    finally:
        for name, listener in listeners:
            sa.event.remove(engine, name, listener)


@contextmanager
def statements_fail(engine: Engine, error: BaseException, *, matching: str = "") -> Iterator[None]:
    """While open, every statement on ``engine`` whose SQL contains ``matching`` (every statement, by default)
    raises ``error`` before it reaches the database: an outage (``OperationalError``) or a fault of the layer
    underneath (anything else)."""

    def fail(connection: Connection, cursor: Any, statement: str, *args: Any) -> None:
        if matching in statement:
            raise error

    sa.event.listen(engine, "before_cursor_execute", fail)
    try:
        yield
    finally:
        sa.event.remove(engine, "before_cursor_execute", fail)


def outage() -> OperationalError:
    """What psycopg or sqlite3 raise, through SQLAlchemy, when the server is gone."""
    return OperationalError("SELECT 1", {}, ConnectionRefusedError("connection refused"))
