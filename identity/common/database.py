"""The domain's database: the shared SQLAlchemy metadata every table is defined on, and the one
transaction kind the domain chooses for itself.

The service (``service.database.db``) makes the engine and adds its own tables to this metadata; the migrations
compare against it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

__all__ = ["commit_without_waiting", "metadata", "use_once", "writing"]

metadata = sa.MetaData()


@contextmanager
def commit_without_waiting(engine: Engine) -> Iterator[Connection]:
    """A transaction whose commit, on SQLite, does not wait for the disk, for records whose loss in a power cut
    fails closed. An access token's record is one: without it the token is inactive, and its client asks again.

    SQLite: ``synchronous=NORMAL`` for this commit (it can only change outside a transaction, so it is set before
    and restored after): a crash of the process loses nothing, and nothing is ever corrupted; a power cut or an OS
    crash may undo the last such commits. PostgreSQL: an ordinary commit, which waits for its WAL to be flushed. Its
    asynchronous commit (``synchronous_commit`` off) would lose the last commits when the *server* crashes or is
    stopped in immediate mode, not only in a power cut (PostgreSQL's manual, "Asynchronous Commit"): the drill's
    PostgreSQL restart lost the record of a token a client had just been given. The tokens a worker issues in a
    row share one commit (``TokenWork.commit``, identity/tokens/unit_of_work.py), so the wait is paid once per row.
    Every other write waits for the disk on both engines.
    """
    with engine.connect() as connection:
        if connection.dialect.name != "sqlite":
            with connection.begin():
                yield connection
            return
        connection.exec_driver_sql("PRAGMA synchronous=NORMAL")
        connection.commit()  # ends SQLAlchemy's autobegun transaction; SQLite itself never began one for a PRAGMA
        try:
            with connection.begin():
                yield connection
        finally:
            try:
                connection.exec_driver_sql("PRAGMA synchronous=FULL")
                connection.commit()
            except Exception:
                connection.invalidate()  # never hand a connection that may not wait for the disk to the pool
                raise


def use_once(connection: Connection, table: sa.Table, at: datetime, *where: sa.ColumnElement[bool]) -> int:
    """Mark the rows of ``table`` matching ``where`` used at ``at``, if still unused and unexpired; how many.

    A single-use secret (an authorization code, RFC 6749 §4.1.2; an e-mail link) is spent by this one UPDATE,
    so two concurrent attempts cannot both succeed, on SQLite or PostgreSQL."""
    unused = (table.c.used_at.is_(None), table.c.expires_at > at)
    return int(connection.execute(table.update().where(*where, *unused).values(used_at=at)).rowcount)


def writing(connection: Connection) -> None:
    """Make the transaction just begun a writer before it reads what it decides on (a count against a cap).

    SQLite has one writer at a time, but Python's sqlite3 begins the transaction only at its first write: the reads
    before it see whatever was committed then, and two transactions can both read a count of 4 and both insert
    the fifth. ``BEGIN IMMEDIATE`` takes the write lock at once, so everything read after it stays true until the
    commit (another writer waits, within the busy timeout). PostgreSQL: nothing here; the transaction locks the
    rows it decides on (``SELECT … FOR UPDATE``). Call it first, before any statement of the transaction."""
    if connection.dialect.name == "sqlite":
        connection.exec_driver_sql("BEGIN IMMEDIATE")
