"""The client endpoints' SQL and RSA run off the event loop, on one thread for SQLite and the pool's size
for PostgreSQL; and what they answer under load is what they committed. These tests hold or fail the app's own
database through SQLAlchemy's events on its engine (a commit that waits for a slow disk, a client deleted while
its token's row waits), never by replacing a function of the product: they check what a client sees and what
the database and the audit log keep, whatever the endpoints' batching does inside."""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from starlette.testclient import TestClient

from identity.accounts.organizations import Organization
from identity.clients.registry import ClientStore
from identity.common import audit
from identity.common.tables import access_tokens
from service.database.db import client_threads, make_engine
from tests.support import token_flows
from tests.support.defaults import POOL

GRANT = {"grant_type": "client_credentials", "scope": "members:read"}


def reporter(engine: Engine, org: Organization, name: str = "Reporter") -> token_flows.Registered:
    return token_flows.register(engine, org, name, grants=["client_credentials"], scopes=["members:read"])


@contextmanager
def first_commit_held(engine: Engine) -> Iterator[tuple[threading.Event, threading.Event]]:
    """The first COMMIT on ``engine`` after this opens of a transaction that wrote access tokens (issued or
    revoked them) waits, as for a slow disk, until ``release`` is set: the events ``entered`` (it waits) and
    ``release``. The app's background work (purge, usage, keys) commits as usual."""
    entered, release = threading.Event(), threading.Event()
    wrote = "tests.wrote_access_tokens"

    def executed(connection: Connection, cursor: Any, statement: str, *_: Any) -> None:
        if re.match(r"\s*(INSERT INTO|UPDATE) access_tokens\b", statement, re.IGNORECASE):
            connection.info[wrote] = True

    def commit(connection: Connection) -> None:
        if connection.info.pop(wrote, False) and not entered.is_set():
            entered.set()
            release.wait(10)

    listeners = (("before_cursor_execute", executed), ("commit", commit))
    for name, listener in listeners:
        sa.event.listen(engine, name, listener)
    try:
        yield entered, release
    finally:
        release.set()
        for name, listener in listeners:
            sa.event.remove(engine, name, listener)


@contextmanager
def writing_transactions(engine: Engine) -> Iterator[list[list[str]]]:
    """The transactions committed on ``engine`` meanwhile that wrote, except the background rounds' (on their own
    worker threads: service/web/offload.py): the statements each wrote with."""
    committed: list[list[str]] = []
    writes = "tests.writes"

    def began(connection: Connection) -> None:
        connection.info[writes] = []

    def executed(connection: Connection, cursor: Any, statement: str, *_: Any) -> None:
        if statement.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE")):
            connection.info.setdefault(writes, []).append(statement.split("(")[0].strip())

    def commit(connection: Connection) -> None:
        wrote = connection.info.pop(writes, [])
        if wrote and not threading.current_thread().name.startswith("background-worker"):
            committed.append(wrote)  # a request's, not the app's periodic rounds' (the start-up purge may still run)

    listeners = (("begin", began), ("before_cursor_execute", executed), ("commit", commit))
    for name, listener in listeners:
        sa.event.listen(engine, name, listener)
    try:
        yield committed
    finally:
        for name, listener in listeners:
            sa.event.remove(engine, name, listener)


def recorded(engine: Engine) -> int:
    with engine.connect() as connection:
        return int(connection.scalar(sa.select(sa.func.count()).select_from(access_tokens)) or 0)


def issued_to(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.fields["client_id"]  # type: ignore[attr-defined]
        for record in caplog.records
        if record.name == "regional_menus.audit" and record.fields["event"] == audit.TOKEN_ISSUED  # type: ignore[attr-defined]
    ]


# The client endpoints' SQL and RSA run off the event loop


@pytest.mark.parametrize("path", ["/oauth2/token", "/oauth2/revoke"], ids=["token", "revocation"])
def test_client_endpoint_work_runs_in_a_thread_while_the_loop_answers_others(
    app: Any, engine: Engine, acme: Organization, path: str
) -> None:
    client = reporter(engine, acme)
    with TestClient(app) as http, ThreadPoolExecutor(1) as pool:
        token = http.post("/oauth2/token", data=GRANT, headers=client.basic).json()["access_token"]
        form = GRANT if path == "/oauth2/token" else {"token": token}
        with first_commit_held(app.engine) as (entered, release):
            pending = pool.submit(http.post, path, data=form, headers=client.basic)
            assert entered.wait(10)  # its commit waits for the disk
            started = time.monotonic()
            assert http.get("/jwks").status_code == 200  # answered while the other request's work waits
            waited = time.monotonic() - started
            release.set()
            assert pending.result(10).status_code == 200
    assert waited < 5, f"/jwks waited {waited:.1f} s for the event loop"


