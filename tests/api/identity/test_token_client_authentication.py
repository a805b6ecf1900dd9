"""The token endpoint's client authentication (RFC 6749 §2.3.1) and its refusals of malformed requests."""

from __future__ import annotations

import base64
import logging

import pytest
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.organizations import Organization
from identity.accounts.users import User
from tests.support import identity_pages as pages
from tests.support.identity_fixtures import CALLBACK, EMAIL, PASSWORD, Registered, Shared, register
from tests.support.token_flows import assert_invalid_client

# The token endpoint: client authentication.


def test_code_exchange_with_client_secret_basic_answers_tokens(
    browser: TestClient, web: Registered, user: User
) -> None:
    body = pages.tokens(browser, web, pages.signed_in_code(browser, web.id))
    assert set(body) == {"access_token", "token_type", "expires_in", "scope", "id_token"}
    assert body["token_type"] == "Bearer" and body["expires_in"] == 600 and body["scope"] == pages.SCOPE


def test_code_exchange_with_client_secret_post_for_a_client_registered_so(
    browser: TestClient, engine: Engine, org: Organization, user: User
) -> None:
    poster = register(engine, org, name="Poster", auth_method="client_secret_post")
    code = pages.signed_in_code(browser, poster.id)
    pairs = [
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", CALLBACK),
        ("code_verifier", pages.VERIFIER),
        ("client_id", poster.id),
        ("client_secret", poster.secret),
    ]
    response = pages.token_request(browser, pairs)
    assert response.status_code == 200, response.text
    assert pages.verified(browser, response.json()["id_token"], poster.id)["azp"] == poster.id


def test_a_client_secret_post_client_may_use_basic_instead(
    browser: TestClient, engine: Engine, org: Organization, user: User
) -> None:
    """RFC 6749 §2.3.1: the server MUST take HTTP Basic from every client that was issued a password."""
    poster = register(engine, org, name="Poster", auth_method="client_secret_post")
    pairs = [("grant_type", "authorization_code"), ("code", pages.signed_in_code(browser, poster.id))]
    pairs += [("redirect_uri", CALLBACK), ("code_verifier", pages.VERIFIER)]
    response = pages.token_request(browser, pairs, pages.basic(poster))
    assert response.status_code == 200, response.text
    assert pages.verified(browser, response.json()["id_token"], poster.id)["azp"] == poster.id


def test_a_client_secret_post_client_with_a_wrong_secret_over_basic_is_invalid_client(
    visitor: TestClient, shared: Shared
) -> None:
    poster = register(shared.engine, shared.org, name="Poster", auth_method="client_secret_post")
    wrong = Registered(poster.id, poster.secret + "x")
    assert_invalid_client(pages.token_request(visitor, [("grant_type", "client_credentials")], pages.basic(wrong)))


def test_basic_and_client_secret_together_are_refused_for_a_client_secret_post_client_too(
    visitor: TestClient, shared: Shared
) -> None:
    poster = register(shared.engine, shared.org, name="Poster", auth_method="client_secret_post")
    pairs = [("grant_type", "client_credentials"), ("client_id", poster.id), ("client_secret", poster.secret)]
    pages.assert_oauth_error(pages.token_request(visitor, pairs, pages.basic(poster)), 400, "invalid_request")


def test_basic_credentials_are_form_decoded(browser: TestClient, web: Registered, user: User) -> None:
    code = pages.signed_in_code(browser, web.id)

    def encoded(value: str) -> str:
        return "".join(f"%{byte:02X}" for byte in value.encode())

    pairs = [("grant_type", "authorization_code"), ("code", code), ("redirect_uri", CALLBACK)]
    pairs.append(("code_verifier", pages.VERIFIER))
    response = pages.token_request(browser, pairs, pages.basic_raw(encoded(web.id), encoded(web.secret)))
    assert response.status_code == 200, response.text


def test_wrong_client_secret_is_invalid_client_with_a_basic_challenge(visitor: TestClient, shared: Shared) -> None:
    wrong = Registered(shared.web.id, shared.web.secret + "x")
    response = pages.token_request(visitor, [("grant_type", "authorization_code"), ("code", "x")], pages.basic(wrong))
    assert_invalid_client(response)


def test_why_client_authentication_failed_is_logged_never_answered(
    visitor: TestClient, shared: Shared, caplog: pytest.LogCaptureFixture
) -> None:
    wrong = Registered(shared.web.id, shared.web.secret + "x")
    with caplog.at_level(logging.INFO, logger="service.identity"):
        response = pages.token_request(
            visitor, [("grant_type", "authorization_code"), ("code", "x")], pages.basic(wrong)
        )
    assert response.json()["error_description"] == "Client authentication failed."
    assert f"invalid_client: The secret of client {shared.web.id} is wrong." in caplog.messages
    assert "secret of client" not in response.text


@pytest.mark.parametrize(
    "authorization", ["Basic", "Basic !!!", "Basic " + base64.b64encode(b"no-colon").decode()], ids=str
)
def test_malformed_basic_header_is_invalid_client(visitor: TestClient, shared: Shared, authorization: str) -> None:
    response = pages.token_request(visitor, [("grant_type", "client_credentials")], {"Authorization": authorization})
    assert_invalid_client(response)


def test_unknown_client_is_invalid_client(visitor: TestClient, shared: Shared) -> None:
    unknown = Registered("cl_unknown", shared.web.secret)
    response = pages.token_request(visitor, [("grant_type", "authorization_code"), ("code", "x")], pages.basic(unknown))
    assert_invalid_client(response)


