"""One threading policy for every handler that touches the database: its SQL runs in a worker thread, never on
the event loop, where one slow query would hold every request of the worker (identity and console APIs).

A listener on every engine's statements notes each one issued on a thread that runs an event loop."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from tests.support.console_client import ConsoleBrowser
from tests.support.token_flows import World, application_token, introspect, revoke, user_tokens


@pytest.fixture
def sql_on_the_loop() -> Iterator[list[str]]:
    """The statements run on an event loop's thread while the test runs (none, under the policy)."""
    seen: list[str] = []

    def spy(_connection: Any, _cursor: Any, statement: str, *_: Any) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return  # a worker thread (or no loop at all): allowed
        seen.append(" ".join(statement.split())[:80])

    event.listen(Engine, "before_cursor_execute", spy)
    yield seen
    event.remove(Engine, "before_cursor_execute", spy)


def test_no_identity_endpoint_runs_sql_on_the_event_loop(
    sql_on_the_loop: list[str], http: TestClient, world: World
) -> None:
    tokens = user_tokens(http, world.planner)
    bearer = {"Authorization": f"Bearer {tokens['access_token']}"}
    assert http.get("/oauth2/userinfo", headers=bearer).status_code == 200
    assert http.post("/oauth2/userinfo", headers=bearer).status_code == 200
    assert http.get("/jwks").status_code == 200
    assert http.get("/.well-known/openid-configuration").status_code == 200
    assert introspect(http, world.planner, tokens["access_token"])["active"]
    members = application_token(http, world.reporter, scope="members:read").json()["access_token"]
    assert http.get("/directory/members", headers={"Authorization": f"Bearer {members}"}).status_code == 200
    assert revoke(http, world.planner, tokens["access_token"]).status_code == 200
    assert http.get("/oauth2/end-session").status_code == 200
    assert sql_on_the_loop == []


def test_no_console_page_runs_sql_on_the_event_loop(sql_on_the_loop: list[str], app: Any) -> None:
    with ConsoleBrowser(app) as console:
        console.complete(console.sign_up("lee@example.com", organization="Lee's"))
        _, key = console.create_key("threads")
        assert key is not None
        assert console.post("/console/sign-out", {"csrf_token": console.csrf()}).status_code == 303
    assert sql_on_the_loop == []
