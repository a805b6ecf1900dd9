"""One error voice: the menus and operations APIs word every parameter error alike, all of them at once."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml
from starlette.testclient import TestClient

from service.web.documents import spec_path
from service.web.validation import PATTERN_WORDS

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
        "limit": "'abc' is not a whole number",
        "max_spice": "9 is greater than the maximum of 5",
        "diet": f"'carnivore' is not one of: {DIETS}",
    }
    assert body["detail"].startswith("3 parameters are invalid: limit: 'abc' is not a whole number; ")


def test_an_enum_refusal_names_the_allowed_values(client: TestClient) -> None:
    body = problem(client.get("/v1/menus/dishes", params={"course": "lunch"}), 400)
    assert reasons(body) == {
        "course": "'lunch' is not one of: breakfast, starter, main, side, bread, rice, snack, dessert, beverage"
    }


@pytest.mark.parametrize("path", ["/v1/menus/dishes/Creme%20Brulee", "/v1/menus/dishes?region=Not_A_Slug"])
def test_a_pattern_refusal_says_in_words_what_a_slug_is(client: TestClient, path: str) -> None:
    (reason,) = reasons(problem(client.get(path), 400)).values()
    assert "is not a slug: lower-case letters a-z and digits, in words joined by single hyphens" in reason
    assert "^" not in reason and "[" not in reason


def test_an_unknown_parameter_is_refused_with_the_ones_the_operation_takes(client: TestClient) -> None:
    body = problem(client.get("/v1/menus/regions", params={"colour": "red"}), 400)
    assert reasons(body) == {"colour": "not a parameter of this operation; it takes country"}


def test_a_long_value_is_quoted_shortened_in_the_reason(client: TestClient) -> None:
    body = problem(client.get("/v1/menus/dishes", params={"q": "x" * 101}), 400)
    assert reasons(body) == {"q": f"'{'x' * 40}…' is too long: at most 100 characters"}


@pytest.mark.parametrize("path", ["/healthz?x=1", "/readyz?verbose=true", "/metrics?format=json&x=2"])
def test_the_operations_api_answers_parameter_errors_in_the_menus_problem_shape(
    anonymous: TestClient, path: str
) -> None:
    body = problem(anonymous.get(path), 400)
    names = [name.split("=")[0] for name in path.split("?")[1].split("&")]
    assert reasons(body) == {name: "not a parameter of this operation, which takes none" for name in names}
    assert body["title"] == "Invalid parameter"


def test_a_scheme_other_than_bearer_is_unauthorized_without_invalid_token(anonymous: TestClient) -> None:
    """RFC 6750 §3.1: a request with an unsupported scheme carries no token, so the challenge has no error code."""
    response = anonymous.get("/v1/menus/regions", headers={"Authorization": "Basic dXNlcjpwYXNz"})
    body = problem(response, 401)
    assert body["code"] == "unauthorized" and "Bearer" in body["detail"] and "'basic'" in body["detail"]
    assert response.headers["www-authenticate"] == 'Bearer realm="menus"'


def every_pattern(node: object) -> set[str]:
    if isinstance(node, dict):
        found = {node["pattern"]} if isinstance(node.get("pattern"), str) else set()
        return found.union(*(every_pattern(value) for value in node.values()))
    if isinstance(node, list):
        return set().union(*(every_pattern(value) for value in node))
    return set()


def test_every_pattern_a_parameter_of_menus_or_operations_can_refuse_has_words() -> None:
    for name in ("menus.yaml", "operations.yaml"):
        document = yaml.safe_load(spec_path(name).read_text(encoding="utf-8"))
        parameters = [document["components"].get("parameters", {}), document["components"]["schemas"]]
        parameters += [op.get("parameters", []) for item in document["paths"].values() for op in item.values()]
        for pattern in every_pattern(parameters):
            if pattern != '^"[0-9a-f]{32}"$':  # the ETag pattern: a response header, never refused
                assert pattern in PATTERN_WORDS, f"{name}: no words for {pattern}"
                assert not re.search(r"[\^\[\]$]", PATTERN_WORDS[pattern])
