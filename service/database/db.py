"""The state database: one SQLAlchemy engine, and service secrets (sealed at rest).

The shared metadata and ``commit_without_waiting`` belong to the domain (``identity.common.database``); they are
re-exported here for the migrations and the tools.

SQLite (the default) runs in WAL mode, synchronous=FULL, with foreign keys on; PostgreSQL is used
for several nodes. Queries are SQLAlchemy Core, the same on both engines.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
from collections.abc import Callable, Iterable
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from identity.common.database import commit_without_waiting as commit_without_waiting
from identity.common.database import metadata as metadata
from identity.keys.sealing import Sealer
from service.settings import Pool


def client_threads(engine: Engine, pool: Pool) -> int:
    """How many worker threads may run the token, introspection and revocation work of one process at once.

    PostgreSQL: one per connection the pool can give. SQLite: one, since the file takes one writer at a time
    and more threads only queue on its lock, whose busy handler sleeps (scenario 4 of the benchmark: p99 of
    380 ms with 15 threads, 21 ms with one, at the same rate).
    """
    return 1 if engine.dialect.name == "sqlite" else pool.capacity


service_secrets = sa.Table(
    "service_secrets",
    metadata,
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("value", sa.LargeBinary, nullable=False),
)


class MissingDriver(RuntimeError):
    """The database URL names a driver that is not installed; the message names the extra that installs it."""


def sqlite_file(url: str) -> Path | None:
    """The file of an SQLite URL (None for another database, or SQLite in memory). ``ArgumentError`` for a string
    that is no database URL."""
    parsed = sa.make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database)


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def make_engine(url: str, pool: Pool, *, installed: Callable[[str], bool] = _installed) -> Engine:
    """Create the engine for ``url`` with ``pool``; for SQLite, create its folder and set durable pragmas.
    ``installed``: whether a driver's module can be imported (tests ask as if one were missing).

    ``hide_parameters``: a database error logged with its trace never shows the statement's values
    (hashes of tokens and codes, CSRF tokens, email addresses), only the statement.
    """
    parsed = sa.make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            private_file(Path(parsed.database))
        sizes = (
            {"pool_size": pool.size, "max_overflow": pool.max_overflow}
            if parsed.database not in (None, "", ":memory:")
            else {}
        )
        engine = sa.create_engine(url, connect_args={"check_same_thread": False}, hide_parameters=True, **sizes)
        sa.event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    if parsed.get_driver_name() == "psycopg" and not installed("psycopg"):
        raise MissingDriver(
            "PostgreSQL needs the psycopg driver, which the 'postgres' extra installs: "
            "pip install 'regional-menus[postgres]' (uv sync --extra postgres in a checkout)"
        )
    # pre-ping: a connection the server dropped (restart, failover) is replaced, not handed to a request.
    # connect_timeout: while the server is unreachable, requests get 503 within seconds, not a hang.
    return sa.create_engine(
        url,
        pool_pre_ping=True,
        connect_args={"connect_timeout": pool.connect_timeout},
        hide_parameters=True,
        pool_size=pool.size,
        max_overflow=pool.max_overflow,
    )


def private_file(path: Path) -> None:
    """Create ``path``'s folder (0700) and the empty file (0600) when missing: state is for this user alone.

    SQLite gives its -wal and -shm files the database file's mode. A folder or file that already exists
    keeps its mode (the folder may be a shared one the operator chose, such as /tmp).
    """
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass


def _sqlite_pragmas(connection, _record) -> None:  # type: ignore[no-untyped-def]
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    # FULL: every commit reaches the disk before it is acknowledged. NORMAL in WAL mode survives a process crash
    # but may lose the last commits on power loss: an acknowledged revocation or refresh rotation undone.
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=5000")
    cursor.close()


def service_secret(engine: Engine, sealer: Sealer, name: str, size: int = 32) -> bytes:
    """Return the shared secret ``name``, creating it on first use; every node reads the same one
    (``service_secrets_named`` for one name)."""
    return service_secrets_named(engine, sealer, (name,), size)[name]


def service_secrets_named(engine: Engine, sealer: Sealer, names: Iterable[str], size: int = 32) -> dict[str, bytes]:
    """Return the shared secrets ``names`` (name → secret), creating those missing; every node reads the same ones.

    One read when they all exist (every start after the first); on the first start, the missing ones are created
    in one transaction, and read back. Stored sealed with ``sealer``, the operator's keys
    (``service.database.sealing_keys.load_sealer``); a value from before sealing is read as it is, and sealed at the
    next start or ``secrets rotate``.
    """
    wanted = sorted(set(names))
    query = sa.select(service_secrets.c.name, service_secrets.c.value).where(service_secrets.c.name.in_(wanted))

    def read() -> dict[str, bytes]:
        with engine.begin() as connection:
            return {name: bytes(value) for name, value in connection.execute(query)}

    stored = read()
    missing = [name for name in wanted if name not in stored]
    if missing:
        new = [{"name": name, "value": sealer.seal(secrets.token_bytes(size))} for name in missing]
        try:
            with engine.begin() as connection:
                connection.execute(service_secrets.insert(), new)
        except IntegrityError:  # another node created one of them first: create the others one by one
            for row in new:
                try:
                    with engine.begin() as connection:
                        connection.execute(service_secrets.insert(), row)
                except IntegrityError:
                    pass  # another node created this one first; read theirs
        stored = read()
    absent = [name for name in wanted if name not in stored]
    if absent:
        raise RuntimeError(f"the service secrets {absent!r} could not be created")
    return {name: sealer.open(stored[name]) for name in wanted}
