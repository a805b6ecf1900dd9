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


class HeldThread:
    """The first call of ``domain.method`` holds the one client thread (SQLite) until ``release``: the calls
    made meanwhile queue behind it, and the thread then runs them in a row."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, domain: Any, method: str) -> None:
        self.entered, self._released = threading.Event(), threading.Event()
        self._queues: set[ClientThreads] = set()
        original, original_run = getattr(domain, method), ClientThreads.run

        def held(this: Any, *args: Any) -> Any:
            if not self.entered.is_set():
                self.entered.set()
                self._released.wait(10)
            return original(this, *args)

        async def run(this: ClientThreads, call: Any, *args: Any, **named: Any) -> Any:
            self._queues.add(this)
            return await original_run(this, call, *args, **named)

        monkeypatch.setattr(domain, method, held)
        monkeypatch.setattr(ClientThreads, "run", run)

    def wait_queued(self, count: int) -> None:
        """Until ``count`` calls wait in the queue behind the held one."""
        deadline = time.monotonic() + 10
        while sum(len(queue._jobs) for queue in self._queues) < count and time.monotonic() < deadline:
            time.sleep(0.005)

    def release(self) -> None:
        self._released.set()


def test_introspections_queued_together_read_their_records_in_one_statement_and_see_a_revocation(
    app: Any, engine: Engine, acme: Organization, monkeypatch: pytest.MonkeyPatch
) -> None:
    reporter = token_flows.register(engine, acme, "Reporter", grants=["client_credentials"], scopes=["members:read"])
    read: list[list[str]] = []
    original_read = TokenVerifier.read_together

    def reading(self: Any, tokens: Any) -> Any:
        read.append(sorted(tokens))
        return original_read(self, tokens)

    held = HeldThread(monkeypatch, TokenIntrospection, "introspect")
    monkeypatch.setattr(TokenVerifier, "read_together", reading)
    with TestClient(app) as http, ThreadPoolExecutor(4) as pool:
        grant = {"grant_type": "client_credentials", "scope": "members:read"}
        live, revoked = (
            http.post("/oauth2/token", data=grant, headers=reporter.basic).json()["access_token"] for _ in "ab"
        )
        assert http.post("/oauth2/revoke", data={"token": revoked}, headers=reporter.basic).status_code == 200
        try:
            first = pool.submit(http.post, "/oauth2/introspect", data={"token": live}, headers=reporter.basic)
            assert held.entered.wait(10)
            queued = [
                pool.submit(http.post, "/oauth2/introspect", data={"token": token}, headers=reporter.basic)
                for token in (live, revoked, "not-a-token")
            ]
            held.wait_queued(3)
        finally:
            held.release()
        answers = [future.result(10).json() for future in [first, *queued]]
    assert [answer["active"] for answer in answers] == [True, True, False, False]
    assert read == [sorted([live, revoked, "not-a-token"])]  # one read for the three queued together


def test_client_credentials_tokens_queued_together_are_recorded_in_one_transaction_and_a_deleted_clients_refused(
    app: Any, engine: Engine, acme: Organization, monkeypatch: pytest.MonkeyPatch
) -> None:
    reporter = token_flows.register(engine, acme, "Reporter", grants=["client_credentials"], scopes=["members:read"])
    leaving = token_flows.register(engine, acme, "Leaving", grants=["client_credentials"], scopes=["members:read"])
    written: list[int] = []
    original_write = AccessTokenStore.write_now

    def writing(self: Any) -> Any:
        written.append(len(self._later.rows or ()))
        if len(written) == 2:  # the queued exchanges have run, their rows not yet written: the client leaves
            ClientStore(engine).delete(leaving.id)
        return original_write(self)

    held = HeldThread(monkeypatch, TokenEndpoint, "exchange")
    monkeypatch.setattr(AccessTokenStore, "write_now", writing)
    grant = {"grant_type": "client_credentials", "scope": "members:read"}
    with TestClient(app) as http, ThreadPoolExecutor(4) as pool:
        try:
            first = pool.submit(http.post, "/oauth2/token", data=grant, headers=reporter.basic)
            assert held.entered.wait(10)
            queued = [
                pool.submit(http.post, "/oauth2/token", data=grant, headers=client.basic)
                for client in (reporter, leaving, reporter)
            ]
            held.wait_queued(3)
        finally:
            held.release()
        answers = [future.result(10) for future in [first, *queued]]
        assert [answer.status_code for answer in answers] == [200, 200, 401, 200]  # Basic: 401
        assert answers[2].json()["error"] == "invalid_client"
        for answer in (answers[0], answers[1], answers[3]):
            token = answer.json()["access_token"]
            introspected = http.post("/oauth2/introspect", data={"token": token}, headers=reporter.basic).json()
            assert introspected["active"] is True
    assert written == [1, 3]  # the held exchange alone, then the three queued behind it in one transaction
