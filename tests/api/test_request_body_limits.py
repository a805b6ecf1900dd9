"""Request bodies are capped while read: over 64 KiB is a 413 in each endpoint's own error form, and 50 MB
is refused without ever being held in memory."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.organizations import Organization
from tests.support import token_flows

# Request bodies: capped while read, 413 in each endpoint's own form


BIG_FORM = b"grant_type=client_credentials&pad=" + b"a" * (64 * 1024)


def chunks_of(body: bytes, size: int = 8192) -> Iterator[bytes]:
    for start in range(0, len(body), size):
        yield body[start : start + size]


@pytest.mark.parametrize("path", ["/oauth2/token", "/oauth2/introspect", "/oauth2/revoke"])
def test_form_over_64_kib_at_a_client_endpoint_is_413_oauth_json(http: TestClient, path: str) -> None:
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    for response in (
        http.post(path, content=BIG_FORM, headers=form),  # Content-Length over the cap: refused at once
        http.post(path, content=chunks_of(BIG_FORM), headers=form),  # chunked: cut once the cap is crossed
    ):
        assert response.status_code == 413, response.text
        assert response.json()["error"] == "invalid_request"
        assert response.headers["cache-control"] == "no-store"
        assert response.headers["connection"] == "close"


@pytest.mark.parametrize("path", ["/sign-in", "/sign-up", "/consent", "/oauth2/authorize", "/oauth2/end-session"])
def test_form_over_64_kib_at_a_page_is_a_413_error_page(http: TestClient, path: str) -> None:
    response = http.post(path, content=BIG_FORM, headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert response.status_code == 413
    assert response.headers["content-type"].startswith("text/html")
    assert "Request too large" in response.text
    assert response.headers["x-frame-options"] == "DENY"


def test_form_within_64_kib_sent_chunked_is_read_as_usual(http: TestClient, engine: Engine, acme: Organization) -> None:
    reporter = token_flows.register(engine, acme, "Reporter", grants=["client_credentials"], scopes=["members:read"])
    body = b"grant_type=client_credentials&pad=" + b"a" * 30000
    response = http.post(
        "/oauth2/token",
        content=chunks_of(body),
        headers={**reporter.basic, "Content-Type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 200, response.text


def test_a_console_form_over_its_cap_is_a_413_page_chunked_or_not(http: TestClient) -> None:
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    for content in (BIG_FORM, chunks_of(BIG_FORM)):
        response = http.post("/console/keys", content=content, headers=form)
        assert response.status_code == 413, response.text
        assert response.headers["content-type"].startswith("text/html")
        assert "Request too large" in response.text
        assert response.headers["connection"] == "close"


@pytest.mark.parametrize("path", ["/v1/menus/regions", "/healthz"])
def test_a_body_sent_to_the_menus_or_operations_api_is_a_413_problem(http: TestClient, path: str) -> None:
    for content in (b"x" * 10, chunks_of(b"x" * 10)):
        response = http.request("GET", path, content=content)
        assert response.status_code == 413, response.text
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json()["code"] == "content_too_large"
