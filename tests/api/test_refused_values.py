"""No error repeats what the client sent (docs/security.md): a marker in every parameter, path segment and form
field of every operation of the four documents never comes back in an error's body, whatever its form (problem
details, OAuth JSON, an error page, a console page)."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from tests.support.contract_walk import Operation, operations
from tests.support.token_flows import World

MARKER = "qzvx"  # letters no id, hash or word of the service's answers holds
VALUES = {
    "slug-like": f"{MARKER}-echo",  # passes the patterns: reaches the handlers (an unknown slug, client, grant…)
    "malformed": f"{MARKER.title()} <b>Echo</b> ' \" é",  # breaks every pattern and enum
    "over-long": MARKER * 600,  # over every maxLength but the tokens' (8192)
    "integer-like": f"9{MARKER}",
}
OPERATIONS = list(operations())


def credentials(operation: Operation, world: World, api_key: str) -> dict[str, str]:
    """What gets a request past authentication to its validation and handler (refusals there repeat nothing)."""
    if operation.document == "menus.yaml":
        return {"Authorization": f"Bearer {api_key}"}
    if operation.path in ("/oauth2/token", "/oauth2/introspect", "/oauth2/revoke"):
        return world.planner.basic
    return {}


@pytest.mark.parametrize("operation", OPERATIONS, ids=[operation.name for operation in OPERATIONS])
def test_no_error_repeats_a_value_the_client_sent(
    http: TestClient, world: World, api_key: str, operation: Operation
) -> None:
    refused = 0
    for kind, value in VALUES.items():
        path, query, form = operation.filled(value)
        query["unknown_parameter"] = value
        for headers in ({}, credentials(operation, world, api_key)):
            if operation.method == "post" and form:
                response = http.post(path, params=query, data=form, headers=headers)
            else:
                response = http.request(operation.method.upper(), path, params=query, headers=headers)
            if response.status_code >= 400:
                refused += 1
                assert MARKER not in response.text.lower(), f"{kind} {response.status_code}: {response.text[:2000]}"
    takes_nothing = not operation.parameters and not operation.form and operation.document == "identity.yaml"
    assert refused or takes_nothing, "no request was refused: the walk proves nothing here"  # OAuth ignores unknowns