def test_client_secret_basic_client_using_client_secret_post_is_invalid_client_400_without_a_challenge(
    visitor: TestClient, shared: Shared
) -> None:
    """RFC 6749 §2.3.1: a client issued a secret may use Basic, never the reverse (the body's secret is NOT
    RECOMMENDED, taken only from clients registered for it). No Authorization header: 400, no challenge (§5.2)."""
    pairs = [
        ("grant_type", "authorization_code"),
        ("code", "x"),
        ("client_id", shared.web.id),
        ("client_secret", shared.web.secret),
    ]
    response = pages.token_request(visitor, pairs)
    assert_invalid_client(response)
    assert response.status_code == 400 and "www-authenticate" not in response.headers


def test_basic_and_client_secret_together_is_invalid_request(visitor: TestClient, shared: Shared) -> None:
    pairs = [("grant_type", "authorization_code"), ("code", "x"), ("redirect_uri", CALLBACK)]
    pairs.append(("client_secret", shared.web.secret))  # both valid: the request still uses two methods
    pages.assert_oauth_error(pages.token_request(visitor, pairs, pages.basic(shared.web)), 400, "invalid_request")


def test_error_description_quoting_the_request_keeps_to_printable_ascii(visitor: TestClient, shared: Shared) -> None:
    """RFC 6749 §5.2: error_description is %x20-21 / %x23-5B / %x5D-7E, whatever the client sent."""
    name = 'gr\u00e4nt"\\\u2028'  # no control character: one is refused before any quoting (test_control_characters)
    response = pages.token_request(
        visitor, [(name, "a"), (name, "b"), ("grant_type", "client_credentials")], pages.basic(shared.web)
    )
    pages.assert_oauth_error(response, 400, "invalid_request")
    description = response.json()["error_description"]
    assert all(0x20 <= ord(ch) <= 0x7E and ch not in '"\\' for ch in description), description
    assert "gr?nt'??" in description


def test_token_request_without_client_authentication_is_invalid_client_400_without_a_challenge(
    visitor: TestClient, shared: Shared
) -> None:
    """RFC 6749 §5.2 allows 400 where the client did not use the Authorization header; a 401 would need a challenge
    (RFC 9110 §15.5.2), and one for a scheme the client never used makes openid-client miss ``invalid_client``."""
    pairs = [("grant_type", "authorization_code"), ("code", "x"), ("client_id", shared.web.id)]
    response = pages.token_request(visitor, pairs)
    assert_invalid_client(response)
    assert response.status_code == 400 and "www-authenticate" not in response.headers


@pytest.mark.parametrize(
    ("pairs", "status", "error"),
    [
        ([("code", "x")], 400, "invalid_request"),
        ([("grant_type", "")], 400, "invalid_request"),
        ([("grant_type", "password"), ("username", EMAIL), ("password", PASSWORD)], 400, "unsupported_grant_type"),
        ([("grant_type", "implicit")], 400, "unsupported_grant_type"),
        ([("grant_type", "authorization_code"), ("code", "x"), ("code", "y")], 400, "invalid_request"),
        ([("grant_type", "authorization_code"), ("grant_type", "authorization_code")], 400, "invalid_request"),
        ([("grant_type", "authorization_code"), ("redirect_uri", CALLBACK)], 400, "invalid_request"),
        ([("grant_type", "client_credentials")], 400, "unauthorized_client"),
    ],
    ids=[
        "missing grant_type",
        "empty grant_type",
        "password grant",
        "implicit grant",
        "repeated code",
        "repeated grant_type",
        "missing code",
        "grant not registered",
    ],
)
def test_malformed_token_request_is_refused_with_its_error_code(
    visitor: TestClient, shared: Shared, pairs: list[tuple[str, str]], status: int, error: str
) -> None:
    pages.assert_oauth_error(pages.token_request(visitor, pairs, pages.basic(shared.web)), status, error)


def test_every_token_response_forbids_caching(visitor: TestClient, shared: Shared) -> None:
    service = register(shared.engine, shared.org, name="Cron", grants=["client_credentials"], scopes=["members:read"])
    answers = [
        pages.token_request(visitor, [("grant_type", "client_credentials")], pages.basic(service)),
        pages.token_request(visitor, [("grant_type", "password")], pages.basic(service)),
        pages.token_request(
            visitor, [("grant_type", "client_credentials")], pages.basic(Registered(service.id, "wrong"))
        ),
    ]
    assert [response.status_code for response in answers] == [200, 400, 401]
    for response in answers:
        assert response.headers["cache-control"] == "no-store" and response.headers["pragma"] == "no-cache"


def test_client_id_in_the_body_must_name_the_basic_client(visitor: TestClient, shared: Shared) -> None:
    pairs = [("grant_type", "authorization_code"), ("code", "x"), ("client_id", "cl_someone_else")]
    response = pages.token_request(visitor, pairs, pages.basic(shared.web))
    assert_invalid_client(response)


def test_token_request_with_a_wrong_media_type_is_refused_without_caching(visitor: TestClient, shared: Shared) -> None:
    response = visitor.post("/oauth2/token", json={"grant_type": "authorization_code"}, headers=pages.basic(shared.web))
    assert response.status_code in (400, 415)
    assert response.json()["error"] == "invalid_request"
    assert response.headers["cache-control"] == "no-store" and response.headers["pragma"] == "no-cache"
