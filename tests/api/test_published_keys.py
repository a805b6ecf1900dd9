"""Discovery and the JWKS are answered from memory, as bytes prepared once; a key rotated on another node is
published here within the background refresh interval, a quarter of the publish delay at most (docs/nodes.md).

OpenID Connect Discovery 1.0 §4 and RFC 7517 §5: both documents are plain GETs any relying party may repeat
at will; they cost no database read on the request path."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import event
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from data.catalog import Catalog
from service.cli.commands import main
from service.settings import Settings
from tests.support.apps import make_app


@pytest.fixture
def statements() -> Iterator[list[str]]:
    """Every statement any engine runs while the test runs, on any thread but the background rounds' (the purge and
    the mail worker start with the app, on the background worker threads: service/web/offload.py); requests run
    theirs on the event loop or on the other worker threads."""
    seen: list[str] = []

    def spy(_connection: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if not threading.current_thread().name.startswith("background-worker"):
            seen.append(" ".join(statement.split())[:80])

    event.listen(Engine, "before_cursor_execute", spy)
    yield seen
    event.remove(Engine, "before_cursor_execute", spy)


def kids(http: TestClient) -> set[str]:
    response = http.get("/jwks")
    assert response.status_code == 200
    return {key["kid"] for key in response.json()["keys"]}


def rotate_on_another_node(database_url: str) -> str:
    """``regional-menus keys rotate`` in this process: another node's view of the same database."""
    result = CliRunner().invoke(main, ["keys", "rotate", "--json", "--database-url", database_url])
    assert result.exit_code == 0, result.output
    return str(json.loads(result.stdout)["kid"])


def test_jwks_and_discovery_answers_issue_no_sql(statements: list[str], http: TestClient) -> None:
    http.get("/jwks")  # anything a first request may read
    statements.clear()
    for _ in range(3):
        jwks = http.get("/jwks")
        discovery = http.get("/.well-known/openid-configuration")
        assert jwks.status_code == discovery.status_code == 200
        assert jwks.headers["cache-control"] == discovery.headers["cache-control"] == "public, max-age=300"
        assert jwks.headers["content-type"] == discovery.headers["content-type"] == "application/json"
    assert statements == []


def test_a_key_rotated_on_another_node_is_published_here_within_the_refresh_interval(
    settings: Settings, engine: Engine, catalog: Catalog
) -> None:
    node = replace(settings, published_keys_refresh=0.25)  # a 120-second publish delay: the setting holds
    assert node.published_keys_interval() == 0.25
    with TestClient(make_app(node, catalog=catalog)) as http:  # its lifespan runs the background read
        before = kids(http)
        rotated = rotate_on_another_node(settings.database_url)
        assert rotated not in before
        deadline = time.monotonic() + node.published_keys_interval() + 1.0  # a read, in a thread, may take a while
        while rotated not in kids(http):
            assert time.monotonic() < deadline, "the rotated key is published within the refresh interval"
            time.sleep(0.05)
        assert before <= kids(http)  # the key that signs now stays published


@pytest.mark.parametrize("path", ["/jwks", "/.well-known/openid-configuration"])
def test_discovery_and_jwks_answer_head_as_get_and_leave_other_methods_to_the_api(http: TestClient, path: str) -> None:
    got, head = http.get(path), http.head(path)
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-length"] == got.headers["content-length"] == str(len(got.content))
    assert got.headers["vary"] == head.headers["vary"] == "Origin"  # CORS answers these paths
    refused = http.post(path)
    assert refused.status_code == 405 and refused.headers["allow"] == "GET, HEAD"
    assert refused.headers["content-type"] == "application/problem+json"
