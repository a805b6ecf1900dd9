"""The client endpoints' SQL and RSA run off the event loop, on one thread for SQLite and the pool's size
for PostgreSQL."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.access_tokens import AccessTokenStore
from identity.clients import ClientStore
from identity.introspection import TokenIntrospection
from identity.organizations import Organization
from identity.revocation import TokenRevocation
from identity.token_endpoint import TokenEndpoint
from identity.verification import TokenVerifier
from service.database.db import client_threads, make_engine
from service.identity_api.client_threads import ClientThreads
from tests.support import token_flows
from tests.support.defaults import POOL

# The client endpoints' SQL and RSA run off the event loop


@pytest.mark.parametrize(
    ("domain", "method", "path"),
    [
        (TokenEndpoint, "exchange", "/oauth2/token"),
        (TokenIntrospection, "introspect", "/oauth2/introspect"),
        (TokenRevocation, "revoke", "/oauth2/revoke"),
    ],
)
def test_client_endpoint_work_runs_in_a_thread_while_the_loop_answers_others(
    app: Any, engine: Engine, acme: Organization, monkeypatch: pytest.MonkeyPatch, domain: Any, method: str, path: str
) -> None:
    reporter = token_flows.register(engine, acme, "Reporter", grants=["client_credentials"], scopes=["members:read"])
    entered, release = threading.Event(), threading.Event()
    original = getattr(domain, method)

    def held(self: Any, *args: Any) -> Any:  # a commit that waits for a slow disk
        entered.set()
        release.wait(10)
        return original(self, *args)

    monkeypatch.setattr(domain, method, held)
    form = {"grant_type": "client_credentials", "token": "t"}
    with TestClient(app) as http, ThreadPoolExecutor(1) as pool:
        try:
            pending = pool.submit(http.post, path, data=form, headers=reporter.basic)
            assert entered.wait(10)
            started = time.monotonic()
            assert http.get("/jwks").status_code == 200  # answered while the other request's work waits
            waited = time.monotonic() - started
        finally:
            release.set()
        assert pending.result(10).status_code == 200
    assert waited < 5, f"/jwks waited {waited:.1f} s for the event loop"


def test_client_endpoint_threads_are_one_on_sqlite_and_the_pool_on_postgresql(engine: Engine) -> None:
    assert client_threads(engine, POOL) == 1  # one writer at a time: more threads would only queue on the file lock
    postgres = make_engine("postgresql+psycopg://nobody@127.0.0.1:1/none", POOL)  # never connected
    try:
        assert client_threads(postgres, POOL) == POOL.capacity
    finally:
        postgres.dispose()


def test_introspections_queued_together_read_their_records_in_one_statement_and_see_a_revocation(
    app: Any, engine: Engine, acme: Organization, monkeypatch: pytest.MonkeyPatch
) -> None:
    reporter = token_flows.register(engine, acme, "Reporter", grants=["client_credentials"], scopes=["members:read"])
    entered, release, read = threading.Event(), threading.Event(), []
    original_introspect, original_read = TokenIntrospection.introspect, TokenVerifier.read_together
    queues: set[Any] = set()

    def held(self: Any, *args: Any) -> Any:  # the first introspection holds the one thread (SQLite)
        if not entered.is_set():
            entered.set()
            release.wait(10)
        return original_introspect(self, *args)

    def reading(self: Any, tokens: Any) -> Any:
        read.append(sorted(tokens))
        return original_read(self, tokens)

    async def run(self: Any, call: Any, *args: Any, **named: Any) -> Any:
        queues.add(self)
        return await original_run(self, call, *args, **named)

    original_run = ClientThreads.run
    monkeypatch.setattr(TokenIntrospection, "introspect", held)
    monkeypatch.setattr(TokenVerifier, "read_together", reading)
    monkeypatch.setattr(ClientThreads, "run", run)
    with TestClient(app) as http, ThreadPoolExecutor(4) as pool:
        grant = {"grant_type": "client_credentials", "scope": "members:read"}
        live, revoked = (
            http.post("/oauth2/token", data=grant, headers=reporter.basic).json()["access_token"] for _ in "ab"
        )
        assert http.post("/oauth2/revoke", data={"token": revoked}, headers=reporter.basic).status_code == 200
        try:
            first = pool.submit(http.post, "/oauth2/introspect", data={"token": live}, headers=reporter.basic)
            assert entered.wait(10)
            queued = [
                pool.submit(http.post, "/oauth2/introspect", data={"token": token}, headers=reporter.basic)
                for token in (live, revoked, "not-a-token")
            ]
            deadline = time.monotonic() + 10  # until the three wait in the queue behind the held call
            while sum(len(queue._jobs) for queue in queues) < 3 and time.monotonic() < deadline:
                time.sleep(0.005)
        finally:
            release.set()
        answers = [future.result(10).json() for future in [first, *queued]]
    assert [answer["active"] for answer in answers] == [True, True, False, False]
    assert read == [sorted([live, revoked, "not-a-token"])]  # one read for the three queued together


def test_client_credentials_tokens_queued_together_are_recorded_in_one_transaction_and_a_deleted_clients_refused(
    app: Any, engine: Engine, acme: Organization, monkeypatch: pytest.MonkeyPatch
) -> None:
    reporter = token_flows.register(engine, acme, "Reporter", grants=["client_credentials"], scopes=["members:read"])
    leaving = token_flows.register(engine, acme, "Leaving", grants=["client_credentials"], scopes=["members:read"])
    entered, release, written = threading.Event(), threading.Event(), []
    original_exchange, original_write = TokenEndpoint.exchange, AccessTokenStore.write_now
    queues: set[Any] = set()

    def held(self: Any, *args: Any) -> Any:  # the first exchange holds the one thread (SQLite)
        if not entered.is_set():
            entered.set()
            release.wait(10)
        return original_exchange(self, *args)

    def writing(self: Any) -> Any:
        written.append(len(self._later.rows or ()))
        if len(written) == 2:  # the queued exchanges have run, their rows not yet written: the client leaves
            ClientStore(engine).delete(leaving.id)
        return original_write(self)

    async def run(self: Any, call: Any, *args: Any, **named: Any) -> Any:
        queues.add(self)
        return await original_run(self, call, *args, **named)

    original_run = ClientThreads.run
    monkeypatch.setattr(TokenEndpoint, "exchange", held)
    monkeypatch.setattr(AccessTokenStore, "write_now", writing)
    monkeypatch.setattr(ClientThreads, "run", run)
    grant = {"grant_type": "client_credentials", "scope": "members:read"}
    with TestClient(app) as http, ThreadPoolExecutor(4) as pool:
        try:
            first = pool.submit(http.post, "/oauth2/token", data=grant, headers=reporter.basic)
            assert entered.wait(10)
            queued = [
                pool.submit(http.post, "/oauth2/token", data=grant, headers=client.basic)
                for client in (reporter, leaving, reporter)
            ]
            deadline = time.monotonic() + 10  # until the three wait in the queue behind the held call
            while sum(len(queue._jobs) for queue in queues) < 3 and time.monotonic() < deadline:
                time.sleep(0.005)
        finally:
            release.set()
        answers = [future.result(10) for future in [first, *queued]]
        assert [answer.status_code for answer in answers] == [200, 200, 401, 200]
        assert answers[2].json()["error"] == "invalid_client"
        for answer in (answers[0], answers[1], answers[3]):
            token = answer.json()["access_token"]
            introspected = http.post("/oauth2/introspect", data={"token": token}, headers=reporter.basic).json()
            assert introspected["active"] is True
    assert written == [1, 3]  # the held exchange alone, then the three queued behind it in one transaction
