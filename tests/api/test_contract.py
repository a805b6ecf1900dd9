"""The contract itself: valid OpenAPI 3.0.3, complete, and served as written."""

from __future__ import annotations

import importlib

import pytest
from openapi_spec_validator import validate
from starlette.testclient import TestClient

from data.yaml_text import safe_load
from service.web.contracts import spec_path
from tests.support.loops import each


@pytest.fixture(scope="module")
def menus() -> dict:
    return safe_load(spec_path("menus.yaml").read_text(encoding="utf-8"))


def operations(document: dict) -> list[tuple[str, str, dict]]:
    return [(path, method, op) for path, item in document["paths"].items() for method, op in item.items()]


def test_menus_document_is_valid_openapi_3_0(menus: dict) -> None:
    validate(menus)
    assert menus["openapi"] == "3.0.3"


def test_every_operation_documents_the_errors_it_can_answer(menus: dict) -> None:
    for path, method, op in each(operations(menus)):
        expected = {"200", "304", "400", "401", "405", "413", "429", "500", "503"}
        if "{" in path or path.endswith("/random"):
            expected.add("404")
        if path.endswith("/random"):
            expected.remove("304")  # no-store, no ETag: never a 304
        assert set(op["responses"]) == expected, (method, path)


def test_every_operation_id_resolves_to_a_handler(menus: dict) -> None:
    for _, _, op in each(operations(menus)):
        module, function = op["operationId"].rsplit(".", 1)
        assert callable(getattr(importlib.import_module(f"handlers.{module}"), function))


def test_list_responses_link_to_single_items(menus: dict) -> None:
    links = {path: set(op["responses"]["200"].get("links", {})) for path, _, op in operations(menus)}
    assert "GetRegionBySlug" in links["/menus/regions"]
    assert {"GetDishBySlug", "NextPage"} <= links["/menus/dishes"]


def test_api_key_security_applies_to_every_operation(menus: dict) -> None:
    assert menus["security"] == [{"apiKey": []}]
    assert menus["components"]["securitySchemes"]["apiKey"] == {
        **menus["components"]["securitySchemes"]["apiKey"],
        "type": "http",
        "scheme": "bearer",
    }
    assert all("security" not in op for _, _, op in operations(menus))


def test_served_document_is_the_written_one(anonymous: TestClient, menus: dict) -> None:
    served = anonymous.get("/v1/openapi.json").json()
    assert served["paths"].keys() == menus["paths"].keys()
    assert served["info"] == menus["info"]
    assert [op["operationId"] for _, _, op in operations(served)] == [
        op["operationId"] for _, _, op in operations(menus)
    ]


def test_identity_document_is_valid_openapi_3_0() -> None:
    identity = safe_load(spec_path("identity.yaml").read_text(encoding="utf-8"))
    validate(identity)
    assert identity["openapi"] == "3.0.3"
    paths = set(identity["paths"])
    assert {
        "/.well-known/openid-configuration", "/jwks", "/oauth2/authorize", "/oauth2/token", "/oauth2/userinfo",
        "/oauth2/introspect", "/oauth2/revoke", "/oauth2/end-session", "/directory/members",
    } <= paths  # fmt: skip


def test_every_identity_operation_that_takes_a_body_documents_its_cap_and_its_time_bound() -> None:
    """413 past the cap, 408 when the body is too slow (service/web/body_arrival.py), in the operation's form."""
    identity = safe_load(spec_path("identity.yaml").read_text(encoding="utf-8"))
    with_bodies = [(path, method, op) for path, method, op in operations(identity) if "requestBody" in op]
    for path, method, op in each(with_bodies):
        assert {"408", "413"} <= set(op["responses"]), (method, path)


def test_console_document_is_valid_openapi_3_0_and_served_as_written(anonymous: TestClient) -> None:
    console = safe_load(spec_path("console.yaml").read_text(encoding="utf-8"))
    validate(console)
    assert console["openapi"] == "3.0.3"
    for _, _, op in operations(console):
        if isinstance(op, dict) and "operationId" in op:
            module, function = op["operationId"].rsplit(".", 1)
            assert callable(getattr(importlib.import_module(f"handlers.{module}"), function))
            assert "400" in op["responses"] and "500" in op["responses"]
            if "requestBody" in op:  # forms: CSRF, members, oversized and slow bodies are documented
                assert {"403", "408", "413", "415"} <= set(op["responses"]), op["operationId"]
    served = anonymous.get("/console/openapi.json").json()
    assert served["paths"].keys() == console["paths"].keys() and served["info"] == console["info"]
