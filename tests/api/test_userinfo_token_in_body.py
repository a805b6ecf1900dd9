"""UserInfo takes the access token in a POST's form body too (OpenID Connect Core §5.3.1, RFC 6750 §2.2), as
pyoidc sends it by default, and in exactly one way per request (RFC 6750 §2)."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from tests.support.token_flows import ISSUER, World, application_token, user_tokens

FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def ana_s_claims(world: World) -> dict[str, object]:
    """What UserInfo answers for Ana's token of scope ``openid profile email offline_access`` (OpenID Connect
    Core §5.4: profile and email), whichever way the token came."""
    return {
        "sub": world.ana.id,
        "name": world.ana.name,
        "email": world.ana.email,
        "email_verified": False,
        "org_id": world.acme.id,
        "org_name": world.acme.name,
    }


def test_a_post_body_access_token_answers_the_same_claims_as_the_header(http: TestClient, world: World) -> None:
    """RFC 6750 §2.2: the token in the ``access_token`` field of a form-encoded POST body."""
    token = user_tokens(http, world.planner)["access_token"]
    by_header = http.get("/oauth2/userinfo", headers={"Authorization": f"Bearer {token}"})
    by_body = http.post("/oauth2/userinfo", data={"access_token": token})
    assert by_header.status_code == by_body.status_code == 200, by_body.text
    assert by_body.json() == by_header.json() == ana_s_claims(world)
    assert by_body.headers["cache-control"] == "no-store"


def test_other_form_fields_beside_the_body_token_are_ignored(http: TestClient, world: World) -> None:
    token = user_tokens(http, world.planner)["access_token"]
    response = http.post("/oauth2/userinfo", data={"access_token": token, "claims": "x", "schema": "openid"})
    assert response.status_code == 200, response.text
    assert response.json() == ana_s_claims(world)  # the token's claims, nothing asked for by the other fields


def test_a_token_in_both_the_header_and_the_body_is_invalid_request(http: TestClient, world: World) -> None:
    """RFC 6750 §2: clients MUST NOT use more than one method to transmit the token in each request."""
    token = user_tokens(http, world.planner)["access_token"]
    response = http.post("/oauth2/userinfo", data={"access_token": token}, headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"
    assert "one way only" in response.json()["error_description"]
    assert response.headers["www-authenticate"].startswith(f'Bearer realm="{ISSUER}", error="invalid_request"')


def test_a_repeated_body_token_is_invalid_request(http: TestClient, world: World) -> None:
    token = user_tokens(http, world.planner)["access_token"]
    response = http.post("/oauth2/userinfo", content=f"access_token={token}&access_token={token}", headers=FORM)
    assert response.status_code == 400
    assert response.json() == {
        "error": "invalid_request",
        "error_description": "The parameter access_token is repeated.",
    }


def test_an_empty_body_token_is_refused_by_name(http: TestClient) -> None:
    response = http.post("/oauth2/userinfo", content="access_token=", headers=FORM)
    assert response.status_code == 400
    assert response.json() == {
        "error": "invalid_request",
        "error_description": "access_token must be 1 to 8192 characters long",
    }


@pytest.mark.parametrize("token", ["garbage", "a.b.c"])
def test_a_body_token_not_ours_is_invalid_token_with_its_challenge(http: TestClient, token: str) -> None:
    response = http.post("/oauth2/userinfo", data={"access_token": token})
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_token"
    assert 'error="invalid_token"' in response.headers["www-authenticate"]


def test_an_application_token_in_the_body_has_no_user(http: TestClient, world: World) -> None:
    token = application_token(http, world.reporter, scope="members:read").json()["access_token"]
    response = http.post("/oauth2/userinfo", data={"access_token": token})
    assert response.status_code == 401 and response.json()["error"] == "invalid_token"


def test_a_body_of_another_media_type_is_415(http: TestClient, world: World) -> None:
    """RFC 6750 §2.2: the body token is form-encoded; JSON is not a way to send it."""
    token = user_tokens(http, world.planner)["access_token"]
    response = http.post("/oauth2/userinfo", json={"access_token": token})
    assert response.status_code == 415
    assert response.json()["error"] == "invalid_request"
    assert response.headers["cache-control"] == "no-store"


def test_a_post_without_a_body_still_takes_the_header(http: TestClient, world: World) -> None:
    token = user_tokens(http, world.planner)["access_token"]
    response = http.post("/oauth2/userinfo", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.text
