"""Every parameter has a length bound in the contract, and it holds; an over-long value is never echoed."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.support.token_flows import Registered, assert_oauth_error

# Every parameter has a length bound in the contract, and it holds


def test_one_megabyte_state_at_end_session_is_refused_without_a_redirect(http: TestClient) -> None:
    posted = http.post("/oauth2/end-session", data={"state": "s" * 1024 * 1024})  # over the 64 KiB body cap
    got = http.get("/oauth2/end-session", params={"state": "s" * 60_000})  # httpx sends at most 64 KiB of URL
    assert (posted.status_code, got.status_code) == (413, 400)
    for response in (got, posted):
        assert "location" not in response.headers
        assert response.headers["content-type"].startswith("text/html")
        assert len(response.content) < 16 * 1024 and "sss" not in response.text


def test_state_over_2048_characters_at_end_session_is_a_400_page_that_does_not_echo_it(
    http: TestClient, planner: Registered
) -> None:
    for response in (
        http.get("/oauth2/end-session", params={"client_id": planner.id, "state": "s" * 2049}),
        http.post("/oauth2/end-session", data={"client_id": planner.id, "state": "s" * 2049}),
    ):
        assert response.status_code == 400, response.text
        assert "location" not in response.headers and "sss" not in response.text


def test_over_long_client_secret_is_invalid_request_and_never_echoed_or_logged(
    http: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "cs_" + "x" * 3000
    response = http.post(
        "/oauth2/token",
        data={"grant_type": "client_credentials", "client_id": "cli_x", "client_secret": secret},
    )
    assert_oauth_error(response, "invalid_request")
    assert response.json()["error_description"] == "client_secret must be at most 2048 characters long"
    assert "xxxxxxxx" not in caplog.text


def test_every_string_parameter_of_the_identity_contract_has_a_length_bound() -> None:
    from data.yaml_text import safe_load

    document = safe_load((Path(__file__).parents[2] / "openapi" / "identity.yaml").read_text())

    def resolved(node: Any) -> Any:
        while isinstance(node, dict) and "$ref" in node:
            target: Any = document
            for part in node["$ref"].split("/")[1:]:
                target = target[part]
            node = target
        return node

    unbounded = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            fields: list[tuple[str, Any]] = []
            for parameter in map(resolved, operation.get("parameters", [])):
                fields.append((parameter["name"], resolved(parameter["schema"])))
            for media in operation.get("requestBody", {}).get("content", {}).values():
                for name, schema in resolved(media["schema"])["properties"].items():
                    fields.append((name, resolved(schema)))
            for name, schema in fields:
                stated = re.search(r"[0-9,]+ characters", " ".join(schema.get("description", "").split()))
                bounded = "maxLength" in schema or "enum" in schema or stated is not None  # handler-checked
                if schema.get("type") == "string" and not bounded:
                    unbounded.append(f"{method.upper()} {path} {name}")
    assert unbounded == []
