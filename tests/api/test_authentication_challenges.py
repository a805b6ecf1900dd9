"""Every 401 carries a challenge (RFC 9110 §15.5.2: "The server generating a 401 response MUST send a
WWW-Authenticate header field containing at least one challenge applicable to the target resource"), on every
document: the walk below sends each operation no credentials and wrong ones of every kind, and checks each 401."""

from __future__ import annotations

import base64

import pytest
from starlette.testclient import TestClient

from tests.support.contract_walk import Operation, documented_responses, operations
from tests.support.loops import each
from tests.support.token_flows import ISSUER, World

OPERATIONS = list(operations())
WRONG_BASIC = {"Authorization": "Basic " + base64.b64encode(b"cli_0000000000000000:wrong").decode()}
WRONG_BEARER = {"Authorization": "Bearer rmk_wrong"}


def attempts(operation: Operation, world: World) -> list[tuple[str, dict[str, str], dict[str, str]]]:
    """(what is tried, headers, form) for ``operation``: none, a wrong header of each scheme, and in a form the
    body methods of client authentication with a wrong secret and a bad assertion."""
    tries = [("nothing", {}, {}), ("wrong Basic", WRONG_BASIC, {}), ("wrong Bearer", WRONG_BEARER, {})]
    if operation.form is not None and "client_secret" in operation.form.get("properties", {}):
        required = {"grant_type": "client_credentials", "token": "t"}  # the client endpoints' required fields
        tries = [(tried, headers, required) for tried, headers, _ in tries]
        base = {**required, "client_id": world.planner.id}
        tries += [
            ("client_secret_post, wrong secret", {}, {**base, "client_secret": "wrong"}),
            ("client_secret_post, no secret", {}, base),
            (
                "bad client assertion",
                {},
                {
                    **base,
                    "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                    "client_assertion": "eyJhbGciOiJSUzI1NiJ9.e30.c2ln",
                },
            ),
        ]
    return tries


@pytest.mark.parametrize("operation", OPERATIONS, ids=[operation.name for operation in OPERATIONS])
def test_every_401_carries_a_challenge(http: TestClient, world: World, operation: Operation) -> None:
    path, _, _ = operation.filled("x")  # no query: an invalid parameter is refused before authentication
    for tried, headers, form in each(attempts(operation, world)):
        if operation.method == "post":
            response = http.post(path, data=form or {"x": "y"}, headers=headers)
        else:
            response = http.request(operation.method.upper(), path, headers=headers)
        if response.status_code == 401:
            assert response.headers.get("www-authenticate"), f"{tried}: {response.text}"
            assert "401" in operation.statuses(), f"{tried}: an undocumented 401"


@pytest.mark.parametrize(
    ("path", "form"),
    [
        ("/oauth2/token", {"grant_type": "client_credentials"}),
        ("/oauth2/introspect", {"token": "t"}),
        ("/oauth2/revoke", {"token": "t"}),
    ],
)
def test_invalid_client_is_401_with_a_basic_challenge_over_the_header_and_400_without_one_otherwise(
    http: TestClient, world: World, path: str, form: dict[str, str]
) -> None:
    """RFC 6749 §5.2: 401 with the challenge of the scheme the endpoint takes in the Authorization header when the
    client used that header (any scheme), and 400 without a challenge (§5.2 allows it) when it did not: a
    challenge for a scheme the client never used makes openid-client raise instead of reading invalid_client."""
    challenge = f'Basic realm="{ISSUER}", charset="UTF-8"'
    for tried, headers, body in each(
        attempts(Operation("identity.yaml", "post", path, form={"properties": {"client_secret": {}}}), world)
    ):
        response = http.post(path, data={**form, **body}, headers=headers)
        assert response.json()["error"] == "invalid_client", tried
        if headers:
            assert response.status_code == 401, f"{tried}: {response.text}"
            assert response.headers["www-authenticate"] == challenge, tried
        else:
            assert response.status_code == 400, f"{tried}: {response.text}"
            assert "www-authenticate" not in response.headers, tried


def test_the_walk_meets_the_401_of_every_protected_operation(http: TestClient, world: World) -> None:
    unauthorized = set()
    for operation in OPERATIONS:
        path, _, _ = operation.filled("x")
        for _, headers, form in attempts(operation, world):
            response = http.request(operation.method.upper(), path, data=form or None, headers=headers)
            if response.status_code == 401:
                unauthorized.add(operation.name)
    documented = {operation.name for operation in OPERATIONS if "401" in operation.statuses()}
    assert unauthorized == documented


def test_every_documented_401_declares_its_challenge_required() -> None:
    checked = 0
    for document, where, response in documented_responses():
        if where.endswith(" 401"):
            checked += 1
            header = response["headers"].get("WWW-Authenticate")
            assert header and header.get("required") is True, f"{document} {where}"
    assert checked >= 10
