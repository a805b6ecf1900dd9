"""Request logs and request ids (issue 7): one JSON line per request, ``X-Request-ID`` kept or made, and
never a secret in any log, in process or as ``regional-menus serve`` writes them."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.users import User
from service.ops.logs import JsonFormatter
from service.ops.observe import request_id
from tests.support.identity_fixtures import PASSWORD, Registered
from tests.support.identity_pages import (
    VERIFIER,
    authorize,
    basic,
    bearer,
    post_form,
    refresh,
    sign_in,
    signed_in_code,
    to_page,
    tokens,
)

REQUEST_FIELDS = {"ts", "level", "logger", "event", "method", "route", "path", "status", "duration_ms", "request_id"}


class JsonLines:
    """Every record the service logs (the tests' own HTTP client's aside), formatted as ``serve`` formats it."""

    def __init__(self) -> None:
        self.stream = io.StringIO()

    def all(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stream.getvalue().splitlines()]

    def requests(self) -> list[dict[str, Any]]:
        return [line for line in self.all() if line["logger"] == "regional_menus.access"]


@pytest.fixture
def logged() -> Iterator[JsonLines]:
    lines = JsonLines()
    handler = logging.StreamHandler(lines.stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(lambda record: not record.name.startswith("httpx"))  # the tests' HTTP client, not the service
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield lines
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def test_each_request_writes_one_json_line_with_its_route_status_duration_and_id(
    client: TestClient, logged: JsonLines
) -> None:
    response = client.get("/v1/menus/dishes", params={"course": "main", "limit": "2"})
    (line,) = logged.requests()
    assert REQUEST_FIELDS <= set(line)
    assert (line["level"], line["event"], line["method"]) == ("info", "request", "GET")
    assert (line["route"], line["path"], line["status"]) == ("/v1/menus/dishes", "/v1/menus/dishes", 200)
    assert line["request_id"] == response.headers["x-request-id"]
    assert isinstance(line["duration_ms"], float) and line["duration_ms"] > 0
    assert line["remote"] == "testclient"


@pytest.mark.parametrize(
    "created",
    [0.0, 0.9999996, 1_764_140_400.0, 1_764_140_400.0009, 1_764_140_400.5, 1_764_140_400.999, 1_764_140_401.001],
)
def test_a_line_s_time_is_utc_iso_8601_to_the_millisecond_whichever_second_came_before(created: float) -> None:
    formatter = JsonFormatter()
    formatter.timestamp(created - 1.5)  # the text of another second is kept from the line before
    expected = datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    assert formatter.timestamp(created) == expected


def test_the_request_line_never_holds_the_query_string(anonymous: TestClient, logged: JsonLines) -> None:
    anonymous.get("/healthz", params={"code": "a-secret-code"})
    (line,) = logged.requests()
    assert line["path"] == "/healthz" and "a-secret-code" not in json.dumps(logged.all())


def test_a_sane_request_id_is_kept_and_returned(anonymous: TestClient, logged: JsonLines) -> None:
    response = anonymous.get("/healthz", headers={"X-Request-ID": "lb-4f2a:9c1e/77"})
    assert response.headers["x-request-id"] == "lb-4f2a:9c1e/77"
    assert logged.requests()[0]["request_id"] == "lb-4f2a:9c1e/77"


def test_a_request_id_is_made_when_none_is_sent(anonymous: TestClient) -> None:
    first, second = anonymous.get("/healthz"), anonymous.get("/healthz")
    assert len(first.headers["x-request-id"]) == 32 and first.headers["x-request-id"] != second.headers["x-request-id"]


INSANE_REQUEST_IDS = {
    "too long": b"x" * 129,
    "empty": b"",
    "space": b"two words",
    "line break": b'forged\n{"level":"info","event":"sign_in"}',
    "carriage return": b"forged\r\nSet-Cookie: a=b",
    "tab": b"tab\there",
    "non-ASCII": "caf\u00e9".encode(),
}


@pytest.mark.parametrize("sent", list(INSANE_REQUEST_IDS.values()), ids=list(INSANE_REQUEST_IDS))
def test_an_insane_request_id_is_replaced_with_a_new_one(sent: bytes) -> None:
    made = request_id({"headers": [(b"x-request-id", sent)]})
    assert made.encode() != sent and len(made) == 32 and made.isalnum()


def test_a_replaced_request_id_is_the_one_returned_and_logged(anonymous: TestClient, logged: JsonLines) -> None:
    response = anonymous.get("/healthz", headers={"X-Request-ID": "x" * 129})
    returned = response.headers["x-request-id"]
    assert len(returned) == 32 and logged.requests()[0]["request_id"] == returned


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/v1/menus/regions", 401),  # the menus API's gate
        ("/oauth2/userinfo", 401),  # the identity API
        ("/readyz?x=1", 400),  # the operations endpoints
        ("/v1/%0A", 404),  # the dispatcher itself
    ],
)
def test_every_answer_carries_the_request_id_errors_included(anonymous: TestClient, path: str, status: int) -> None:
    response = anonymous.get(path, headers={"X-Request-ID": "trace-1"})
    assert response.status_code == status
    assert response.headers.get_list("x-request-id") == ["trace-1"]


def test_audit_lines_carry_the_request_id_of_their_request(
    browser: TestClient, web: Registered, user: User, logged: JsonLines
) -> None:
    location = to_page(authorize(browser, web.id), "sign-in")
    response = sign_in(browser, location, password="wrong password")
    (audit_line,) = [line for line in logged.all() if line["logger"] == "regional_menus.audit"]
    assert audit_line["request_id"] == response.headers["x-request-id"]
    assert audit_line["remote"] == "testclient"


def test_no_password_secret_key_token_or_code_reaches_any_log_in_process(
    browser: TestClient,
    web: Registered,
    user: User,
    api_key: str,
    logged: JsonLines,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    location = to_page(authorize(browser, web.id, scope="openid profile email offline_access"), "sign-in")
    sign_in(browser, location, password=PASSWORD + " typo")
    code = signed_in_code(browser, web.id, scope="openid profile email offline_access")
    issued = tokens(browser, web, code)
    post_form(browser, "/oauth2/token", [("grant_type", "authorization_code"), ("code", code)], basic(web))
    renewed = refresh(browser, web, issued["refresh_token"]).json()
    refresh(browser, web, issued["refresh_token"])  # reuse
    browser.get("/oauth2/userinfo", headers=bearer(renewed["access_token"]))
    post_form(browser, "/oauth2/introspect", [("token", renewed["access_token"])], basic(web))
    post_form(browser, "/oauth2/revoke", [("token", renewed["refresh_token"])], basic(web))
    browser.get("/oauth2/end-session", params={"id_token_hint": issued["id_token"]})
    browser.get("/v1/menus/regions", headers=bearer(api_key))
    secrets = {
        "password": PASSWORD,
        "client secret": web.secret,
        "API key": api_key,
        "authorization code": code,
        "PKCE verifier": VERIFIER,
        **{name: issued[name] for name in ("access_token", "refresh_token", "id_token")},
        **{f"renewed {name}": renewed[name] for name in ("access_token", "refresh_token", "id_token")},
    }
    out, err = capfd.readouterr()
    records = "\n".join(f"{r.getMessage()} {r.__dict__!r}" for r in caplog.records if r.name != "httpx")
    for where, text in {"JSON lines": logged.stream.getvalue(), "records": records, "output": out + err}.items():
        leaked = [name for name, secret in secrets.items() if secret in text]
        assert not leaked, f"{leaked} in the {where}"
    assert len(logged.requests()) >= 10


def test_a_database_error_never_shows_the_statement_s_values(engine: Engine) -> None:
    with pytest.raises(sa.exc.DBAPIError) as raised, engine.begin() as connection:
        connection.execute(sa.text("INSERT INTO no_such_table VALUES (:secret)"), {"secret": "a-csrf-token-value"})
    assert "a-csrf-token-value" not in str(raised.value) and "parameters hidden" in str(raised.value)
