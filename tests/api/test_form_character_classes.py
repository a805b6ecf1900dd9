"""The OAuth forms and the console's CSRF token hold the characters RFC 6749 Appendix A gives them, in the contract
and in the service alike.

RFC 6749 Appendix A limits client ids, secrets, codes and tokens to VSCHAR (%x20-7E) and scope tokens to NQCHAR.
Each such field of the token, introspection, revocation and userinfo forms (``openapi/identity.yaml``), and the
console's ``csrf_token`` (``openapi/console.yaml``), carries that class as its ``pattern``; the service refuses a
value outside it with 400 in the endpoint's own error form, naming the field and the rule, never the value. A
generated client or Schemathesis reading the contract then expects what the service answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jsonschema import Draft4Validator
from starlette.testclient import TestClient

from service.web.contracts import contract
from tests.support.framework_words import framework_words
from tests.support.loops import each

FORM = "application/x-www-form-urlencoded"

VSCHAR = "^[\\x20-\\x7E]*$"
NQCHAR_AND_SPACE = "^[\\x20\\x21\\x23-\\x5B\\x5D-\\x7E]*$"
NO_CONTROL = "^[^\\x00-\\x1F\\x7F-\\x9F]*$"
# The class of each field (RFC 6749 Appendix A; redirect_uri as the authorization request sent it: a registered
# redirect URI may hold letters beyond ASCII, never a control character).
CLASSES = {
    "/oauth2/token": {
        "grant_type": VSCHAR,
        "code": VSCHAR,
        "redirect_uri": NO_CONTROL,
        "code_verifier": VSCHAR,
        "refresh_token": VSCHAR,
        "scope": NQCHAR_AND_SPACE,
        "client_id": VSCHAR,
        "client_secret": VSCHAR,
        "client_assertion_type": VSCHAR,
        "client_assertion": VSCHAR,
    },
    "/oauth2/introspect": {
        "token": VSCHAR,
        "token_type_hint": VSCHAR,
        "client_id": VSCHAR,
        "client_secret": VSCHAR,
        "client_assertion_type": VSCHAR,
        "client_assertion": VSCHAR,
    },
    "/oauth2/revoke": {
        "token": VSCHAR,
        "token_type_hint": VSCHAR,
        "client_id": VSCHAR,
        "client_secret": VSCHAR,
        "client_assertion_type": VSCHAR,
        "client_assertion": VSCHAR,
    },
    "/oauth2/userinfo": {"access_token": VSCHAR},
}
# What the rest of each form holds, so that the field under test is the one refused.
BASE = {
    "/oauth2/token": {"grant_type": "client_credentials"},
    "/oauth2/introspect": {"token": "t"},
    "/oauth2/revoke": {"token": "t"},
    "/oauth2/userinfo": {},
}
# Inside each class and outside: controls (C0, DEL, C1), letters beyond ASCII, and NQCHAR's two exclusions.
SAMPLES = ["a\x00b", "a\x1bb", "a\rb", "a\x7fb", "a\x85b", "caf\u00e9", "\u2603", 'a"b', "a\\b", "a b~"]
FIELDS = [(path, name) for path, fields in CLASSES.items() for name in fields]


def resolved(document: Mapping[str, Any], node: Mapping[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        target: Any = document
        for key in node["$ref"].removeprefix("#/").split("/"):
            target = target[key]
        node = target
    return dict(node)


def form_schema(name: str, path: str) -> dict[str, Any]:
    """The form schema of ``POST path`` in the contract ``name``, its fields' ``$ref`` resolved."""
    document = contract(name).document
    content = contract(name).operation("post", path)["requestBody"]["content"]["application/x-www-form-urlencoded"]
    schema = resolved(document, content["schema"])
    return {**schema, "properties": {k: resolved(document, v) for k, v in schema["properties"].items()}}


def test_every_oauth_form_field_declares_its_rfc_6749_character_class() -> None:
    for path, fields in each(CLASSES.items()):
        properties = form_schema("identity.yaml", path)["properties"]
        assert set(properties) == set(fields), path
        for name, pattern in each(fields.items()):
            assert properties[name].get("pattern") == pattern, (path, name)


def test_the_consoles_csrf_token_is_visible_ascii_in_every_form() -> None:
    """Every form the console takes (each POST of console.yaml) requires its CSRF token, of RFC 6749's VSCHAR."""
    console = contract("console.yaml")
    schemas = console.document["components"]["schemas"]
    forms = {
        f"POST {path}": schemas[item["post"]["requestBody"]["content"][FORM]["schema"]["$ref"].rsplit("/", 1)[-1]]
        for path, item in console.document["paths"].items()
        if "post" in item
    }
    assert len(forms) >= 10, forms.keys()  # the keys, members, invitations, apps and connection pages' forms
    for operation, form in forms.items():
        assert "csrf_token" in form["required"], operation
        assert form["properties"]["csrf_token"]["pattern"] == VSCHAR, operation


def test_the_service_refuses_exactly_what_the_contract_refuses(http: TestClient) -> None:
    """Every field of the four forms, each sample in it (one app for them all: they are refused or anonymous)."""
    for path, name in FIELDS:
        schema = form_schema("identity.yaml", path)["properties"][name]
        for value in SAMPLES:
            accepted = Draft4Validator(schema).is_valid(value)
            response = http.post(path, data={**BASE[path], name: value})
            body = response.json()
            refused_here = response.status_code == 400 and body["error_description"].startswith(f"{name} ")
            assert refused_here is not accepted, (path, name, value, response.status_code, body)
            if not accepted:
                assert body["error"] == "invalid_request", (path, name, body)
                assert body["error_description"].startswith(f"{name} must "), (path, name, body)
                assert value not in response.text and framework_words(response.text) is None, (path, name, body)


def test_a_control_character_in_the_consoles_csrf_token_is_the_consoles_400_page(http: TestClient) -> None:
    for value in ("t\x1bx", "t\u00e9x"):
        response = http.post("/console/keys", data={"csrf_token": value, "name": "ops"})
        assert response.status_code == 400 and response.headers["content-type"].startswith("text/html")
        assert "csrf_token must hold printable ASCII characters only" in response.text
        assert value not in response.text