def test_introspection_reads_in_a_thread_while_the_loop_answers_others(
    app: Any, engine: Engine, acme: Organization
) -> None:
    client = reporter(engine, acme)
    entered, release = threading.Event(), threading.Event()

    def slow_read(connection: Connection, cursor: Any, statement: str, *_: Any) -> None:
        if re.match(r"\s*SELECT\b.*\bFROM access_tokens\b", statement, re.IGNORECASE | re.DOTALL):
            if not entered.is_set():
                entered.set()
                release.wait(10)

    with TestClient(app) as http, ThreadPoolExecutor(1) as pool:
        token = http.post("/oauth2/token", data=GRANT, headers=client.basic).json()["access_token"]
        sa.event.listen(app.engine, "before_cursor_execute", slow_read)
        try:
            pending = pool.submit(http.post, "/oauth2/introspect", data={"token": token}, headers=client.basic)
            assert entered.wait(10)  # its read waits for the disk
            started = time.monotonic()
            assert http.get("/jwks").status_code == 200
            waited = time.monotonic() - started
            release.set()
            assert pending.result(10).json()["active"] is True
        finally:
            release.set()
            sa.event.remove(app.engine, "before_cursor_execute", slow_read)
    assert waited < 5, f"/jwks waited {waited:.1f} s for the event loop"


def test_client_endpoint_threads_are_one_on_sqlite_and_the_pool_on_postgresql(engine: Engine) -> None:
    assert client_threads(engine, POOL) == 1  # one writer at a time: more threads would only queue on the file lock
    postgres = make_engine("postgresql+psycopg://nobody@127.0.0.1:1/none", POOL)  # never connected
    try:
        assert client_threads(postgres, POOL) == POOL.capacity
    finally:
        postgres.dispose()


# What the client endpoints answer is what they committed


def test_a_token_whose_client_is_deleted_before_its_row_commits_is_never_returned_nor_logged(
    app: Any, engine: Engine, acme: Organization, caplog: pytest.LogCaptureFixture
) -> None:
    """Tokens asked for at once (queued behind a held commit, then answered together): the client of one is
    deleted on another node while its token's row waits. Its request is refused (401 invalid_client), its token
    is neither returned, nor recorded, nor logged as issued; the others are all three."""
    staying, leaving = reporter(engine, acme), reporter(engine, acme, "Leaving")

    released, written_for_leaving = threading.Event(), []

    def delete_leaving_first(connection: Connection, cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        """At the start of the first write of tokens after the held one (SQLite: the PRAGMA that opens it, before
        any lock; PostgreSQL: its first statement): the exchanges have run, their rows are not written yet."""
        opening = statement.upper().startswith(("PRAGMA SYNCHRONOUS=NORMAL", "SET LOCAL SYNCHRONOUS_COMMIT"))
        if opening and released.is_set() and ClientStore(engine).get(leaving.id) is not None:
            ClientStore(engine).delete(leaving.id)  # another node, another connection
        if statement.upper().startswith("INSERT INTO ACCESS_TOKENS") and leaving.id in str(parameters):
            written_for_leaving.append(statement)

    caplog.set_level(logging.INFO, logger="regional_menus.audit")
    with TestClient(app) as http, ThreadPoolExecutor(4) as pool, first_commit_held(app.engine) as (entered, release):
        sa.event.listen(app.engine, "before_cursor_execute", delete_leaving_first)
        try:
            first = pool.submit(http.post, "/oauth2/token", data=GRANT, headers=staying.basic)
            assert entered.wait(10)
            queued = [
                pool.submit(http.post, "/oauth2/token", data=GRANT, headers=client.basic)
                for client in (staying, leaving, staying)
            ]
            time.sleep(0.5)  # real time for the three requests to reach the queue: nothing here has a clock to move
            released.set()
            release.set()
            answers = [future.result(10) for future in [first, *queued]]
        finally:
            sa.event.remove(app.engine, "before_cursor_execute", delete_leaving_first)
        assert [answer.status_code for answer in answers] == [200, 200, 401, 200]
        assert answers[2].json()["error"] == "invalid_client" and "access_token" not in answers[2].json()
        handed_out = [answer.json()["access_token"] for answer in answers if answer.status_code == 200]
        assert all(token_flows.introspect(http, staying, token)["active"] for token in handed_out)
    assert written_for_leaving  # its token was minted before the client left: refused at the write, not before
    assert recorded(engine) == 3
    assert issued_to(caplog) == [staying.id] * 3  # a line for each record that committed, none for the refused


def test_a_token_request_commits_one_transaction_and_an_introspection_none(
    app: Any, engine: Engine, acme: Organization
) -> None:
    """Counted with SQLAlchemy's events on the app's engine: a client_credentials exchange writes its token in
    one transaction; an introspection or a refused request writes nothing."""
    client = reporter(engine, acme)
    with TestClient(app) as http:
        http.post("/oauth2/token", data=GRANT, headers=client.basic)  # the app's first reads and writes are done
        with writing_transactions(app.engine) as written:
            token = http.post("/oauth2/token", data=GRANT, headers=client.basic).json()["access_token"]
        assert written == [["INSERT INTO access_tokens"]]
        with writing_transactions(app.engine) as written:
            assert token_flows.introspect(http, client, token)["active"] is True
            refused = http.post("/oauth2/token", data={**GRANT, "scope": "openid"}, headers=client.basic)
        assert refused.status_code == 400
        assert written == []
