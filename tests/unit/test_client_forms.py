"""The token and introspection endpoints' direct path (service/identity_api/client_forms.py), without the app.

The direct path answers only the forms the contract accepts as they are; every other form is left to Connexion,
which answers it in the contract's words (the API tests of each endpoint check those answers)."""

from __future__ import annotations

import pytest
from starlette.responses import Response

from service.identity_api.client_forms import FormRules, ResponseCheck
from service.web.contracts import contract

GOOD = b"grant_type=client_credentials&scope=members%3Aread"


@pytest.fixture(scope="module")
def token_form() -> FormRules:
    return FormRules.of(contract("identity.yaml"), "/oauth2/token")


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
    rules = FormRules.of(contract("identity.yaml"), "/oauth2/introspect")
    assert rules.pairs(b"token=") is None and rules.pairs(b"token=x") == [("token", "x")]


def test_answers_are_checked_against_the_contract_where_responses_are_validated() -> None:
    check = ResponseCheck(contract("identity.yaml"), ["/oauth2/introspect"])
    check.check("/oauth2/introspect", Response(b'{"active": false}', media_type="application/json"))
    with pytest.raises(ValueError, match="declares no JSON answer 418"):
        check.check("/oauth2/introspect", Response(b"{}", status_code=418))
    with pytest.raises(Exception, match="is not of type 'boolean'"):
        check.check("/oauth2/introspect", Response(b'{"active": "yes"}'))
