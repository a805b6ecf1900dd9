"""The demo's clients (``serve --demo``, service/cli/demo.py) work with what the served documents pre-fill.

Swagger UI fills the token operation's form with each field's ``example`` from the served identity document
(``grant_type=client_credentials``, ``scope=members:read``); authorized with the demo's application client, that
form gets a token, which reads the directory. The demo's sign-in client is refused that grant
(``unauthorized_client``), which is what a new user met when the demo printed only that one.
"""

from __future__ import annotations

import base64
from typing import Any

from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from service.cli.demo import USER_EMAIL, prepare
from service.settings import Settings


def basic(client_id: str, secret: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()}


def swagger_ui_token_form(http: TestClient) -> dict[str, Any]:
    """The token form as Swagger UI pre-fills it from the served document: every field that has an example."""
    document = http.get("/openapi.json").json()
    content = document["paths"]["/oauth2/token"]["post"]["requestBody"]["content"]
    schema = content["application/x-www-form-urlencoded"]["schema"]
    for key in schema["$ref"].removeprefix("#/").split("/"):
        document = document[key]
    return {name: field["example"] for name, field in document["properties"].items() if "example" in field}


def test_the_demos_application_client_gets_a_token_with_the_token_forms_defaults(
    http: TestClient, engine: Engine, settings: Settings
) -> None:
    demo = prepare(engine, settings)
    form = swagger_ui_token_form(http)
    assert form == {"grant_type": "client_credentials", "scope": "members:read"}

    answer = http.post("/oauth2/token", data=form, headers=basic(demo.service_client_id, demo.service_client_secret))

    assert answer.status_code == 200, answer.text
    token = answer.json()
    assert token["token_type"] == "Bearer" and token["scope"] == "members:read"
    members = http.get("/directory/members", headers={"Authorization": f"Bearer {token['access_token']}"})
    assert members.status_code == 200 and [m["email"] for m in members.json()["data"]] == [USER_EMAIL]
    refused = http.post("/oauth2/token", data=form, headers=basic(demo.client_id, demo.client_secret))
    assert refused.status_code == 400 and refused.json()["error"] == "unauthorized_client"
