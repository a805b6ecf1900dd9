"""The form rules derived from the contract (service/web/fast_forms.py), without the app.

They accept only the forms the contract accepts as they are; every other form is left to Connexion's parser and
the contract's rules, which answer it in the contract's words (tests/api/test_form_parsers.py compares both ways
on generated bodies; the API tests of each endpoint check the answers)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from connexion.json_schema import resolve_refs

from service.web.contracts import contract
from service.web.fast_forms import FormRules

GOOD = b"grant_type=client_credentials&scope=members%3Aread"


def form_schema(template: str) -> dict[str, Any]:
    """The operation's form schema with its references resolved and the document's components beside it, as
    Connexion hands it to its validators (``OpenAPIOperation.with_definitions``)."""
    document = resolve_refs(copy.deepcopy(dict(contract("identity.yaml").document)))
    schema: dict[str, Any] = document["paths"][template]["post"]["requestBody"]["content"][
        "application/x-www-form-urlencoded"
    ]["schema"]
    return {**schema, "components": document["components"]}


def rules_of(template: str, *, strict: bool = False) -> FormRules:
    rules = FormRules.of(form_schema(template), strict=strict)
    assert rules is not None
    return rules


@pytest.fixture(scope="module")
def token_form() -> FormRules:
    return rules_of("/oauth2/token")


def test_a_plain_form_within_the_contracts_bounds_is_read_as_starlette_reads_it(token_form: FormRules) -> None:
    assert token_form.pairs(GOOD) == [("grant_type", "client_credentials"), ("scope", "members:read")]
    assert token_form.pairs(b"grant_type=a+b&x=%E2%82%AC") == [("grant_type", "a b"), ("x", "€")]


@pytest.mark.parametrize(
    "body",
    [
        GOOD + b"&grant_type=client_credentials",  # repeated: the domain's invalid_request, by Connexion's way
        b"scope=members%3Aread",  # the required grant_type is missing
        b"grant_type=" + b"a" * 2049,  # over the contract's maxLength
        GOOD + b"&x=%00",  # a control character
        GOOD + b"&client_id=caf%C3%A9",  # a declared field outside its pattern (RFC 6749 Appendix A: VSCHAR)
        b"grant_type=client_credentials&scope=members%22read",  # a scope outside NQCHAR
        GOOD + b"&",  # an empty pair
        GOOD + b"&flag",  # a name without a value
        GOOD + b"&=x",  # a value without a name
        GOOD + b"&a=b=c",  # an unescaped "="
    ],
)
def test_any_other_form_is_left_to_connexion(token_form: FormRules, body: bytes) -> None:
    assert token_form.pairs(body) is None


def test_introspection_refuses_an_empty_token_as_its_contract_does() -> None:
    rules = rules_of("/oauth2/introspect")
    assert rules.pairs(b"token=") is None and rules.pairs(b"token=x") == [("token", "x")]


def test_a_strict_form_leaves_an_undeclared_field_to_connexion() -> None:
    rules = rules_of("/oauth2/introspect", strict=True)
    assert rules.pairs(b"token=x") == [("token", "x")]
    assert rules.pairs(b"token=x&extra=1") is None


def test_a_schema_with_rules_other_than_bounded_strings_has_no_form_rules() -> None:
    assert FormRules.of({"type": "object", "properties": {"n": {"type": "integer"}}}, strict=False) is None
    assert (
        FormRules.of({"type": "object", "properties": {"s": {"type": "string", "enum": ["a"]}}}, strict=False) is None
    )
    assert FormRules.of({"type": "object", "additionalProperties": False}, strict=False) is None


def test_the_documents_components_connexion_puts_beside_a_form_schema_are_no_rule_of_the_form() -> None:
    schema = form_schema("/oauth2/introspect")
    assert "components" in schema
    rules = FormRules.of(schema, strict=False)
    assert rules is not None and rules.pairs(b"token=x") == [("token", "x")]
