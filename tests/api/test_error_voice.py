"""One error voice: every API words each parameter error alike, all of them at once, as the rule the value breaks
(the value itself is never repeated: docs/security.md)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from starlette.testclient import TestClient

from data.yaml_text import safe_load
from service.web.contracts import spec_path
from service.web.validation import PATTERN_WORDS
from tests.support.loops import each

FORM = "application/x-www-form-urlencoded"
DIETS = "vegan, vegetarian, eggetarian, pescatarian, non_vegetarian"


def problem(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = response.json()
    assert body["status"] == status and body["type"].endswith(body["code"]) and "\n" not in body["detail"]
    return body


def reasons(body: dict[str, Any]) -> dict[str, str]:
    assert body["code"] == "invalid_parameter"
    return {param["name"]: param["reason"] for param in body["invalid_params"]}


def test_every_parameter_error_of_a_request_is_reported_at_once(client: TestClient) -> None:
    body = problem(client.get("/v1/menus/dishes?limit=abc&max_spice=9&diet=carnivore"), 400)
    assert reasons(body) == {
        "limit": "must be an integer from 1 to 100",
        "max_spice": "must be an integer from 0 to 5",
        "diet": f"must be one of: {DIETS}",
    }
    assert body["detail"].startswith("3 parameters are invalid: limit must be an integer from 1 to 100; ")


def test_an_enum_refusal_names_the_allowed_values(client: TestClient) -> None:
    body = problem(client.get("/v1/menus/dishes", params={"course": "lunch"}), 400)
    assert reasons(body) == {
        "course": "must be one of: breakfast, starter, main, side, bread, rice, snack, dessert, beverage"
    }


@pytest.mark.parametrize("path", ["/v1/menus/dishes/Creme%20Brulee", "/v1/menus/dishes?region=Not_A_Slug"])
def test_a_pattern_refusal_says_in_words_what_a_slug_is(client: TestClient, path: str) -> None:
    (reason,) = reasons(problem(client.get(path), 400)).values()
    assert "must be a slug: lower-case letters a-z and digits, in words joined by single hyphens" in reason
    assert "^" not in reason and "[" not in reason


def test_an_unknown_parameter_is_refused_with_the_ones_the_operation_takes(client: TestClient) -> None:
    body = problem(client.get("/v1/menus/regions", params={"colour": "red"}), 400)
    assert reasons(body) == {"colour": "is not a parameter of this operation; it takes country"}


def test_a_value_too_long_is_refused_with_its_bounds_and_never_quoted(client: TestClient) -> None:
    body = problem(client.get("/v1/menus/dishes", params={"q": "x" * 101}), 400)
    assert reasons(body) == {"q": "must be 1 to 100 characters long"}
    assert body["detail"] == "q must be 1 to 100 characters long"


@pytest.mark.parametrize("path", ["/healthz?x=1", "/readyz?verbose=true", "/metrics?format=json&x=2"])
def test_the_operations_api_answers_parameter_errors_in_the_menus_problem_shape(
    anonymous: TestClient, path: str
) -> None:
    body = problem(anonymous.get(path), 400)
    names = [name.split("=")[0] for name in path.split("?")[1].split("&")]
    assert reasons(body) == {name: "is not a parameter of this operation, which takes none" for name in names}
    assert body["title"] == "Invalid parameter"


def test_a_scheme_other_than_bearer_is_unauthorized_without_invalid_token(anonymous: TestClient) -> None:
    """RFC 6750 §3.1: a request with an unsupported scheme carries no token, so the challenge has no error code."""
    response = anonymous.get("/v1/menus/regions", headers={"Authorization": "Basic dXNlcjpwYXNz"})
    body = problem(response, 401)
    assert body["code"] == "unauthorized" and "Bearer scheme only" in body["detail"]
    assert "basic" not in body["detail"].lower()  # the scheme the client sent is not repeated
    assert response.headers["www-authenticate"] == 'Bearer realm="menus"'


def every_pattern(node: object) -> set[str]:
    if isinstance(node, dict):
        found = {node["pattern"]} if isinstance(node.get("pattern"), str) else set()
        return found.union(*(every_pattern(value) for value in node.values()))
    if isinstance(node, list):
        return set().union(*(every_pattern(value) for value in node))
    return set()


def every_form_schema(item: dict[str, Any]) -> list[Any]:
    bodies = [op.get("requestBody", {}) for op in item.values() if isinstance(op, dict)]
    return [media for body in bodies for media in body.get("content", {}).values()]


def test_every_pattern_a_parameter_of_any_document_can_refuse_has_words() -> None:
    found = []  # (document, pattern): some documents have none (operations.yaml), all of them together do
    for name in ("menus.yaml", "operations.yaml", "identity.yaml", "console.yaml", "management.yaml"):
        document = safe_load(spec_path(name).read_text(encoding="utf-8"))
        parameters = [document["components"].get("parameters", {}), document["components"].get("schemas", {})]
        parameters += [item.get("parameters", []) for item in document["paths"].values()]
        parameters += [op.get("parameters", []) for item in document["paths"].values() for op in item.values()
                       if isinstance(op, dict)]  # fmt: skip
        parameters += [every_form_schema(item) for item in document["paths"].values()]
        found += [(name, pattern) for pattern in every_pattern(parameters)]
    for name, pattern in each(found):
        if pattern != '^"[0-9a-f]{32}"$':  # the ETag pattern: a response header, never refused
            assert pattern in PATTERN_WORDS, f"{name}: no words for {pattern}"
            assert not re.search(r"[\^\[\]$]", PATTERN_WORDS[pattern])


# The identity API and the console: the same rules and words, in each operation's error form (x-error-form).


@pytest.mark.parametrize("limit", ["abc", "0", "101", "1.5"])
def test_a_directory_limit_error_names_the_parameter_and_its_range(anonymous: TestClient, limit: str) -> None:
    response = anonymous.get("/directory/members", params={"limit": limit})
    assert response.status_code == 400
    assert response.json() == {
        "error": "invalid_request",
        "error_description": "limit must be an integer from 1 to 100",
    }


@pytest.mark.parametrize("body", [b"", b"scope=openid"])
def test_a_token_request_without_grant_type_says_grant_type_is_required(anonymous: TestClient, body: bytes) -> None:
    response = anonymous.post(
        "/oauth2/token", content=body, headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert response.status_code == 400
    assert response.json() == {"error": "invalid_request", "error_description": "grant_type is required"}
    assert response.headers["pragma"] == "no-cache"


def test_an_introspection_request_without_a_token_says_token_is_required(anonymous: TestClient) -> None:
    response = anonymous.post("/oauth2/introspect", content=b"", headers={"Content-Type": FORM})
    assert response.status_code == 400
    assert response.json() == {"error": "invalid_request", "error_description": "token is required"}


def test_a_page_parameter_error_is_a_page_naming_the_parameter(anonymous: TestClient) -> None:
    response = anonymous.get("/sign-in")
    assert response.status_code == 400 and response.headers["content-type"].startswith("text/html")
    assert "interaction is required" in response.text


def test_a_console_path_error_says_what_a_key_id_is(anonymous: TestClient) -> None:
    response = anonymous.get("/console/keys/not-a-key/revoke")
    assert response.status_code == 400 and response.headers["content-type"].startswith("text/html")
    assert "key_id must be an API key id: key_ and 16 hexadecimal digits" in response.text
    assert "malformed" not in response.text and "not-a-key" not in response.text


def test_a_console_unknown_parameter_is_named_with_the_ones_the_page_takes(anonymous: TestClient) -> None:
    response = anonymous.get("/console/sign-in", params={"colour": "red"})
    assert response.status_code == 400
    assert "colour is not a parameter of this operation; it takes prompt" in response.text


def test_a_console_form_of_another_media_type_says_the_page_takes_a_form(anonymous: TestClient) -> None:
    response = anonymous.post("/console/sign-out", json={"csrf_token": "x"})
    assert response.status_code == 415
    assert "This page takes a form (application/x-www-form-urlencoded)." in response.text
