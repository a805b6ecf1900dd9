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

from identity.introspection import TokenIntrospection
from identity.organizations import Organization
from identity.revocation import TokenRevocation
from identity.token_endpoint import TokenEndpoint
from service.database.db import client_threads, make_engine
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
